"""The MixPert operand split and block packing, an older commit's kernels against this checkout's.

    python tools/bench_split_pack.py --before 943ef5c --sizes 2048 --repeats 7

Loads ``runtime/mixpert/segments.py`` and ``runtime/mixpert/pack.py`` as they were at
``--before`` (compiled with plain ``numba.njit``, not cached) beside this checkout's,
and times ``segments.pack_groups`` (the split of one operand in row form: what
``mixpert.split.split_rows`` spends most of its time in) and
``mixpert.pack.pack_into`` (one block operand, all segments, serial) on the
same inputs, old and new alternating call by call, median CPU time
(``time.process_time``). Every output is compared bit for bit; the script fails if
one differs. Cases: level IV, the most precise float32 config
(segments=4,pairs=sig6,align=row), balanced digits with truncation, and
mixpert-fp64's default config, on seeded uniform [-1, 1] operands. Writes
docs/results/executor_speed_split.json and the generated section ``split`` of
docs/results/executor_speed.md (the table of the "Split" note).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import types

import numpy as np
from common import ROOT, machine_info, replace_generated_section, write_json  # tools/common.py

from mixjit.runtime.mixpert import pack as new_pack
from mixjit.runtime.mixpert import segments as new_segments
from mixjit.runtime.mixpert import split, words
from mixjit.runtime.schemes import get_scheme

OUT = ROOT / "docs" / "results" / "executor_speed_split.json"
DOC = ROOT / "docs" / "results" / "executor_speed.md"

#: (scheme, config label or None for the default config, input dtype)
CASES = (("mixpert", "level=IV", np.float32), ("mixpert", "segments=4,pairs=sig6,align=row", np.float32),
         ("mixpert", "segments=3,digits=balanced,rounding=trunc", np.float32), ("mixpert-fp64", None, np.float64))


def _load_old(rev: str, path: str, name: str) -> types.ModuleType:
    """Module ``path`` as it was at ``rev``, its kernels compiled with plain ``njit``
    (its segments import pointed at the old segments module)."""
    src = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    src = src.replace("from mixjit.runtime.jit.cache import cached_njit",
                      "from numba import njit as _njit\n\ndef cached_njit(**kw):\n    return _njit(**kw)")
    src = src.replace("from mixjit.runtime.mixpert.segments import", "from _old_segments import")
    mod = types.ModuleType(name)
    mod.__file__ = f"<{rev}:{path}>"
    sys.modules[name] = mod
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    return mod


def _pack_args(params: np.ndarray, raw: np.ndarray) -> tuple:
    """``pack_groups``'s arguments for operand A, as ``split_rows`` derives them."""
    segments, digits = params[words.W_SEGMENTS], params[words.W_DIGITS]
    group_rows = 1 if params[words.W_ALIGN] == words.ALIGN_ROW else params[words.W_TM]
    threshold = params[words.W_FALLBACK]
    emax = 127 if params[words.W_DOMAIN] == words.DOMAIN_FP32 else 1023
    return (raw, group_rows, params[words.W_TK], new_segments.width(segments, params[words.W_SEG0_BITS], digits),
            params[words.W_ROUNDING], threshold if threshold >= 0 else 1 << 20,
            new_segments.max_aligned(segments, digits), emax)


def _alternate(f_old, f_new, args: tuple, repeats: int) -> tuple[float, float]:
    """Median CPU seconds of ``f_old(*args)`` and ``f_new(*args)``, called in turn."""
    cpu = {f_old: [], f_new: []}
    for _ in range(repeats):
        for f in (f_old, f_new):
            c0 = time.process_time()
            f(*args)
            cpu[f].append(time.process_time() - c0)
    return statistics.median(cpu[f_old]), statistics.median(cpu[f_new])


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def run(before: str, sizes: list[int], repeats: int) -> list[dict]:
    """Old and new split and pack per case and size; raises if any bit differs."""
    old_segments = _load_old(before, "runtime/mixpert/segments.py", "_old_segments")
    old_pack = _load_old(before, "runtime/mixpert/pack.py", "_old_pack")
    rows = []
    for n in sizes:
        for scheme_name, label, dtype in CASES:
            scheme = get_scheme(scheme_name)
            cfg = scheme.parse_config(label) if label else scheme.default_config(dtype)
            params = np.asarray(cfg.words(), dtype=np.int64)
            a = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(dtype)
            raw = split.row_form(a, False, bool(params[words.W_DOMAIN] == words.DOMAIN_FP32))
            args = _pack_args(params, raw)
            if not all(_same(x, y) for x, y in zip(old_segments.pack_groups(*args), new_segments.pack_groups(*args))):
                raise SystemExit(f"pack_groups differs from {before} for {cfg.label} at n={n}")
            split_old, split_new = _alternate(old_segments.pack_groups, new_segments.pack_groups, args, repeats)
            p = split.split_rows(raw, False, params, split.mantissa_type(params), raw)
            segs, digits, tk = int(params[words.W_SEGMENTS]), int(params[words.W_DIGITS]), int(params[words.W_TK])
            outs = [np.empty((n, n)), np.empty((n, n))]
            pack = [lambda out, m=m: m.pack_into(out, p.q, p.scale, np.arange(n), 0, n, 0, segs - 1, segs, digits, tk,
                                                 False) for m in (old_pack, new_pack)]
            pack[0](outs[0])
            pack[1](outs[1])
            if not _same(outs[0], outs[1]):
                raise SystemExit(f"pack_into differs from {before} for {cfg.label} at n={n}")
            pack_old, pack_new = _alternate(lambda: pack[0](outs[0]), lambda: pack[1](outs[1]), (), repeats)
            row = {"scheme": scheme_name, "config": cfg.label, "n": n,
                   "pack_groups_ms": [round(split_old * 1e3, 1), round(split_new * 1e3, 1)],
                   "pack_into_ms": [round(pack_old * 1e3, 1), round(pack_new * 1e3, 1)]}
            print(f"{scheme_name} {cfg.label} n={n}: pack_groups {row['pack_groups_ms'][0]} -> "
                  f"{row['pack_groups_ms'][1]} ms ({split_old / split_new:.2f}x), pack_into (one block operand) "
                  f"{row['pack_into_ms'][0]} -> {row['pack_into_ms'][1]} ms ({pack_old / pack_new:.2f}x)", flush=True)
            rows.append(row)
    return rows


def _table(data: dict) -> str:
    """The ``split`` section of docs/results/executor_speed.md: before and after per config."""
    lines = [f"Before ({data['before']}) against after ({data['after']}), one process, alternating, median CPU ms of "
             f"{data['repeats']} ({data['date']}; {data['machine']['cpu']}, {data['machine']['cores']} logical CPUs, "
             f"load average at the end {', '.join(map(str, data['load_average_at_end']))}):", "",
             "| scheme | config | n | pack_groups (one operand) | pack_into (one block operand) |", "|---|---|---|---|---|"]
    for r in data["rows"]:
        (so, sn), (po, pn) = r["pack_groups_ms"], r["pack_into_ms"]
        lines.append(f"| {r['scheme']} | {r['config']} | {r['n']} | {so} -> {sn} ({so / sn:.2f}x) | "
                     f"{po} -> {pn} ({po / pn:.2f}x) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="the commit whose kernels are the 'before' column")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--no-write", action="store_true", help=f"do not write {OUT.relative_to(ROOT)}")
    args = p.parse_args(argv)
    rows = run(args.before, args.sizes, args.repeats)
    if not args.no_write:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT).stdout.strip()
        data = {"before": args.before, "after": head, "repeats": args.repeats, "unit": "ms CPU, median",
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine_info(),
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "rows": rows}
        write_json(OUT, data)
        replace_generated_section(DOC, "split", _table(data))
        print(f"wrote {OUT} and {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
