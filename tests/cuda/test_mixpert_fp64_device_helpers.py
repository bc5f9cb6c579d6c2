"""The device helpers of the mixpert-fp64 kernels that the CPU model computes with Python integers
(mixpert_fp64_common.cuh: the float64 split, the four-word exact accumulator, the rounding to
float64), compiled as host C++ with g++ from the template's own text and checked against the
model's arithmetic: the split against fragments._split, the accumulator's sum and its rounding
against round_to_float of the exact integer sum."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mixjit.runtime.cuda.emit import template_text
from mixjit.runtime.cuda.fragments import round_to_float
from mixjit.runtime.mixpert.cuda.fp64_desc import ACC_WORDS
from mixjit.runtime.mixpert.cuda.fragments import F64_FORMAT, _split

if shutil.which("g++") is None:
    pytest.skip("no g++ to build the device helpers as host code", allow_module_level=True)

#: what the template expects from common.cuh and the rendered Params block, for the host
_PRELUDE = """#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#define __device__
#define __forceinline__ inline
typedef long long i64;
typedef unsigned long long u64;
constexpr int kWidth = WIDTH;
constexpr int kAccWords = ACC_WORDS;
static inline int __clzll(i64 x) { return x == 0 ? 64 : __builtin_clzll((u64)x); }
static inline double __longlong_as_double(i64 x) { double d; std::memcpy(&d, &x, 8); return d; }
"""
#: stdin: "S bits" -> "mag e" (split_element64); "R scale n v1 s1 ... vn sn" -> the bits of
#: round_to_f64 of the accumulated sum of v_i * 2^s_i (add_shifted_wide)
_MAIN = """
int main() {
    char op;
    while (std::cin >> op) {
        if (op == 'S') {
            u64 bits; std::cin >> bits;
            i64 mag; int e; split_element64(bits, mag, e);
            std::printf("%lld %d\\n", mag, e);
        } else {
            int scale, n; std::cin >> scale >> n;
            Wide acc{};
            for (int i = 0; i < n; ++i) { i64 v; int s; std::cin >> v >> s; add_shifted_wide(acc, v, s); }
            double r = round_to_f64(acc, scale); u64 b; std::memcpy(&b, &r, 8);
            std::printf("%llu\\n", b);
        }
    }
}
"""


@pytest.fixture(scope="module")
def helpers(tmp_path_factory):
    """run(width, stdin lines) -> stdout lines of the helpers built with kWidth = width."""
    built = {}

    def run(width: int, lines: list[str]) -> list[str]:
        if width not in built:
            src = tmp_path_factory.mktemp("helpers") / "helpers.cpp"
            src.write_text(_PRELUDE.replace("WIDTH", str(width)).replace("ACC_WORDS", str(ACC_WORDS))
                           + template_text("mixpert_fp64_common.cuh") + _MAIN)
            subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(src.with_suffix("")), str(src)], check=True)
            built[width] = src.with_suffix("")
        out = subprocess.run([str(built[width])], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             check=True)
        return out.stdout.split("\n")[:-1]

    return run


@pytest.mark.parametrize("width", [62, 55, 48])
def test_split_element64_is_the_models_split(helpers, width):
    rng = np.random.default_rng(width)
    values = np.concatenate([rng.standard_normal(200) * np.exp2(rng.integers(-1070, 1020, 200)),
                             [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1.0, 1.9999999999999998,
                              -3.0, 2.0**-1074 * 12345]])
    bits = np.abs(values).view(np.uint64)
    got = [tuple(int(x) for x in line.split()) for line in helpers(width, [f"S {int(b)}" for b in bits])]
    mag, e = _split(bits, width, F64_FORMAT)
    assert got == list(zip(mag.tolist(), e.tolist()))


def test_the_exact_accumulator_and_its_rounding_are_the_models(helpers):
    """Sums of shifted INT32/int64 terms of both signs across all four words (carries, borrows, a
    negative total), rounded with scales from overflow to below the subnormals."""
    rng = np.random.default_rng(1)
    cases = []
    for _ in range(400):
        n = int(rng.integers(1, 12))
        terms = [(int(rng.integers(-(2**31), 2**31)) * int(rng.choice([1, 1, 2**31 + 1])), int(rng.integers(0, 190)))
                 for _ in range(n)]
        cases.append((int(rng.integers(-1400, 900)), terms))
    cases += [(0, [(1, 0), (-1, 0)]), (-1075, [(1, 0)]), (-1076, [(3, 0)]), (-1126, [(3 * 2**52 + 1, 0)]),
              (971, [(2**53 - 1, 0)]), (970, [(2**53 - 1, 1), (1, 0)]), (0, [(-1, 191)]), (-200, [(-(2**62), 190)])]
    lines = [f"R {scale} {len(terms)} " + " ".join(f"{v} {s}" for v, s in terms) for scale, terms in cases]
    got = [int(x) for x in helpers(62, lines)]
    want = [int(round_to_float(sum(v << s for v, s in terms), scale, np.float64).view(np.uint64))
            for scale, terms in cases]
    assert got == want
