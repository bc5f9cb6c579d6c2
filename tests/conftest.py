"""Suite-wide pytest options.

``--cpu-durations=N`` lists the N tests that cost the most CPU time (setup, call and teardown;
this process's threads plus the subprocesses it waited for). On a shared machine wall times
(``--durations``) follow the load of others; CPU time is what the CI budget is spent on.
"""

from __future__ import annotations

import resource
import time

import pytest

_KEY = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="list the N tests with the most CPU time (this process and its subprocesses)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_KEY] = []


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    start = _cpu_seconds()
    yield
    item.config.stash[_KEY].append((_cpu_seconds() - start, item.nodeid))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    n = config.getoption("--cpu-durations")
    if n is None:
        return
    rows = sorted(config.stash[_KEY], reverse=True)
    if not rows:
        terminalreporter.write_line("--cpu-durations: no test ran in this process; under xdist, run with -n 0")
        return
    terminalreporter.write_sep("=", f"{min(n, len(rows))} largest CPU times "
                                    f"(of {sum(s for s, _ in rows):.1f} s CPU in {len(rows)} tests)")
    for seconds, nodeid in rows[:n]:
        terminalreporter.write_line(f"{seconds:8.2f}s  {nodeid}")
