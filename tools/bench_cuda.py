"""GPU benchmark: the schemes' CUDA kernels against cuBLAS SGEMM and DGEMM.

**Never run**: no machine here has a GPU. Without a device it prints why on stderr and exits
with status 2, measuring nothing; without cuBLAS (cupy, the nvidia-cublas wheel, or a CUDA
toolkit's libcublas) it exits with status 3.

For square and tall-skinny m×k×n shapes and each operand dtype (``--dtypes``: float32, float64),
operands uniform in [-1, 1] (a fixed seed), each row's device time per GEMM (CUDA events around
``--repeats`` runs after one warm-up run, operands already on the device: the packing kernels are
timed, the uploads are not), its speedup over the dtype's cuBLAS GEMM (SGEMM, DGEMM), and its
relative Frobenius error against an exact product (paper Eq. 10, on the host: the FP64 product
of float32 operands; for float64 operands the double-double GEMM of tools/accuracy_reference.py).
Rows per dtype: the cuBLAS baseline (SGEMM without TF32, cuBLAS's default math mode, beside
DGEMM on the operands converted to float64; DGEMM), then every config of every scheme with a
CUDA kernel for that dtype (``mixjit.runtime.cuda.launch.kernel_schemes``): for float64 the
default FP64 scheme mixpert-fp64, ozaki2, and the FP32-class schemes on float64 operands. A row
whose kernels hand the GEMM back (docs/cuda.md) is marked so instead of timed.

The table has the accuracy table's form (tools/accuracy.py): a provenance header, then one
Markdown table per measure, a row per scheme/config, a column per shape.

Usage:
    python tools/bench_cuda.py [--quick] [--shapes MxKxN ...] [--dtypes float32 float64] [--repeats R]
                               [--json PATH] [--write-docs]

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
DTYPES = ("float32", "float64")
#: each dtype's cuBLAS baseline row: the speedup column's denominator
BASELINE = {"float32": "float32:sgemm", "float64": "float64:dgemm"}


#: the host work a launcher does outside the timed kernels (docs/cuda_launch.md)
HOST_STEPS = {"ozaki2": "the shifts before and the CRT reconstruction after (CPU, O(N^2) per element)",
              "split": "the slice ranking, scales and shifts before (CPU)"}


@dataclass(frozen=True)
class Row:
    """One benchmark row: its record key (``<dtype>:<scheme or cuBLAS routine>[:<config>]``), what the
    table calls it (cuBLAS, or the scheme's name), its config and its operands' dtype."""

    key: str
    label: str
    config: str
    dtype: str = "float32"


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

def kernel_rows(dtype: str, target: str) -> list[Row]:
    """Every config of every scheme whose kernels take ``dtype`` operands on ``target``."""
    from mixjit.runtime.cuda.launch import kernel_schemes, launcher_for
    from mixjit.runtime.schemes import get_scheme

    rows = []
    dt = np.dtype(dtype)
    for name in kernel_schemes():
        if dt not in get_scheme(name).dtypes:
            continue  # complex: its real kernels are rows already (complex operands are not measured here)
        for cfg in get_scheme(name).configs(dt):
            if not launcher_for(name).why_not(cfg.label, dt, target):
                rows.append(Row(f"{dtype}:{name}:{cfg.label}", name, cfg.label, dtype))
    return rows


def baseline_rows(dtype: str) -> list[Row]:
    """The cuBLAS rows of ``dtype`` (float32: SGEMM, then DGEMM on the converted operands)."""
    if dtype == "float32":
        return [Row("float32:sgemm", "cuBLAS SGEMM", "fp32"), Row("float32:dgemm", "cuBLAS DGEMM", "fp64 operands")]
    return [Row("float64:dgemm", "cuBLAS DGEMM", "fp64", "float64")]


def exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The error's yardstick: the FP64 product of float32 operands (exact to far below FP32 errors);
    for float64 operands the double-double GEMM (tools/accuracy_reference.py)."""
    if a.dtype == np.float32:
        return a.astype(np.float64) @ b.astype(np.float64)
    from accuracy_reference import dd_gemm

    return dd_gemm(a, b)[0]


def measure(shapes: list[tuple[int, int, int]], repeats: int, seed: int, blas: Any, dev: Any,
            dtypes: tuple[str, ...] = DTYPES) -> tuple[list[Row], list[dict]]:
    """Every row on every shape: records of (row key, shape, ms or None, error, note)."""
    from mixjit.runtime.cuda.launch import HandBack, launcher_for

    rows = [r for dtype in dtypes for r in (*baseline_rows(dtype), *kernel_rows(dtype, dev.status.target))]
    records = []
    for shape in shapes:
        m, k, n = shape
        rng = np.random.default_rng([seed, m, k, n])
        a64, b64 = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        operands = {d: (a64.astype(d), b64.astype(d)) for d in dtypes}
        refs = {d: exact_product(*operands[d]) for d in dtypes}
        for row in rows:
            progress(f"bench_cuda: {row.key} at {shape_text(shape)}")
            note, ms, c = "", None, None
            a, b = operands[row.dtype]
            ref = refs[row.dtype]
            if row.label.startswith("cuBLAS"):
                x, y = (a, b) if row.label == "cuBLAS SGEMM" else (a.astype(np.float64), b.astype(np.float64))
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
    """Per dtype, the two tables (time and speedup over the dtype's cuBLAS GEMM; error), as Markdown."""
    at = {(r["row"], tuple(r["shape"])): r for r in records}

    def time_cell(row: Row, shape: tuple[int, int, int]) -> str:
        rec, base = at.get((row.key, shape)), at.get((BASELINE[row.dtype], shape))
        if rec is None or rec["ms"] is None:
            return rec["note"] if rec else "-"
        speedup = base["ms"] / rec["ms"] if base and base["ms"] else None
        return f"{rec['ms']:.3f} ms" + (f" ({speedup:.2f}×)" if speedup else "")

    def error_cell(row: Row, shape: tuple[int, int, int]) -> str:
        rec = at.get((row.key, shape))
        return fmt_sci(rec["error"]) if rec else "-"

    cols = ["row", "config", *(shape_text(s) for s in shapes)]
    out = list(header)
    for dtype in [d for d in DTYPES if any(r.dtype == d for r in rows)]:
        mine = [r for r in rows if r.dtype == dtype]
        base = "SGEMM" if dtype == "float32" else "DGEMM"
        yardstick = "the FP64 product" if dtype == "float32" else "the double-double product"
        out += ["", f"### {dtype} operands: device time per GEMM (speedup over cuBLAS {base}), measured", ""]
        out += markdown_table(cols, [[r.label, r.config, *(time_cell(r, s) for s in shapes)] for r in mine])
        untimed = [f"{name}: {what}" for name, what in HOST_STEPS.items() if any(r.label == name for r in mine)]
        if untimed:
            out += ["", "Device time only; these host steps are not in it: " + "; ".join(untimed) + "."]
        out += ["", f"### {dtype} operands: relative Frobenius error against {yardstick} (paper Eq. 10)", ""]
        out += markdown_table(cols, [[r.label, r.config, *(error_cell(r, s) for s in shapes)] for r in mine])
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small shapes {[shape_text(s) for s in QUICK]}")
    p.add_argument("--shapes", type=parse_shape, nargs="+", metavar="MxKxN",
                   help="shapes (default: squares 1024..8192 and tall-skinny shapes)")
    p.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES), help="operand dtypes (default: both)")
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
    rows, records = measure(shapes, args.repeats, args.seed, blas, dev, tuple(args.dtypes))
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
