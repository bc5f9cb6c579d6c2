"""Complex sites' kernels (runtime/complex/cuda/, docs/cuda.md "Complex sites"): the desc composes
the real scheme's kernel; the CPU model of the device path (host split, the real kernels' CPU
models, ``complex_combine``) is bit-equal to the complex wrapper's executor over both forms and
special values; the epilogue alone equals runtime/complex/epilogue.py's and the frontend's update
arithmetic; ``complex_combine`` builds for every target (ARCHS) with only the IEEE adds and
multiplies of the template in SASS (no FMA contraction), and no spills."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from build_targets import per_target

from mixjit.entry.blas import _axpby
from mixjit.runtime.complex import COMPLEX
from mixjit.runtime.complex.cuda.desc import ComplexDesc
from mixjit.runtime.complex.cuda.model import combine, real_model, run_complex
from mixjit.runtime.complex.epilogue import combine3, combine4
from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import opcode_counts

#: (complex dtype, real scheme, real config) whose real kernels have a bit-exact CPU model
REALS = [(np.complex64, "mixpert", "level=IV"), (np.complex64, "mixpert", "level=full,align=row"),
         (np.complex128, "ozaki2", "moduli=8"), (np.complex64, "vitbit", "bits=8")]


def _desc(dtype, real: str, config: str, form: int, **kw) -> ComplexDesc:
    return kernel_desc("complex", f"form={form},real={real}({config})", "f32" if dtype == np.complex64 else "f64", **kw)


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit-equal, except that a NaN equals any NaN (payloads are unspecified: docs/numerics.md)."""
    g, w = got.view(got.real.dtype), want.view(want.real.dtype)
    both_nan = np.isnan(g) & np.isnan(w)
    return got.dtype == want.dtype and got.shape == want.shape and bool(((g.view(f"u{g.itemsize}") ==
                                                                         w.view(f"u{w.itemsize}")) | both_nan).all())


def _complex(rng, shape, dtype, re_scale=1.0, im_scale=1.0):
    return (rng.standard_normal(shape) * re_scale + 1j * rng.standard_normal(shape) * im_scale).astype(dtype)


def _check(a, b, dtype, real, config, form):
    desc = _desc(dtype, real, config, form)
    c, status = run_complex(a, b, desc)
    assert status == 0, "inputs left the kernels' main path: not a main-path test"
    want = COMPLEX.run(a, b, COMPLEX.parse_config(desc.config))
    assert _same_bits(c, want), f"{desc.config}: {(c != want).sum()} elements differ"
    return c


# -- the desc ---------------------------------------------------------------------------------

def test_the_desc_composes_the_real_kernel_in_product_mode():
    desc = kernel_desc("complex", "form=3,real=mixpert(level=IV)", "f32", arch="sm_90", trans_b=True,
                       alpha_beta="update")
    assert desc.real == kernel_desc("mixpert", "level=IV", "f32", arch="sm_90", trans_b=True)
    assert (desc.form, desc.alpha_beta, desc.real.alpha_beta, desc.arch, desc.block) == \
           (3, "update", "product", "sm_90", desc.real.block)
    assert desc.products() == (("r", "r"), ("i", "i"), ("s", "s"))
    assert kernel_desc("complex", "form=4,real=bf16x3()", "f32").real.config == "products=3"  # an alias
    launch, = desc.launches(37, 70, 45)
    assert (launch.entry, launch.grid, launch.block, launch.shared_bytes) == ("complex_combine", (3, 5, 1),
                                                                              (32, 8, 1), 0)


def test_a_real_config_without_a_kernel_says_so():
    with pytest.raises(UnsupportedConfig, match=r"its real products run native\[\], which has none"):
        kernel_desc("complex", "form=4,real=native()", "f64")
    with pytest.raises(UnsupportedConfig, match=r"real products run dfp\[bits=8,carry_a=8\].*carried operands"):
        kernel_desc("complex", "form=4,real=dfp(bits=8,carry_a=8)", "f64")
    # complex128's default, over mixpert-fp64, has kernels since mixpert-fp64 has
    assert kernel_desc("complex", "form=4,real=mixpert-fp64()", "f64").real.scheme == "mixpert-fp64"
    with pytest.raises(UnsupportedConfig, match=r"real products run ozaki2\[mode=accurate\].*accurate"):
        kernel_desc("complex", "form=4,real=ozaki2(mode=accurate)", "f64")
    with pytest.raises(UnsupportedConfig, match="form=5"):
        kernel_desc("complex", "form=5,real=mixpert(level=IV)", "f32")
    with pytest.raises(ValueError, match="bad config"):
        kernel_desc("complex", "real=mixpert(level=IV)", "f32")


def test_the_desc_imports_no_numba():
    code = ("import sys; from mixjit.runtime.cuda.registry import kernel_desc; from mixjit.runtime.cuda.emit import "
            "render; render(kernel_desc('complex', 'form=4,real=ozaki2(moduli=8)', 'f64')); print('numba' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


# -- the CPU model of the device path against the executor ------------------------------------

@pytest.mark.parametrize("form", [4, 3])
@pytest.mark.parametrize("dtype,real,config", REALS, ids=lambda v: getattr(v, "__name__", v))
def test_model_bit_equal_to_the_executor(dtype, real, config, form):
    rng = np.random.default_rng(form)
    for m, k, n in [(9, 21, 7), (1, 1, 1), (17, 40, 5)]:
        _check(_complex(rng, (m, k), dtype), _complex(rng, (k, n), dtype), dtype, real, config, form)


@pytest.mark.parametrize("form", [4, 3])
@pytest.mark.parametrize("dtype,real,config", [REALS[0], REALS[2]], ids=lambda v: getattr(v, "__name__", v))
def test_model_bit_equal_on_special_values(dtype, real, config, form):
    rng = np.random.default_rng(7)
    tiny = np.finfo(dtype).tiny
    big = 2.0 ** (np.finfo(dtype).maxexp // 2 + 4)  # products of two overflow, sums of two do not
    m, k, n = 6, 8, 5
    # wide ranges between the parts (either way round), zero rows and columns, subnormal parts
    cases = [(_complex(rng, (m, k), dtype, 1.0, 2.0**20), _complex(rng, (k, n), dtype, 1.0, 2.0**20)),
             (_complex(rng, (m, k), dtype, 2.0**20, 1.0), _complex(rng, (k, n), dtype, 1.0, 2.0**-20)),
             (_complex(rng, (m, k), dtype, tiny, 1.0), _complex(rng, (k, n), dtype, 2.0**-20, 1.0))]
    a, b = _complex(rng, (m, k), dtype), _complex(rng, (k, n), dtype)
    a[1], b[:, 2] = 0, 0
    a[2] = a[2].real  # +0 imaginary parts in one row
    cases.append((a, b))
    # products that overflow: Re C = inf - inf = NaN, Im C = +-inf (the epilogue's IEEE rules)
    a = np.full((m, k), big * (1 + 1j), dtype)
    b = np.full((k, n), big * (1 + 1j), dtype)
    cases.append((a, b))
    for a, b in cases:
        c = _check(a, b, dtype, real, config, form)
    assert np.isnan(c.real).all() and np.isinf(c.imag).all() if form == 4 else np.isnan(c.real).all()


def test_non_finite_inputs_leave_the_kernels_main_path():
    a = np.ones((4, 8), np.complex64)
    b = np.ones((8, 3), np.complex64)
    a[1, 2] = complex(1.0, np.inf)
    for form in (4, 3):
        _, status = run_complex(a, b, _desc(np.complex64, "mixpert", "level=IV", form))
        assert status & 1, "an inf in an imaginary part must hand the GEMM back (status 1)"


def test_a_real_scheme_without_a_bit_exact_model_is_named():
    with pytest.raises(ValueError, match="no bit-exact CPU model of 'tf32x3'"):
        real_model("tf32x3")


# -- the epilogue alone -----------------------------------------------------------------------

_SPECIAL = [0.0, -0.0, 1.0, -1.5, 3.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 2.0**-126]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_combine_equals_the_executors_epilogue_on_special_values(dtype):
    """Every 4-tuple of special products: the model of complex_combine equals combine4 / combine3
    (runtime/complex/epilogue.py, the executor's) bit for bit, NaN for NaN."""
    values = np.array(_SPECIAL, dtype)
    grid = np.array(list(itertools.product(values, repeat=4)), dtype).T.reshape(4, -1, len(values))
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    for form, run in ((4, combine4), (3, combine3)):
        desc = _desc(cdt, "mixpert", "level=IV", form) if dtype == np.float32 else _desc(cdt, "ozaki2", "moduli=8", form)
        products = [np.ascontiguousarray(p) for p in grid[:form]]
        want = np.empty(products[0].shape, cdt)
        run(*products, want)
        assert _same_bits(combine(products, desc), want), form


def test_the_special_values_tell_the_orders_of_form_3_apart():
    """The check can fail: the other order of form 3's imaginary part, (T3 − T2) − T1, or T1 and T2
    swapped, differs from the executor on these products."""
    rng = np.random.default_rng(3)
    t1, t2, t3 = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
    want = np.empty((8, 8), np.complex64)
    combine3(t1, t2, t3, want)
    desc = _desc(np.complex64, "mixpert", "level=IV", 3)
    assert _same_bits(combine([t1, t2, t3], desc), want)
    assert not _same_bits(combine([t2, t1, t3], desc), want)
    assert ((t3 - t2) - t1 != want.imag).any()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-1.0, 1.0), (0.5, -2.0), (1.0, 0.0), (-3.0, 0.0), (0.0, 1.0)])
def test_update_mode_is_the_frontends_complex_axpby(dtype, alpha, beta):
    """C = alpha*P + beta*C as the entry's compiled _axpby computes it in C's complex dtype (Numba's
    complex product with alpha + 0i), on special values in P and C (a NaN in C does not survive beta = 0)."""
    w = np.float32 if dtype == np.complex64 else np.float64
    values = np.array(_SPECIAL, w)
    pr, pi, cr, ci = np.array(list(itertools.product(values, repeat=4)), w).T
    products = [pr.reshape(-1, 13).copy(), np.zeros((pr.size // 13, 13), w), pi.reshape(-1, 13).copy(),
                np.zeros((pr.size // 13, 13), w)]  # form 4: Re = pr - 0, Im = pi + 0
    c = np.empty(cr.shape, dtype)
    c.real, c.imag = cr, ci  # placed, not computed (1j * inf would make a NaN real part)
    c = c.reshape(-1, 13)
    p = np.empty(c.shape, dtype)
    combine4(*products, p)
    want = c.copy()
    _axpby(want, p, alpha, beta)
    desc = _desc(dtype, "mixpert" if dtype == np.complex64 else "ozaki2", "level=IV" if dtype == np.complex64
                 else "moduli=8", 4, alpha_beta="update")
    assert _same_bits(combine(products, desc, alpha, beta, c), want)
    # the check can fail: without the 0·Im and 0·Re terms of the complex product (0·inf = NaN)
    t = np.dtype(w).type
    with np.errstate(all="ignore"):
        re, im = t(alpha) * p.real, t(alpha) * p.imag
        if beta != 0.0:
            re, im = re + t(beta) * c.real, im + t(beta) * c.imag
    naive = np.empty(p.shape, dtype)
    naive.real, naive.imag = re, im
    assert not _same_bits(naive, want)


# -- build and SASS ---------------------------------------------------------------------------

def _toolchain():
    from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
    from mixjit.runtime.cuda.sass import ToolNotFound, find_tool

    try:
        find_compiler()
        find_tool()
    except (CompilerNotFound, ToolNotFound) as exc:
        pytest.skip(str(exc))


def test_nvrtc_from_the_pip_wheel_builds_the_combine_too(cubin, sass):
    """The backend works from pip alone: NVRTC builds complex_combine (sm_90) without an FMA."""
    from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler

    _toolchain()
    try:
        nvrtc = find_compiler("nvrtc")
    except CompilerNotFound as exc:
        pytest.skip(str(exc))
    desc = _desc(np.complex64, "mixpert", "level=IV", 3, arch="sm_90", alpha_beta="update")
    ops = opcode_counts(sass(cubin(desc, nvrtc))["complex_combine"])
    assert ops["FADD"] == 9 and ops["FMUL"] == 8 and ops["FFMA"] == 0, ops.most_common(12)


#: (dtype, real, config, form, alpha_beta): one per dtype in CI, the rest with -m slow
BUILDS = [pytest.param(np.complex64, "mixpert", "level=IV", 4, "product", id="c64-form4-product"),
          pytest.param(np.complex128, "ozaki2", "moduli=8", 3, "update", id="c128-form3-update")] + \
         [pytest.param(dt, real, cfg, form, ab, id=f"{dt.__name__}-form{form}-{ab}", marks=pytest.mark.slow)
          for dt, real, cfg in [(np.complex64, "mixpert", "level=IV"), (np.complex128, "ozaki2", "moduli=8")]
          for form, ab in [(3, "product"), (4, "update")] + ([(3, "update")] if dt == np.complex64 else [(4, "product")])]


@pytest.mark.parametrize("arch,dtype,real,config,form,alpha_beta", per_target(BUILDS))
def test_combine_builds_with_exactly_the_templates_ieee_operations(cubin, sass, usage, dtype, real, config, form,
                                                                     alpha_beta, arch):
    """complex_combine's SASS: one add per add or subtract of the template and one multiply per
    product (update mode: 4 products and 2 sums per scaled term, 2 sums to add them), no FMA of
    either width (no contraction: the executor rounds every operation), no MMA, no spills."""
    _toolchain()
    desc = _desc(dtype, real, config, form, arch=arch, alpha_beta=alpha_beta)
    ops = opcode_counts(sass(cubin(desc))["complex_combine"])
    add, mul, fma = ("FADD", "FMUL", "FFMA") if dtype == np.complex64 else ("DADD", "DMUL", "DFMA")
    update = alpha_beta == "update"
    assert ops[add] == {4: 2, 3: 3}[form] + (6 if update else 0), ops.most_common(12)
    assert ops[mul] == (8 if update else 0) and ops[fma] == 0, ops.most_common(12)
    assert not any(op.startswith(("IMMA", "HMMA", "DMMA")) for op in ops)
    res = usage(cubin(desc))["complex_combine"]
    assert not res.spills and res.shared_bytes == desc.launches(8, 8, 8)[0].shared_bytes == 0
