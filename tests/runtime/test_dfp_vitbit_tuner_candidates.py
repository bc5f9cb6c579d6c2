"""The tuner's candidate space holds every dfp and vitbit config (they declare compiled
executors), with modeled times from their ``work``: dfp at 8 bits is modeled about as fast
as int8 (2-byte exponents instead of 8-byte scales), at 16 bits slower (four INT8 products)."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme
from mixjit.tuning.profiling import site_candidates


def test_dfp_and_vitbit_configs_are_tuner_candidates():
    cands = site_candidates(np.dtype(np.float32), None, [(512, 512, 512, 3)], "a100")
    by_label = {(c.scheme, c.config): c for c in cands}
    for name in ("dfp", "vitbit"):
        for cfg in get_scheme(name).configs(np.float32):
            assert (name, cfg.label) in by_label, (name, cfg.label)
    int8 = by_label[("int8", "scale=row-col")].time
    assert by_label[("dfp", "bits=8,block=1,out=fp32")].time == pytest.approx(int8, rel=1e-3)  # exponents vs scales
    assert by_label[("dfp", "bits=16,block=1,out=fp32")].time > int8
    assert by_label[("dfp", "bits=16,block=1,out=fp32")].products == 4
