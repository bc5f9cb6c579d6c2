"""MixPert's launchers: pack A, pack B, the INT8 MMA GEMM with the exact epilogue (mixpert/cuda/desc.py),
and mixpert-fp64's (mixpert/cuda/fp64_desc.py), whose step 6 then runs on the host (host_check.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _F64, _I32, _I64, _PTR, DescLauncher, register_launcher

__all__ = ["MixpertLauncher", "MixpertFp64Launcher"]


class _PackingLauncher(DescLauncher):
    """The launches both MixPert launchers share: the packers of A and B."""

    def launch_packs(self, dev: Any, functions: dict[str, Any], packs: tuple, side_a: tuple, side_b: tuple, k: int,
                     k_pad: int, status: Any, stream: Any) -> None:
        """pack A then pack B (``packs``: their Launch); ``side_*`` = (operand, planes, exponents,
        rows, padded rows) buffers and sizes; A is read row-major (ld = k), B as k×n (ld = n)."""
        pack_types = (_PTR, _I64, _I32, _I32, _I32, _I32, _PTR, _PTR, _PTR)
        for geometry, (src, planes, gexp, rows, rows_pad), ld in zip(packs, (side_a, side_b), (k, side_b[3])):
            self.launch(dev, functions[geometry.entry], geometry,
                        (src.ptr, ld, rows, k, rows_pad, k_pad, planes.ptr, gexp.ptr, status.ptr), pack_types, stream)


class MixpertLauncher(_PackingLauncher):
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
            self.launch_packs(dev, functions, (pack_a, pack_b), (da, pa, ga, m, m_pad), (db, pb, gb, n, n_pad), k, k_pad,
                              status, stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (pa.ptr, pb.ptr, ga.ptr, gb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, 1.0, 0.0, out.ptr, n,
                         status.ptr),
                        (ptr, ptr, ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64, ptr),
                        stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


class MixpertFp64Launcher(_PackingLauncher):
    """mixpert-fp64: pack A, pack B (INT8 segment planes of the float64 split, per-group exponents),
    the INT8 MMA GEMM writing P = RN64(X); then, on the host, the guarantee check and its
    recomputations (host_check.guarantee_on_host), so C has the CPU executor's bits. A non-zero
    status word (an inf/NaN input, a span too wide for the exact accumulator) hands the GEMM back."""

    scheme = "mixpert-fp64"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        from mixjit.runtime.mixpert.cuda.host_check import guarantee_on_host
        from mixjit.runtime.schemes import get_scheme

        words = np.array(get_scheme(self.scheme).parse_config(config).words(), np.int64)
        (m, k), n = a.shape, b.shape[1]
        pack_a, pack_b, gemm = desc.launches(m, n, k)
        ktiles, k_pad = pack_a.grid[0], desc.k_pad(k)
        m_pad, n_pad = pack_a.grid[1] * desc.tile[0], pack_b.grid[1] * desc.tile[2]
        da, db = bufs.upload(a), bufs.upload(b)
        pa = bufs.take(len(desc.a_segments) * m_pad * k_pad)  # INT8 segment planes
        pb = bufs.take(len(desc.b_segments) * n_pad * k_pad)
        ga = bufs.take(4 * m_pad * ktiles)  # int32 group exponents
        gb = bufs.take(4 * n_pad * ktiles)
        out = bufs.take(m * n * 8)
        status = bufs.zeros(4)
        ptr = _PTR

        def enqueue(stream: Any) -> None:
            self.launch_packs(dev, functions, (pack_a, pack_b), (da, pa, ga, m, m_pad), (db, pb, gb, n, n_pad), k, k_pad,
                              status, stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (pa.ptr, pb.ptr, ga.ptr, gb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, status.ptr),
                        (ptr, ptr, ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, ptr), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            p = np.array(dev.download(out, (m, n), np.dtype(np.float64)))  # writable: step 6 updates it
            guarantee_on_host(a, b, p, words)
            return p

        return enqueue, finish


register_launcher(MixpertLauncher())
register_launcher(MixpertFp64Launcher())
