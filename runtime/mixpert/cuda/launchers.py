"""MixPert's launcher: pack A, pack B, the INT8 MMA GEMM with the exact epilogue (mixpert/cuda/desc.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _F64, _I32, _I64, _PTR, DescLauncher, register_launcher

__all__ = ["MixpertLauncher"]


class MixpertLauncher(DescLauncher):
    """MixPert: pack A, pack B (INT8 segment planes, per-tile exponents), the INT8 MMA GEMM with
    the exact epilogue, in ``product`` mode; a non-zero status word hands the GEMM back."""

    scheme = "mixpert"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        pack_a, pack_b, gemm = desc.launches(m, n, k)
        tk = desc.tile[1]
        m_pad, n_pad, k_pad = pack_a.grid[1] * pack_a.block[1], pack_b.grid[1] * pack_b.block[1], pack_a.grid[0] * tk
        da, db = bufs.upload(a), bufs.upload(b)
        pa = bufs.take(len(desc.a_segments) * m_pad * k_pad)  # INT8 segment planes
        pb = bufs.take(len(desc.b_segments) * n_pad * k_pad)
        ga = bufs.take(4 * m_pad * k_pad // tk)  # int32 tile exponents
        gb = bufs.take(4 * n_pad * k_pad // tk)
        out = bufs.take(m * n * dtype.itemsize)
        status = bufs.zeros(4)
        ptr = _PTR  # a device pointer argument (an int address)

        def enqueue(stream: Any) -> None:
            pack_types = (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr, ptr)
            self.launch(dev, functions[pack_a.entry], pack_a,
                        (da.ptr, k, m, k, m_pad, k_pad, pa.ptr, ga.ptr, status.ptr), pack_types, stream)
            self.launch(dev, functions[pack_b.entry], pack_b,
                        (db.ptr, n, n, k, n_pad, k_pad, pb.ptr, gb.ptr, status.ptr), pack_types, stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (pa.ptr, pb.ptr, ga.ptr, gb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, 1.0, 0.0, out.ptr, n,
                         status.ptr),
                        (ptr, ptr, ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64, ptr),
                        stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


register_launcher(MixpertLauncher())
