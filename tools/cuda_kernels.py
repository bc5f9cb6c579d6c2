"""Build the CUDA kernels of every family for every target (ARCHS) and report them in docs/cuda.md.

    python tools/cuda_kernels.py [--configs level=IV level=I ...] [--archs sm_90 ...] [--no-write]

For each kernel (MixPert at ``--configs``, plus tf32x3, bf16xN, the Ozaki-II residue kernels,
split, vitbit, mixpert-fp64, int8, dfp and fp16x2 at fixed configs) and arch: the SASS instruction checks (the main loop's
tensor-core MMA count, FFMA and IMAD counts) and ptxas's resources per kernel (registers, shared memory, spills) from
``cuobjdump -res-usage``;
and the *modeled* cost of running the INT8 products with ``mma.sync`` instead of ``wgmma`` on
an H100 (runtime/model/costmodel.py with the hardware table's H100 minus its wgmma shapes). Writes
the generated sections ``cuda-kernels`` and ``cuda-wgmma`` of docs/cuda.md and
docs/results/figures/cuda_kernels.json. No GPU is used: nothing here is a measured GPU figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from common import ROOT, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit.runtime.cuda.build import build, find_compiler
from mixjit.runtime.cuda.desc import ARCHS, TARGETS
from mixjit.runtime.cuda.emit import render
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import opcode_counts, resource_usage, sass_by_kernel
from mixjit.runtime.mixpert.cuda.desc import KernelDesc
from mixjit.runtime.model.costmodel import modeled_time
from mixjit.runtime.model.hardware import get_hardware

DOC = ROOT / "docs" / "cuda.md"
RESULTS = ROOT / "docs" / "results" / "figures" / "cuda_kernels.json"
#: an *assumed* (unsourced) fraction of the INT8 peak that mma.sync sustains on Hopper, for the
#: sensitivity column only: the hardware table has no mma.sync issue rate for sm_90
ASSUMED_MMA_SYNC_FRACTION = 0.5
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (16384, 256, 16384)]


#: a non-default warp grid also reported, for comparison (16×32 per warp: twice the registers)
EXTRA_WARPS = [("level=full", (4, 1))]
#: the other families' kernels reported (scheme, config, desc fields)
OTHER_KERNELS = [("tf32x3", "products=3", {}), ("tf32x3", "products=1", {}), ("bf16xn", "products=9", {}),
                 ("bf16xn", "products=6", {}), ("bf16xn", "products=3", {}), ("ozaki2", "moduli=8", {}),
                 ("ozaki2", "moduli=14", {"dtype": "f64"}), ("split", "fp16=auto", {}),
                 ("split", "fp16=auto", {"block": (64, 128), "warps": (2, 2)}), ("vitbit", "bits=8", {}),
                 ("vitbit", "bits=4", {}),
                 ("mixpert-fp64", "segments=9,pairs=slices3sig2,tile=16x4096x8", {"dtype": "f64"}),
                 ("mixpert-fp64", "", {"dtype": "f64"}), ("int8", "", {}), ("dfp", "bits=16,block=1", {}), ("dfp", "bits=8,block=1", {}),
                 ("fp16x2", "products=3", {})]
#: the tensor-core MMA opcodes counted in each kernel: those of every target's SASS table
MMA_OPCODES = tuple(dict.fromkeys(op for t in TARGETS.values() for op in t.sass.values()))


def kernel_rows(configs: list[str], archs: tuple[str, ...] = ARCHS) -> tuple[list[list[str]], list[dict]]:
    compiler = find_compiler()
    rows, records = [], []
    default_warps = KernelDesc.for_config("mixpert", configs[0]).warps
    specs = [("mixpert", c, {"warps": default_warps}) for c in configs]
    specs += [("mixpert", c, {"warps": w}) for c, w in EXTRA_WARPS] + OTHER_KERNELS
    for scheme, config, fields in specs:
        for arch in archs:
            desc = kernel_desc(scheme, config, arch=arch, **fields)
            progress(f"building {desc.name} with {compiler.kind}")
            cubin = build(render(desc), compiler=compiler)
            sass = sass_by_kernel(cubin)
            for kernel, res in sorted(resource_usage(cubin).items()):
                ops = opcode_counts(sass[kernel])
                mma = {op: ops[op] for op in MMA_OPCODES if ops[op]}
                record = {"scheme": scheme, "config": config, "dtype": desc.dtype, "block": list(desc.block),
                          "warps": list(desc.warps), "arch": arch, "kernel": kernel, "registers": res.registers,
                          "shared_bytes": res.shared_bytes, "local_bytes": res.local_bytes, "mma": mma,
                          "ffma": ops["FFMA"], "imad": ops["IMAD"]}
                records.append(record)
                rows.append([f"`{scheme}[{config}]`", desc.dtype, f"{desc.block[0]}×{desc.block[1]}",
                             f"{desc.warps[0]}×{desc.warps[1]}", arch, f"`{kernel}`", str(res.registers),
                             str(res.shared_bytes), "yes" if res.spills else "no",
                             ", ".join(f"{v} {k}" for k, v in mma.items()) or "–", str(record["ffma"]),
                             str(record["imad"])])
    return rows, records


def wgmma_rows(configs: list[str]) -> tuple[list[list[str]], list[dict]]:
    h100 = get_hardware("h100")
    no_wgmma = dataclasses.replace(h100, wgmma={})
    slow = dataclasses.replace(no_wgmma, peak_tops={**h100.peak_tops,
                                                    "int8": h100.peak_tops["int8"] * ASSUMED_MMA_SYNC_FRACTION})
    rows, records = [], []
    for config in configs:
        for m, n, k in SHAPES:
            with_w = modeled_time("mixpert", config, m, n, k, "float32", h100).seconds
            without = modeled_time("mixpert", config, m, n, k, "float32", no_wgmma).seconds
            assumed = modeled_time("mixpert", config, m, n, k, "float32", slow).seconds
            sgemm = modeled_time("native", None, m, n, k, "float32", h100).seconds
            records.append({"config": config, "shape": [m, n, k], "modeled_wgmma_s": with_w,
                            "modeled_mma_sync_s": without, "modeled_mma_sync_assumed_fraction_s": assumed,
                            "assumed_fraction": ASSUMED_MMA_SYNC_FRACTION, "modeled_sgemm_s": sgemm})
            rows.append([f"`{config}`", f"{m}×{n}×{k}", f"{with_w * 1e3:.3g}", f"{without * 1e3:.3g}",
                         f"{assumed * 1e3:.3g}", f"{sgemm / with_w:.2f}×", f"{sgemm / without:.2f}×",
                         f"{sgemm / assumed:.2f}×"])
    return rows, records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["level=IV", "level=I", "level=full",
                                                         "level=IV,digits=balanced,align=row"])
    parser.add_argument("--archs", nargs="+", choices=ARCHS, default=list(ARCHS),
                        help="targets to build (default: all; a GPU check builds its device's alone)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/ alone")
    args = parser.parse_args(argv)
    if args.archs != list(ARCHS) and not args.no_write:
        parser.error("--archs builds part of the table: give --no-write too (docs/cuda.md lists every target)")
    krows, krecords = kernel_rows(args.configs, tuple(args.archs))
    wrows, wrecords = wgmma_rows(args.configs)
    head = provenance(["python", "tools/cuda_kernels.py", *(argv if argv is not None else sys.argv[1:])], None)
    kernels = "\n".join(head + [""] + markdown_table(
        ["kernel family[config]", "dtype", "block", "warps", "arch", "kernel", "registers", "static shared (B)",
         "spills", "tensor-core MMAs in SASS", "FFMA", "IMAD"], krows))
    wgmma = "\n".join(head + [""] + markdown_table(
        ["config", "m×n×k", "modeled ms (wgmma)", "modeled ms (mma.sync)",
         f"modeled ms (mma.sync at an assumed {ASSUMED_MMA_SYNC_FRACTION:g} of the INT8 peak)",
         "modeled speedup vs SGEMM (wgmma)", "modeled speedup vs SGEMM (mma.sync)",
         "modeled speedup vs SGEMM (assumed fraction)"], wrows))
    print(kernels + "\n\n" + wgmma)
    if not args.no_write:
        replace_generated_section(DOC, "cuda-kernels", kernels)
        replace_generated_section(DOC, "cuda-wgmma", wgmma)
        write_json(RESULTS, {"kernels": krecords, "wgmma_modeled": wrecords})
    return 0


if __name__ == "__main__":
    sys.exit(main())
