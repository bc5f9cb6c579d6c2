"""lit configuration for the FileCheck golden tests (run by tests/filecheck/test_filecheck_lit.py).

``mixopt`` and ``filecheck`` run under the Python interpreter that runs lit (the
project's venv), so the tests need no PATH setup and no installed scripts.
"""

import os
import shlex
import sys

import lit.formats

config.name = "mixjit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mix"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs"]

_python = shlex.quote(sys.executable)
# Whole-word replacement, so file names that contain the word are left alone.
config.substitutions.append((r"(?<![\w/.-])mixopt(?![\w/.-])", f"{_python} -m mixjit.mixopt"))
config.substitutions.append((r"(?<![\w/.-])filecheck(?![\w/.-])", f"{_python} -m filecheck"))
