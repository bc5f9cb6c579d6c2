"""mixjit: run the GEMMs of Numba code as emulated / split-precision GEMMs.

Entry points: ``mixjit.gemm`` (one GEMM under a scheme), the ``mixopt`` command
(passes over ``.mix`` IR dumps) and, later, the ``@mixjit`` decorator.
"""

__version__ = "0.1.0"

from mixjit.gemm import gemm  # noqa: E402

__all__ = ["gemm", "__version__"]
