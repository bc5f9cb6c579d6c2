"""The launch path. Without a device (every machine here): it says why and runs the CPU
executor, the launcher registry and the buffer pool work, and nothing imports cuda-bindings.
On a GPU (tests marked ``gpu``, skipped with the probe's reason elsewhere): the exact kernels
(mixpert, ozaki2) are bit-equal to the CPU executor on random, adversarial and ragged shapes; the
kernels with a tensor-core FP32 accumulator (tf32x3, bf16xN, split's FP16 part) are within
docs/cuda.md's bound of it (bit-equal where split's FP16 part is empty); streams and buffer reuse
work, and a ``@mixjit`` site runs on the device."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.device import BufferPool, probe
from mixjit.runtime.cuda.launch import (
    CudaBackend,
    KernelLauncher,
    cpu_gemm,
    cuda_gemm,
    kernel_schemes,
    launcher_for,
    register_launcher,
)
from mixjit.runtime.mixpert.cuda.launchers import MixpertLauncher
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.split.cuda.desc import parse_split_label

STATUS = probe()


def on_gpu(test):
    """Mark ``test`` ``gpu`` and skip it, with the probe's reason, where no device can run kernels."""
    return pytest.mark.gpu(pytest.mark.skipif(not STATUS.available, reason=f"no CUDA device: {STATUS.reason}")(test))


# -- no device --------------------------------------------------------------------------------

@pytest.mark.skipif(STATUS.available, reason="a CUDA device is present: the GPU tests cover it")
def test_without_a_device_the_cpu_executor_runs_and_says_why():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 40)).astype(np.float32), rng.standard_normal((40, 12)).astype(np.float32)
    c, where = cuda_gemm(a, b, "mixpert", "level=IV")
    assert where == f"cpu: {STATUS.reason}" and "libcuda" in where
    assert c.tobytes() == mixjit.gemm(a, b, scheme="mixpert", config="level=IV").tobytes()


def test_a_scheme_without_kernels_or_a_config_without_one_says_why():
    backend = CudaBackend()
    assert backend.why_not("native", "") == ("scheme 'native' has no CUDA kernel (schemes with kernels: bf16xn, "
                                             "complex, dfp, fp16x2, int8, mixpert, mixpert-fp64, ozaki2, split, tf32x3, vitbit)")
    assert "tile k=48 is not a multiple of the MMA k=32" in backend.why_not("mixpert", "level=IV,tile=16x48x8")
    assert "mode=accurate: the accurate mode's bound GEMM is not on the GPU" in backend.why_not("ozaki2",
                                                                                                 "mode=accurate")
    assert "bad config part 'encoding=sf16'" in backend.why_not("split", "encoding=sf16")
    assert "int32 operands" in backend.why_not("tf32x3", "products=3", np.int32)
    assert all(backend.why_not(s, c) == "" for s, c in [("mixpert", "level=IV"), ("ozaki2", "moduli=12"),
                                                       ("split", "fp16=0"), ("vitbit", "bits=8,target=h100")])
    inexact = CudaBackend(inexact=True)
    for s, c in [("tf32x3", "products=1"), ("bf16xn", "products=6"), ("split", "fp16=auto")]:
        assert "kernels are not bit-equal to the CPU executor" in backend.why_not(s, c)
        assert inexact.why_not(s, c) == ""


def test_operands_that_are_not_a_gemm_are_refused():
    with pytest.raises(ValueError, match="must be m x k and k x n matrices of one dtype"):
        cuda_gemm(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


def test_importing_and_running_a_cpu_site_does_not_import_cuda_bindings():
    code = (
        "import sys, numpy as np, mixjit\n"
        "f = mixjit.mixjit(schemes=('native',), tune='never')(lambda a: a @ a)\n"
        "f(np.ones((3, 3)))\n"
        "print(f.sites[0].backend.runs, 'cuda.bindings' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if STATUS.available:
        assert out[0] == "cpu"  # native has no kernel
    else:
        assert out == ["cpu", "False"]


# -- the launcher registry --------------------------------------------------------------------

def test_each_scheme_plugs_in_one_launcher():
    assert "mixpert" in kernel_schemes() and isinstance(launcher_for("mixpert"), MixpertLauncher)
    assert launcher_for("native") is None
    with pytest.raises(ValueError, match="scheme 'mixpert' has a kernel launcher already"):
        register_launcher(MixpertLauncher())

    class Incomplete(KernelLauncher):
        scheme = "incomplete"

    with pytest.raises(TypeError):
        Incomplete()


def test_every_launcher_names_a_registered_scheme():
    for name in kernel_schemes():
        get_scheme(name)


# -- the buffer pool (its device calls replaced by a counter) ---------------------------------

class _Memory:
    def __init__(self, fail_after: int | None = None) -> None:
        self.next, self.live, self.fail_after = 0x1000, {}, fail_after

    def allocate(self, nbytes: int) -> int:
        if self.fail_after is not None and sum(self.live.values()) + nbytes > self.fail_after:
            raise RuntimeError("cuda: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
        self.next += nbytes
        self.live[self.next] = nbytes
        return self.next

    def free(self, ptr: int) -> None:
        del self.live[ptr]


def test_the_pool_reuses_buffers_of_a_size_class():
    mem = _Memory()
    pool = BufferPool(mem.allocate, mem.free)
    assert [BufferPool.capacity_for(n) for n in (0, 1, 256, 257, 1000, 1024, 1025)] == [256, 256, 256, 512, 1024,
                                                                                      1024, 2048]
    first = pool.take(1000)
    pool.give(first)
    again = pool.take(900)  # the same size class: the same memory, no allocation
    assert (again.ptr, again.nbytes, again.capacity, pool.allocations) == (first.ptr, 900, 1024, 1)
    other = pool.take(1000)  # the cached one is lent out: a new allocation
    assert other.ptr != again.ptr and pool.allocations == 2


def test_the_pool_keeps_at_most_keep_bytes_and_frees_its_cache_when_memory_runs_out():
    mem = _Memory(fail_after=4096)
    pool = BufferPool(mem.allocate, mem.free, keep_bytes=2048)
    bufs = [pool.take(1024) for _ in range(3)]
    for buf in bufs:
        pool.give(buf)
    assert pool.cached_bytes == 2048 and len(mem.live) == 2  # the third was freed
    big = pool.take(4096)  # fails while 2048 bytes are cached, succeeds after the trim
    assert big.capacity == 4096 and pool.cached_bytes == 0 and list(mem.live.values()) == [4096]
    pool.give(big)
    pool.trim()
    assert mem.live == {}


# -- on a GPU ---------------------------------------------------------------------------------

def _supported_configs(scheme: str, dtype: np.dtype) -> list[str]:
    s = get_scheme(scheme)
    return [c.label for c in s.configs(dtype) if not launcher_for(scheme).why_not(c.label, dtype, STATUS.target)]


def _inputs(kind: str, m: int, k: int, n: int, dtype: np.dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.uniform(-1, 1, (m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    if kind == "wide":  # 40 binades: most tiles fall back (docs/numerics.md step 4), the kernels hand back
        return ((rng.choice([-1.0, 1.0], (m, k)) * np.exp2(rng.uniform(-20, 20, (m, k)))).astype(dtype),
                rng.standard_normal((k, n)).astype(dtype))
    # adversarial, inside the main path: exact powers of two over 8 binades (alignment shifts up to
    # 7 < the fallback's 8 bits), full 21-bit significands, a zero row and column, exact cancellation
    a = (rng.choice([-1.0, 1.0], (m, k)) * np.exp2(rng.integers(-4, 4, (m, k)))).astype(dtype)
    b = (rng.choice([-1.0, 1.0], (k, n)) * (1 + rng.integers(0, 2**20, (k, n)) * 2.0**-20)).astype(dtype)
    a[0, :], b[:, -1] = 0, 0
    a[-1, :] = a[-1, 0]
    b[:, 0] = np.where(np.arange(k) % 2, 1.0, -1.0)
    return a, b


SHAPES = [(64, 32, 32), (37, 70, 45), (1, 1, 1), (17, 33, 9), (513, 1000, 257), (4096, 64, 16)]
#: kernels whose arithmetic is integer-exact: bit-equal to the CPU executor
EXACT = ("dfp", "int8", "mixpert", "mixpert-fp64", "ozaki2", "vitbit")
#: kernels with the tensor core's FP32 accumulator (not bit-specified): within docs/cuda.md's bound
ACCUMULATED = ("tf32x3", "bf16xn", "fp16x2", "split")
#: complex GEMMs composed of the kernels above: bit-equal where the real kernels are (tests/gpu/test_gpu_complex.py)
COMPOSED = ("complex",)
CASES = [(scheme, dt) for scheme in EXACT for dt in ("float32", "float64")]


def test_every_kernel_scheme_is_tested_for_bits_or_for_the_bound():
    assert sorted(EXACT + ACCUMULATED + COMPOSED) == sorted(kernel_schemes())


@pytest.mark.parametrize("scheme,dtype", CASES)
@pytest.mark.parametrize("kind", ["random", "adversarial", "wide"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@on_gpu
def test_gpu_kernels_bit_equal_to_the_cpu_executor(scheme, dtype, kind, shape):
    dt = np.dtype(dtype)
    configs = _supported_configs(scheme, dt)
    if not configs:
        pytest.skip(f"{scheme} has no kernel for {dt} operands")
    for config in configs:
        a, b = _inputs(kind, *shape, dt, seed=sum(shape))
        c, where = cuda_gemm(a, b, scheme, config)
        assert c.tobytes() == cpu_gemm(scheme, a, b, config).tobytes(), (config, where)
        if kind == "wide":
            assert where == "cuda" or where.startswith("cpu: kernel status"), (config, where)
        else:
            assert where == "cuda", (config, where)


def accumulator_bound(scheme: str, config: str, a: np.ndarray, b: np.ndarray, want: np.ndarray) -> np.ndarray:
    """docs/cuda.md: |C_gpu - C_exec| <= ulp(C_exec) (2 ulp for fp16x2) + r * 2^-23 * sum_k sum_pairs |a_p b_q|, r the FP32
    accumulator roundings per element. sum_pairs |a_p b_q| <= (sum_p |a_p|)(sum_q |b_q|), and the parts
    of a value of ``bits`` significant bits sum in magnitude to at most |x| (1 + 2^(2 - bits))."""
    from mixjit.runtime.cuda.registry import kernel_desc

    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    a64, b64 = np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))
    if scheme == "split":  # the FP16 part's columns only: m16n8k16 MMAs over them
        from mixjit.runtime.split.cuda.fragments import host_plan

        cols = host_plan(a, b, np.array(get_scheme("split").parse_config(config).words(), np.int64)).cols_f
        r, bits, mag = -(-cols.size // 16), 11, a64[:, cols] @ b64[cols]
    else:
        desc = kernel_desc(scheme, config)
        r, bits, mag = -(-a.shape[1] // desc.fmt.mma[2]) * len(desc.pairs), desc.fmt.bits, a64 @ b64
    extra = ulp if scheme == "fp16x2" else 0.0  # its second accumulator's add and the rescaling's rounding
    return ulp + extra + r * 2.0**-23 * (1 + 2.0 ** (2 - bits)) ** 2 * mag


@pytest.mark.parametrize("scheme", ACCUMULATED)
@pytest.mark.parametrize("kind", ["random", "adversarial"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@on_gpu
def test_gpu_fp32_accumulator_kernels_within_the_documented_bound(scheme, kind, shape):
    dt = np.dtype(np.float32)
    for config in _supported_configs(scheme, dt):
        a, b = _inputs(kind, *shape, dt, seed=sum(shape))
        c, where = cuda_gemm(a, b, scheme, config, inexact=True)
        want = cpu_gemm(scheme, a, b, config)
        assert where == "cuda", (config, where)
        if scheme == "split" and parse_split_label(config)["fp16"] != "auto" and \
                float(parse_split_label(config)["fp16"]) == 0.0:
            assert c.tobytes() == want.tobytes(), config  # no FP16 part: exact, as the executor
        err = np.abs(c.astype(np.float64) - want)
        assert (err <= accumulator_bound(scheme, config, a, b, want)).all(), (config, float(err.max()))


@pytest.mark.parametrize("scheme,config", [("mixpert", "level=IV"), ("tf32x3", "products=3"),
                                           ("bf16xn", "products=9"), ("ozaki2", "moduli=8"), ("split", "fp16=0.25")])
@on_gpu
def test_gpu_hands_nonfinite_inputs_to_the_cpu(scheme, config):
    a = np.ones((16, 32), np.float32)
    a[0, 0] = np.nan
    c, where = cuda_gemm(a, np.ones((32, 8), np.float32), scheme, config, inexact=True)
    assert where.startswith("cpu: kernel status") and np.isnan(c[0]).all() and not np.isnan(c[1:]).any()


@on_gpu
def test_gpu_reuses_buffers_and_overlaps_launches_on_streams():
    from mixjit.runtime.cuda.device import device

    dev = device()
    launcher = launcher_for("mixpert")
    rng = np.random.default_rng(5)
    pairs = [(rng.standard_normal((300, 200)).astype(np.float32), rng.standard_normal((200, 100)).astype(np.float32))
             for _ in range(2)]
    launcher.run(dev, *pairs[0], "level=IV")
    allocated = dev.pool.allocations
    launcher.run(dev, *pairs[1], "level=IV")
    assert dev.pool.allocations == allocated  # the same shapes: every buffer came from the pool
    launches = [launcher.prepare(dev, a, b, "level=IV") for a, b in pairs]
    try:
        dev.concurrently([launch.enqueue for launch in launches])
        got = [launch.finish() for launch in launches]
    finally:
        for launch in launches:
            launch.release()
    for (a, b), c in zip(pairs, got):
        assert c.tobytes() == cpu_gemm("mixpert", a, b, "level=IV").tobytes()


@on_gpu
def test_gpu_a_mixjit_site_runs_on_the_device_without_recompiling():
    from mixjit import backends

    @mixjit.mixjit(schemes=("mixpert",), tune="never", backend="cuda")
    def f(a, b, c):
        c -= a @ b
        return a.T @ c

    rng = np.random.default_rng(6)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((70, 50), (50, 30), (70, 30)))
    got = f(a, b, c.copy())
    assert [s.backend.runs for s in f.sites] == ["cuda", "cuda"]
    assert all(backends.device_calls(s.id) == {"cuda": 1} for s in f.sites)
    for s in f.sites:
        backends.set_backend(s.id, "cpu")
    assert f(a, b, c.copy()).tobytes() == got.tobytes() and len(f.overloads) == 1


def test_which_architectures_run_the_kernels():
    from mixjit.runtime.cuda.device import DeviceStatus, classify

    assert "need sm_80 or newer" in classify("T4", 7, 5).reason and not classify("T4", 7, 5).available
    assert [(s.available, s.target) for s in (classify("A10", 8, 6), classify("H100", 9, 0))] == [(True, "sm_80"),
                                                                                               (True, "sm_90")]
    blackwell = [classify(*part) for part in (("B200", 10, 0), ("B300", 10, 3), ("RTX PRO 6000", 12, 0),
                                              ("GB10", 12, 1))]
    assert [(s.available, s.target) for s in blackwell] == [(True, "sm_100a"), (True, "sm_103a"), (True, "sm_120"),
                                                           (True, "sm_120")]
    thor = classify("Thor", 11, 0)  # no sm_110 target: the reason names the targets built and where to add one
    assert not thor.available and thor.target == "" and "sm_100a" in thor.reason and "TARGETS" in thor.reason
    assert DeviceStatus(False, "no CUDA driver").target == "sm_80"  # configs are still checked against a target
