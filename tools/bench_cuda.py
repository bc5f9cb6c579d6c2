"""GPU benchmark: the schemes' CUDA kernels against cuBLAS SGEMM and DGEMM.

**Never run**: no machine here has a GPU. Without a device it prints why on stderr and exits
with status 2, measuring nothing; without cuBLAS (cupy, the nvidia-cublas wheel, or a CUDA
toolkit's libcublas) it exits with status 3.

For square and tall-skinny m×k×n shapes, float32 operands uniform in [-1, 1] (a fixed seed),
each row's device time per GEMM (CUDA events around ``--repeats`` runs after one warm-up run,
operands already on the device: MixPert's packing kernels are timed, the uploads are not), its
speedup over cuBLAS SGEMM, and its relative Frobenius error against the FP64 product of the
same inputs (paper Eq. 10, computed on the host). Rows: cuBLAS SGEMM (FP32, no TF32: cuBLAS's
default math mode), cuBLAS DGEMM on the operands converted to float64, then every config of
every scheme with a CUDA kernel (``mixjit.runtime.cuda.launch.kernel_schemes``). A row whose
kernels hand the GEMM back (docs/cuda.md) is marked so instead of timed.

The table has the accuracy table's form (tools/accuracy.py): a provenance header, then one
Markdown table per measure, a row per scheme/config, a column per shape.

Usage:
    python tools/bench_cuda.py [--quick] [--shapes MxKxN ...] [--repeats R] [--json PATH] [--write-docs]

``--write-docs`` replaces the generated section of docs/cuda_launch.md (full runs only).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from common import ROOT, fmt_sci, markdown_table, progress, provenance, replace_generated_section, write_json

DOCS = ROOT / "docs" / "cuda_launch.md"
SECTION = "cuda-bench"
DEFAULT_SEED = 20240624
SQUARE = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192))
TALL_SKINNY = ((65536, 1024, 64), (32768, 4096, 128), (16384, 16384, 256))
QUICK = ((256, 256, 256), (1024, 1024, 1024), (8192, 256, 64))
EXIT_NO_DEVICE, EXIT_NO_CUBLAS = 2, 3


#: the host work a launcher does outside the timed kernels (docs/cuda_launch.md)
HOST_STEPS = {"ozaki2": "the shifts before and the CRT reconstruction after (CPU, O(N^2) per element)",
              "split": "the slice ranking, scales and shifts before (CPU)"}


@dataclass(frozen=True)
class Row:
    """One benchmark row: its record key, what the table calls it (cuBLAS, or the scheme's name) and its config."""

    key: str
    label: str
    config: str


def shape_text(shape: tuple[int, int, int]) -> str:
    return "x".join(map(str, shape))


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, k, n = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r}: write MxKxN, e.g. 8192x8192x8192") from None
    return m, k, n


def rel_frobenius(c: np.ndarray, ref: np.ndarray) -> float:
    """||C - ref||_F / ||ref||_F (paper Eq. 10), in float64."""
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


# -- cuBLAS -------------------------------------------------------------------------------------

def _cublas_library() -> str | None:
    """A loadable libcublas: the nvidia-cublas wheel, the system's, or a CUDA toolkit's."""
    import site

    roots = [*site.getsitepackages(), site.getusersitepackages()]
    found = [p for r in roots for p in glob.glob(os.path.join(r, "nvidia", "cu*", "lib", "libcublas.so*"))]
    found += [p for p in [ctypes.util.find_library("cublas")] if p]
    found += sorted(glob.glob("/usr/local/cuda*/lib64/libcublas.so*"))
    return found[0] if found else None


class CupyBlas:
    """cuBLAS through cupy (``cupy.matmul`` calls cublasSgemm/cublasDgemm)."""

    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cp = cupy

    def gemm(self, a: np.ndarray, b: np.ndarray, repeats: int) -> tuple[float, np.ndarray]:
        cp = self.cp
        da, db = cp.asarray(a), cp.asarray(b)
        out = cp.matmul(da, db)  # warm-up
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(repeats):
            cp.matmul(da, db, out=out)
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / repeats, cp.asnumpy(out)


class CtypesBlas:
    """cuBLAS through ctypes on mixjit's device buffers (row-major C = A B as column-major
    C^T = B^T A^T)."""

    name = "libcublas (ctypes)"

    def __init__(self, path: str, dev: Any) -> None:
        self.lib, self.dev = ctypes.CDLL(path), dev
        self.handle = ctypes.c_void_p()
        if self.lib.cublasCreate_v2(ctypes.byref(self.handle)) != 0:
            raise RuntimeError(f"cublasCreate failed ({path})")
        self.name = f"libcublas (ctypes: {os.path.basename(path)})"

    def gemm(self, a: np.ndarray, b: np.ndarray, repeats: int) -> tuple[float, np.ndarray]:
        dev, lib = self.dev, self.lib
        (m, k), n = a.shape, b.shape[1]
        f64 = a.dtype == np.float64
        scalar = ctypes.c_double if f64 else ctypes.c_float
        fn = lib.cublasDgemm_v2 if f64 else lib.cublasSgemm_v2
        one, zero = scalar(1.0), scalar(0.0)
        da, db, dc = dev.upload(a), dev.upload(b), dev.pool.take(m * n * a.itemsize)
        try:
            def run() -> None:
                status = fn(self.handle, 0, 0, n, m, k, ctypes.byref(one), ctypes.c_void_p(db.ptr), n,
                            ctypes.c_void_p(da.ptr), k, ctypes.byref(zero), ctypes.c_void_p(dc.ptr), n)
                if status != 0:
                    raise RuntimeError(f"cublas{'D' if f64 else 'S'}gemm failed: status {status}")

            run()
            ms = dev.time_ms(run, repeats)
            return ms, dev.download(dc, (m, n), a.dtype)
        finally:
            for buf in (da, db, dc):
                dev.pool.give(buf)


def find_cublas(dev: Any) -> Any:
    """cupy when importable, else libcublas through ctypes; None when neither is found."""
    try:
        return CupyBlas()
    except ImportError:
        pass
    path = _cublas_library()
    return CtypesBlas(path, dev) if path else None


# -- the measurements ---------------------------------------------------------------------------

def kernel_rows() -> list[Row]:
    from mixjit.runtime.cuda.device import probe
    from mixjit.runtime.cuda.launch import kernel_schemes, launcher_for
    from mixjit.runtime.schemes import get_scheme

    rows = []
    for name in kernel_schemes():
        if np.dtype(np.float32) not in get_scheme(name).dtypes:
            continue  # complex: its real kernels are rows already (complex operands are not measured here)
        for cfg in get_scheme(name).configs(np.float32):
            if not launcher_for(name).why_not(cfg.label, np.dtype(np.float32), probe().target):
                rows.append(Row(f"{name}:{cfg.label}", name, cfg.label))
    return rows


def measure(shapes: list[tuple[int, int, int]], repeats: int, seed: int, blas: Any, dev: Any) -> tuple[list[Row], list[dict]]:
    """Every row on every shape: records of (row key, shape, ms or None, error, note)."""
    from mixjit.runtime.cuda.launch import HandBack, launcher_for

    rows = [Row("sgemm", "cuBLAS SGEMM", "fp32"), Row("dgemm", "cuBLAS DGEMM", "fp64 operands"), *kernel_rows()]
    records = []
    for shape in shapes:
        m, k, n = shape
        rng = np.random.default_rng([seed, m, k, n])
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        for row in rows:
            progress(f"bench_cuda: {row.key} at {shape_text(shape)}")
            note, ms, c = "", None, None
            if row.key in ("sgemm", "dgemm"):
                x, y = (a, b) if row.key == "sgemm" else (a.astype(np.float64), b.astype(np.float64))
                ms, c = blas.gemm(x, y, repeats)
            else:
                launcher = launcher_for(row.label)
                with dev.lock:
                    try:
                        launch = launcher.prepare(dev, a, b, row.config)  # host steps before the kernels
                    except HandBack as exc:  # e.g. a K beyond exact INT32 sums
                        launch, ms, note = None, None, f"handed back: {exc}"
                    if launch is not None:
                        try:
                            launch.enqueue(0)  # warm-up (and the module load)
                            ms = dev.time_ms(lambda: launch.enqueue(0), repeats)
                            c = launch.finish()
                        except HandBack as exc:
                            ms, note = None, f"handed back: {exc}"
                        finally:
                            launch.release()
            records.append({"row": row.key, "shape": list(shape), "ms": ms,
                            "error": rel_frobenius(c, ref) if c is not None else None, "note": note})
    return rows, records


def render(rows: list[Row], records: list[dict], shapes: list[tuple[int, int, int]], header: list[str]) -> str:
    """The two tables (time and speedup over SGEMM; error), as Markdown."""
    at = {(r["row"], tuple(r["shape"])): r for r in records}

    def time_cell(row: Row, shape: tuple[int, int, int]) -> str:
        rec, base = at.get((row.key, shape)), at.get(("sgemm", shape))
        if rec is None or rec["ms"] is None:
            return rec["note"] if rec else "-"
        speedup = base["ms"] / rec["ms"] if base and base["ms"] else None
        return f"{rec['ms']:.3f} ms" + (f" ({speedup:.2f}×)" if speedup else "")

    def error_cell(row: Row, shape: tuple[int, int, int]) -> str:
        rec = at.get((row.key, shape))
        return fmt_sci(rec["error"]) if rec else "-"

    cols = ["row", "config", *(shape_text(s) for s in shapes)]
    out = [*header, "", "### Device time per GEMM (speedup over cuBLAS SGEMM), measured", ""]
    out += markdown_table(cols, [[r.label, r.config, *(time_cell(r, s) for s in shapes)] for r in rows])
    untimed = [f"{name}: {what}" for name, what in HOST_STEPS.items() if any(r.label == name for r in rows)]
    if untimed:
        out += ["", "Device time only; these host steps are not in it: " + "; ".join(untimed) + "."]
    out += ["", "### Relative Frobenius error against the FP64 product (paper Eq. 10)", ""]
    out += markdown_table(cols, [[r.label, r.config, *(error_cell(r, s) for s in shapes)] for r in rows])
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small shapes {[shape_text(s) for s in QUICK]}")
    p.add_argument("--shapes", type=parse_shape, nargs="+", metavar="MxKxN",
                   help="shapes (default: squares 1024..8192 and tall-skinny shapes)")
    p.add_argument("--repeats", type=int, default=10, help="timed runs per row and shape (after one warm-up)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--json", type=pathlib.Path, help="also write every record as JSON here")
    p.add_argument("--write-docs", action="store_true", help=f"update {DOCS.relative_to(ROOT)}")
    args = p.parse_args(argv)
    if args.quick and args.shapes:
        p.error("--quick picks its own shapes; drop --shapes or --quick")
    if args.write_docs and args.quick:
        p.error("--write-docs needs a full run; quick numbers do not go into the docs")
    from mixjit.runtime.cuda.device import device, probe

    status = probe()
    if not status.available:
        print(f"bench_cuda: no CUDA device: {status.reason}. Nothing was measured "
              "(docs/cuda_launch.md: this benchmark has never run).", file=sys.stderr)
        return EXIT_NO_DEVICE
    dev = device()
    blas = find_cublas(dev)
    if blas is None:
        print("bench_cuda: cuBLAS not found: install cupy (`pip install cupy-cuda12x`) or the cuBLAS wheel "
              "(`pip install nvidia-cublas`). Nothing was measured.", file=sys.stderr)
        return EXIT_NO_CUBLAS
    shapes = list(args.shapes or (QUICK if args.quick else SQUARE + TALL_SKINNY))
    rows, records = measure(shapes, args.repeats, args.seed, blas, dev)
    header = provenance(["python", "tools/bench_cuda.py", *sys.argv[1:]], args.seed)
    header.append(f"- device: {status.name} ({status.arch}), cuBLAS through {blas.name}, {args.repeats} timed runs")
    text = render(rows, records, shapes, header)
    print(text)
    if args.json:
        write_json(args.json, {"device": status.name, "arch": status.arch, "blas": blas.name,
                               "shapes": shapes, "repeats": args.repeats, "seed": args.seed,
                               "rows": [r.__dict__ for r in rows], "records": records})
    if args.write_docs:
        replace_generated_section(DOCS, SECTION, text)
        progress(f"bench_cuda: wrote {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
