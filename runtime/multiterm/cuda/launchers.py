"""The tf32x3, bf16xN and fp16x2 launchers (runtime/multiterm/cuda/desc.py): pack A, pack B, the float
MMA GEMM (fp16x2: the row shifts before, the rescaling after).

The packers split each element into the scheme's parts (one plane per part) and set a status bit
for an inf/NaN input, a leading part that rounds to inf, or a part below float32's normal range;
any of them hands the GEMM back to the CPU executor. The GEMM's FP32 accumulator is not
bit-specified by the PTX ISA, so C is within docs/cuda.md's bound of the CPU executor's, not
bit-equal to it (the gpu tests check the bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _F64, _I32, _I64, _PTR, DescLauncher, register_launcher

__all__ = ["MultiTermLauncher", "Fp16x2Launcher"]


class MultiTermLauncher(DescLauncher):
    """The kernels of one multi-term scheme (``tf32x3`` or ``bf16xn``)."""

    def inexact(self, config: str) -> str:
        return "FP32 tensor-core accumulation"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        pack_a, pack_b, gemm = desc.launches(m, n, k)
        m_pad, n_pad, k_pad = desc.padded(m, n, k)
        plane_bytes = desc.parts * k_pad * desc.fmt.part_bytes
        da, db = bufs.upload(a), bufs.upload(b)
        pa, pb = bufs.take(plane_bytes * m_pad), bufs.take(plane_bytes * n_pad)
        out = bufs.take(m * n * dtype.itemsize)
        status = bufs.zeros(4)
        ptr = _PTR
        pack_types = (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr)

        def enqueue(stream: Any) -> None:
            self.launch(dev, functions[pack_a.entry], pack_a, (da.ptr, k, m, k, m_pad, k_pad, pa.ptr, status.ptr),
                        pack_types, stream)
            self.launch(dev, functions[pack_b.entry], pack_b, (db.ptr, n, n, k, n_pad, k_pad, pb.ptr, status.ptr),
                        pack_types, stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (pa.ptr, pb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, 1.0, 0.0, out.ptr, n),
                        (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


class Fp16x2Launcher(MultiTermLauncher):
    """fp16x2: the shifts of A's rows and B's columns, the range-scaled FP16 packers, the GEMM into
    a temporary, the rescaling by 2^-(sigma_i + sigma_j); an inf/NaN input hands the GEMM back."""

    scheme = "fp16x2"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        sigma_a, sigma_b, pack_a, pack_b, gemm, rescale = desc.launches(m, n, k)
        m_pad, n_pad, k_pad = desc.padded(m, n, k)
        plane_bytes = desc.parts * k_pad * desc.fmt.part_bytes
        da, db = bufs.upload(a), bufs.upload(b)
        sa, sb = bufs.take(4 * m), bufs.take(4 * n)  # int shifts
        pa, pb = bufs.take(plane_bytes * m_pad), bufs.take(plane_bytes * n_pad)
        p, out = bufs.take(m * n * dtype.itemsize), bufs.take(m * n * dtype.itemsize)
        status = bufs.zeros(4)
        ptr = _PTR
        sigma_types, pack_types = (ptr, _I64, _I32, ptr, ptr), (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr)

        def enqueue(stream: Any) -> None:
            go = self.launch
            go(dev, functions[sigma_a.entry], sigma_a, (da.ptr, k, k, sa.ptr, status.ptr), sigma_types, stream)
            go(dev, functions[sigma_b.entry], sigma_b, (db.ptr, n, k, sb.ptr, status.ptr), sigma_types, stream)
            go(dev, functions[pack_a.entry], pack_a, (da.ptr, k, m, k, m_pad, k_pad, sa.ptr, pa.ptr), pack_types, stream)
            go(dev, functions[pack_b.entry], pack_b, (db.ptr, n, n, k, n_pad, k_pad, sb.ptr, pb.ptr), pack_types, stream)
            go(dev, functions[gemm.entry], gemm, (pa.ptr, pb.ptr, m, n, m_pad, n_pad, k_pad, p.ptr, n, 1.0, 0.0, p.ptr, n),
               (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64), stream)
            go(dev, functions[rescale.entry], rescale, (p.ptr, m, n, sa.ptr, sb.ptr, out.ptr, n),
               (ptr, _I32, _I32, ptr, ptr, ptr, _I64), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


# an alias (bf16x3) reaches a site as bf16xn[products=3]: no launcher of its own
for _scheme in ("tf32x3", "bf16xn"):
    register_launcher(MultiTermLauncher(_scheme))
register_launcher(Fp16x2Launcher())
