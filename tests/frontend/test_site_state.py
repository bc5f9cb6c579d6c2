"""One owner of per-site state (mixjit.plan): a site's plan, its plan-table row, its backend
choice and its device route change together under one lock, whatever order threads write them
in; the backend choice itself is a pure policy (mixjit.backend_policy.choose)."""

from __future__ import annotations

import threading

import numpy as np

from mixjit import backend_policy, backends, entry
from mixjit.plan import SitePlan, get_plan, set_plan
from mixjit.runtime.schemes.base import get_scheme


class _Device:
    name = "fake"

    def status(self):
        return True, ""

    def why_not(self, scheme, config, dtype=np.float32):
        if np.dtype(dtype) != np.float32:
            return f"no {np.dtype(dtype)} kernel"
        return "" if scheme == "mixpert" else f"no {scheme} kernel"


def _mixpert() -> SitePlan:
    label = get_scheme("mixpert").default_config(np.float32).label
    return SitePlan("mixpert", label, "mixpert")


def test_row_choice_and_route_agree_after_concurrent_plan_and_backend_writes():
    site = entry.new_site()
    plans = [_mixpert(), SitePlan("native", get_scheme("native").default_config(np.float32).label, "native")]
    device = _Device()
    with backends.use_device(device):
        set_plan(site, plans[0], np.float32)
        code = backends.install_device_executor()

        def flip_backend():
            for i in range(300):
                backends.set_backend(site, ("auto", "cpu")[i % 2])

        def flip_plan():
            for i in range(300):
                set_plan(site, plans[i % 2])

        workers = [threading.Thread(target=flip_backend), threading.Thread(target=flip_plan)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        for backend in ("auto", "cpu", "auto"):
            backends.set_backend(site, backend)
            choice, row0 = backends.backend_of(site), int(entry.plan_row(site)[0])
            on_device = get_plan(site).scheme == "mixpert" and backend == "auto"
            assert (choice.runs == "fake") == on_device == (row0 == code)
    # leaving use_device routes the site again: no row names the device executor any more
    assert int(entry.plan_row(site)[0]) != code


def test_the_policy_is_a_function_of_request_plan_and_device():
    plan = _mixpert()
    code = entry.EXECUTORS["mixpert"]
    saved = backend_policy.swap_device(_Device())
    try:
        assert backend_policy.choose("cpu", plan, code)[0].runs == "cpu"
        choice, dev = backend_policy.choose("auto", plan, code)
        assert choice.runs == "fake" and dev is not None
        # the site's dtype reaches the device: a float64 site of a float32-only device stays on the CPU
        assert backend_policy.choose("auto", plan, code, np.float64)[0].reason == "no float64 kernel"
        native = SitePlan("native", "accumulate=blas", "native")
        assert "no native kernel" in backend_policy.choose("auto", native, entry.EXEC_NATIVE)[0].reason
    finally:
        backend_policy.swap_device(saved)
