"""The launch path: where no device exists it says why and runs the CPU executor; on a GPU
(tests marked ``gpu``) the kernels are bit-equal to the CPU executor."""

from __future__ import annotations

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.launch import device_status, mixpert_gemm

HAVE_DEVICE, WHY = device_status()


@pytest.mark.skipif(HAVE_DEVICE, reason="a CUDA device is present: the GPU tests cover it")
def test_without_a_device_the_cpu_executor_runs_and_says_why():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 40)).astype(np.float32), rng.standard_normal((40, 12)).astype(np.float32)
    c, where = mixpert_gemm(a, b, "level=IV")
    assert where.startswith("cpu: ") and len(where) > 10
    want = mixjit.gemm(a, b, scheme="mixpert", config="level=IV")
    assert c.tobytes() == want.tobytes()


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_DEVICE, reason=f"no CUDA device: {WHY}")
@pytest.mark.parametrize("config", ["level=IV", "level=I", "level=full,align=row"])
@pytest.mark.parametrize("shape", [(64, 32, 32), (37, 70, 45), (513, 1000, 257)])
def test_gpu_kernels_bit_equal_to_the_cpu_executor(config, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c, where = mixpert_gemm(a, b, config)
    assert where == "cuda"
    want = mixjit.gemm(a, b, scheme="mixpert", config=config)
    assert c.tobytes() == want.tobytes()


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_DEVICE, reason=f"no CUDA device: {WHY}")
def test_gpu_hands_nonfinite_inputs_to_the_cpu():
    a = np.ones((16, 32), np.float32)
    a[0, 0] = np.nan
    c, where = mixpert_gemm(a, np.ones((32, 8), np.float32))
    assert where.startswith("cpu: kernel status") and np.isnan(c[0]).all() and not np.isnan(c[1:]).any()
