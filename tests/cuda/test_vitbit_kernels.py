"""The VitBit kernels (runtime/vitbit/cuda/desc.py, templates/vitbit_*.cu): the desc's packing
arithmetic and labels agree with the scheme's, the CPU model of the kernels
(runtime/vitbit/cuda/fragments.py) gives the scheme's word-level emulation's integer sums and the
CPU executor's output bit for bit (random, worst-case, ragged), a model with a wrong layout or
an overflowing ``acc`` is caught, and the generated source builds for every target (ARCHS) with
IMMA, IMAD and FFMA in the fused GEMM and no spills."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.desc import ARCHS, UnsupportedConfig
from mixjit.runtime.cuda.emit import render, template_text
from mixjit.runtime.cuda.fragments import A_LOADS, B_LOADS
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.vitbit import emulate_integer_product, pack_words, vitbit_quantize
from mixjit.runtime.vitbit import executor as ex
from mixjit.runtime.vitbit.cuda import desc as dv
from mixjit.runtime.vitbit.cuda import fragments as fv

SCHEME = get_scheme("vitbit")
RNG = np.random.default_rng(29)


def _desc(config: str, a: np.ndarray, **kw):
    return kernel_desc("vitbit", config, dtype="f64" if a.dtype == np.float64 else "f32", **kw)


def _emulated_sums(a, b, config):
    cfg = SCHEME.parse_config(config)
    qa, _ = vitbit_quantize(a, cfg.bits)
    qb, _ = vitbit_quantize(b, cfg.bits, transpose=True)
    return emulate_integer_product(qa, qb.T, cfg)


def _check(a, b, config, **kw):
    desc = _desc(config, a, **kw)
    c, sums, status = fv.run_vitbit(a, b, desc)
    assert status == 0, "inputs left the main path: not a main-path test"
    assert (sums == _emulated_sums(a, b, config)).all(), f"{config}: the integer sums differ from the emulation"
    want = mixjit.gemm(a, b, scheme="vitbit", config=config)
    assert c.dtype == want.dtype and c.tobytes() == want.tobytes(), f"{config}: {(c != want).sum()} outputs differ"


def _extreme(m, k, n, dtype=np.float32):
    """Every quantized value is ±q_max (the largest products, both signs): the fields reach their bound."""
    return RNG.choice([-1.0, 1.0], (m, k)).astype(dtype), RNG.choice([-1.0, 1.0], (k, n)).astype(dtype)


# -- the desc agrees with the scheme ---------------------------------------------------------------
@pytest.mark.parametrize("bits", range(2, 9))
def test_packing_arithmetic_is_the_executors(bits):
    for name in ("pack_count", "slot_bits", "qmax", "max_acc", "fp_block", "max_k"):
        assert getattr(dv, name)(bits) == getattr(ex, name)(bits), name
    for n in (0, 1, 7, 64, 100, 257):
        for m_ratio, n_ratio in ((4, dv.pack_count(bits)), (0, 1), (1, 0), (3, 100)):
            assert dv.column_split(n, m_ratio, n_ratio, bits) == tuple(ex.column_split(n, m_ratio, n_ratio, bits))


@pytest.mark.parametrize("label", ["", "bits=8", "bits=5,m=2", "bits=4,n=0,acc=1", "m=0", "bits=2,acc=127",
                                   "bits=8,target=h100", "bits=5,target=rtx4090,m=2", "m=-1"])
def test_labels_the_scheme_accepts(label):
    cfg = SCHEME.parse_config(label)
    assert dv.parse_vitbit_label(label) == {"bits": cfg.bits, "m": cfg.m, "n": cfg.n, "acc": cfg.acc}


@pytest.mark.parametrize("label", ["bits=9", "bits=1", "acc=3", "bits=6,acc=35", "m=-2", "colour=red", "bits=x",
                                   "target=nosuch", "target=patent-0066"])
def test_labels_both_refuse(label):
    with pytest.raises(ValueError):
        SCHEME.parse_config(label)
    with pytest.raises(ValueError):
        dv.parse_vitbit_label(label)


def test_configs_the_kernel_refuses():
    with pytest.raises(UnsupportedConfig, match="alternate"):
        kernel_desc("vitbit", "bits=8", int_warps=2, fp_warps=1)
    with pytest.raises(UnsupportedConfig, match="evenly"):
        kernel_desc("vitbit", "bits=8", int_words=24)
    with pytest.raises(UnsupportedConfig, match="MMA"):
        kernel_desc("vitbit", "bits=8", block=(64, 20))
    with pytest.raises(ValueError, match="K="):
        kernel_desc("vitbit", "bits=8").launches(64, 64, ex.max_k(8) + 1)


def test_warp_roles_and_launches():
    desc = kernel_desc("vitbit", "bits=5")
    roles = [desc.warp_role(w) for w in range(desc.threads // 32)]
    assert roles == ["tensor"] * 4 + ["int", "fp", "int", "fp"]
    launches = desc.launches(100, 300, 70)
    assert [l.entry for l in launches] == list(desc.entry_points)
    n1, n2, n3 = dv.column_split(300, desc.m_ratio, desc.n_ratio, 5)
    gemm = launches[-1]
    # the grid covers every column set: tensor columns, packed words, converted columns
    assert gemm.grid[0] * desc.block[1] >= n3 and gemm.grid[0] * desc.int_words * desc.pack >= n1
    assert gemm.grid[0] * desc.fp_cols >= n2 and gemm.grid[1] * desc.block[0] >= 100
    assert gemm.block == (desc.threads, 1, 1) and gemm.shared_bytes == 2 * (64 + 32) * 32


# -- the CPU model of the kernels against the executor -------------------------------------------
def test_model_loads_are_the_templates_loads():
    text = template_text("vitbit_gemm.cu")
    imma = template_text("imma.cuh")  # warp_mma_s8 -> load_fragments_s8, which the tensor warps call
    assert "warp_mma_s8(acc, s.a[stage], s.b[stage]," in text
    a = re.findall(r"fa\[mi\]\[(\d)\] = .*?&a\[r( \+ 8)?\]\[(16 \+ )?4 \* t\]", imma)
    b = re.findall(r"fb\[ni\]\[(\d)\] = .*?&b\[col\]\[(16 \+ )?4 \* t\]", imma)
    assert tuple((8 if r else 0, 16 if c else 0) for _, r, c in a) == A_LOADS
    assert tuple(16 if c else 0 for _, c in b) == B_LOADS
    # the INT and FP threads' rows and columns, as the model indexes them
    assert "s.a[stage][int_row0 + j * kIntGroups][kk]" in text and "rt % kIntWords" in text
    assert "s.a[stage][fp_row0 + j * kFpGroups][kk]" in text and "rt % kFpCols" in text


@pytest.mark.parametrize("bits", [8, 6, 5, 4, 2])
def test_packed_words_are_the_schemes(bits):
    """vitbit_pack_b's words are ``pack_words`` of the quantized packed columns (fields, padding, two's
    complement), its converted and tensor-core parts the other columns, zero in the padding."""
    a, b = RNG.standard_normal((5, 45)).astype(np.float32), RNG.standard_normal((45, 61)).astype(np.float32)
    desc = kernel_desc("vitbit", f"bits={bits}")
    n1, n2, n3 = dv.column_split(61, desc.m_ratio, desc.n_ratio, bits)
    pads = desc.padded(5, 61, 45)
    _, sb = fv.host_scales(a, b, bits)
    planes, status = fv.pack_b(b, sb, desc, n1, n2, pads)
    qb = vitbit_quantize(b, bits, transpose=True)[0].T
    assert status == 0 and n1 and n2 and n3
    assert (planes.words[:45, : n1 // desc.pack] == pack_words(qb[:, :n1], bits)).all()
    assert not planes.words[45:].any() and not planes.words[:, n1 // desc.pack:].any()
    assert (planes.conv[:45, :n2] == qb[:, n1:n1 + n2]).all() and not planes.conv[:, n2:].any()
    assert (planes.tens[:n3, :45] == qb[:, n1 + n2:].T).all() and not planes.tens[n3:].any()


CONFIGS = ["bits=8", "bits=6", "bits=5", "bits=4", "bits=3", "bits=2", "bits=8,m=1,n=1", "bits=4,m=0,acc=1"]
SHAPES = [(37, 70, 100), (1, 1, 1), (70, 33, 260)]  # ragged in M, K and N; 70 rows: two CTAs in M


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("shape", SHAPES)
def test_random_bit_equal(config, shape):
    m, k, n = shape
    _check(RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32), config)


def test_every_path_has_columns_in_the_main_shape():
    for config in CONFIGS[:6]:
        cfg = SCHEME.parse_config(config)
        assert all(dv.column_split(100, cfg.m, cfg.n, cfg.bits)), config


@pytest.mark.parametrize("bits", range(2, 9))
def test_worst_case_bit_equal(bits):
    """All ±q_max at acc = max_acc: every packed field reaches its bound before extraction."""
    a, b = _extreme(20, 96, 150)
    _check(a, b, f"bits={bits}")
    _check(a, b, f"bits={bits},m=0,n=100")  # almost everything on the packed path


def test_k_past_the_fp_block():
    """K = 1100 > fp_block(8) = 1040: the FP threads hand their FP32 sums to INT32 mid-K."""
    assert dv.fp_block(8) < 1100
    a, b = _extreme(16, 1100, 40)
    _check(a, b, "bits=8")
    # all +q_max: without the hand-over the FP32 running sum 16129·j passes 2^24 at odd values
    _check(np.ones((16, 1100), np.float32), np.ones((1100, 40), np.float32), "bits=8")


def test_float64_and_update_mode():
    a, b = RNG.standard_normal((33, 40)), RNG.standard_normal((40, 50))
    _check(a, b, "bits=7")
    c0 = RNG.standard_normal((33, 50))
    desc = kernel_desc("vitbit", "bits=7", dtype="f64", alpha_beta="update")
    got, _, status = fv.run_vitbit(a, b, desc, -1.0, 0.5, c0)
    p = mixjit.gemm(a, b, scheme="vitbit", config="bits=7")
    assert status == 0 and got.tobytes() == (-1.0 * p + 0.5 * c0).tobytes()


def test_zero_rows_and_scales():
    a, b = RNG.standard_normal((20, 64)).astype(np.float32), RNG.standard_normal((64, 30)).astype(np.float32)
    a[3], b[:, 7] = 0.0, 0.0
    _check(a, b, "bits=5")


def test_an_overflowing_acc_is_caught():
    """The model extracts where the kernel does: past max_acc the fields overflow and it says so."""
    a, b = _extreme(16, 64, 100)
    desc = kernel_desc("vitbit", "bits=8,m=0,n=100")
    object.__setattr__(desc, "acc", ex.max_acc(8) + 1)  # what the desc refuses to build
    _, sums, _ = fv.run_vitbit(a, b, desc)
    assert (sums != _emulated_sums(a, b, "bits=8,m=0,n=100")).any()


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    monkeypatch.setattr(fv, "A_LOADS", ((0, 16), (8, 16), (0, 0), (8, 0)))
    a, b = RNG.standard_normal((16, 64)).astype(np.float32), RNG.standard_normal((64, 100)).astype(np.float32)
    _, sums, _ = fv.run_vitbit(a, b, kernel_desc("vitbit", "bits=8"))
    assert (sums != _emulated_sums(a, b, "bits=8")).any()


def test_nonfinite_inputs_are_handed_back():
    a, b = np.ones((16, 32), np.float32), np.ones((32, 40), np.float32)
    b[2, 39] = np.nan
    assert fv.run_vitbit(a, b, kernel_desc("vitbit", "bits=8"))[2] == fv.STATUS_NONFINITE


# -- the generated source builds -------------------------------------------------------------------
def _toolchain():
    from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
    from mixjit.runtime.cuda.sass import ToolNotFound, find_tool
    try:
        return find_compiler(), find_tool()
    except (CompilerNotFound, ToolNotFound) as exc:
        pytest.skip(str(exc))


_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s+([^;]*);")


def _multiplies_of_loaded_data(sass: str, opcode: str) -> int:
    """How many ``opcode`` instructions (IMAD, FFMA: d = a·b + c) multiply a register that a global
    load (LDG) wrote last, i.e. B data: the packed words (IMAD) or the converted columns (FFMA),
    not an address computation (those multiply indices by immediates or constants)."""
    writer: dict[str, str] = {}
    count = 0
    for op, args in _INSTRUCTION.findall(sass):
        regs = [a.strip().split(".")[0] for a in args.split(",")]
        if op == opcode and len(regs) == 4 and any(writer.get(r, "").startswith("LDG") for r in regs[1:3]) \
                and all(r.startswith("R") for r in regs[1:3]):
            count += 1
        if regs and regs[0].startswith("R"):
            writer[regs[0]] = op
    return count


def _build_and_check(desc, cache, compiler=None):
    from mixjit.runtime.cuda.build import build
    from mixjit.runtime.cuda.sass import opcode_counts, resource_usage, sass_by_kernel
    cubin = build(render(desc), compiler=compiler, cache=cache)
    sass, usage = sass_by_kernel(cubin), resource_usage(cubin)
    assert set(desc.entry_points) <= set(sass) and set(desc.entry_points) <= set(usage)
    entry, opcode, count = desc.main_loop_mma()
    ops = opcode_counts(sass[entry])
    # the tensor warps' IMMA, the INT warps' IMADs on packed words and the FP warps' FFMAs on
    # converted columns (the k loops are unrolled 4 times: at least 4 per row a thread holds)
    assert ops[opcode] >= count, ops.most_common(12)
    assert _multiplies_of_loaded_data(sass[entry], "IMAD") >= 4 * desc.int_rows, ops.most_common(12)
    assert _multiplies_of_loaded_data(sass[entry], "FFMA") >= 4 * desc.fp_rows, ops.most_common(12)
    assert _multiplies_of_loaded_data(sass["vitbit_pack_b"], "IMAD") == 0  # the packer shifts, never multiplies
    assert all(opcode_counts(sass[k])[opcode] == 0 for k in ("vitbit_pack_a", "vitbit_pack_b"))
    for kernel, res in usage.items():
        assert not res.spills and res.registers <= 255, (kernel, res)
    if desc.arch == "sm_80":  # ptxas reports 1 KiB more on sm_90 (the system's reserved shared memory)
        assert usage[entry].shared_bytes == desc.shared_bytes == desc.launches(100, 70, 90)[-1].shared_bytes


@pytest.mark.parametrize("arch", ARCHS)
def test_builds_with_imma_imad_ffma_and_no_spills(arch, tmp_path_factory):
    compiler, _ = _toolchain()
    _build_and_check(kernel_desc("vitbit", "bits=8", arch=arch), tmp_path_factory.mktemp(f"vitbit-{arch}"), compiler)


@pytest.mark.slow
@pytest.mark.parametrize("config", ["bits=6", "bits=5", "bits=4", "bits=2,acc=5"])
@pytest.mark.parametrize("fields", [{}, {"dtype": "f64", "trans_a": True, "trans_b": True, "alpha_beta": "update"}])
def test_build_sweep(config, fields, tmp_path):
    compiler, _ = _toolchain()
    for arch in ARCHS:
        _build_and_check(kernel_desc("vitbit", config, arch=arch, **fields), tmp_path, compiler)


@pytest.mark.slow
def test_nvrtc_builds_it_too(tmp_path):
    from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
    _toolchain()
    try:
        nvrtc = find_compiler("nvrtc")
    except CompilerNotFound as exc:
        pytest.skip(str(exc))
    _build_and_check(kernel_desc("vitbit", "bits=8", arch="sm_90"), tmp_path, nvrtc)
