"""The Ozaki-II launcher (runtime/ozaki2/cuda/desc.py): host shifts, residue kernels, the batched INT8
residue GEMM, the exact CRT on the host.

As the CPU executor (runtime/ozaki2/executor.py, fast mode), by its own compiled functions: the
per-row/column shifts before the launch (:func:`mixjit.runtime.ozaki2.cuda.fragments.host_shifts`),
and the CRT reconstruction with the single rounding after it
(:func:`mixjit.runtime.ozaki2.cuda.host.reconstruct`). Every step is integer-exact, so C
is bit-equal to the CPU executor's; an inf/NaN input sets the status word and hands the GEMM back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _I32, _I64, _PTR, DescLauncher, HandBack, register_launcher

__all__ = ["Ozaki2Launcher"]


class Ozaki2Launcher(DescLauncher):
    """ozaki2 (fast mode): residues of A and B per modulus, one INT8 GEMM per modulus (grid.z)."""

    scheme = "ozaki2"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        from mixjit.runtime.ozaki2.cuda.fragments import host_shifts  # numba: loaded on first use
        from mixjit.runtime.ozaki2.cuda.host import reconstruct

        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        try:
            res_a, res_b, gemm = desc.launches(m, n, k)
        except ValueError as exc:  # K beyond exact INT32 residue sums
            raise HandBack(str(exc)) from None
        m_pad, n_pad, k_pad = desc.padded(m, n, k)
        sa, sb = host_shifts(a, b, desc.moduli)
        da, db = bufs.upload(a), bufs.upload(b)
        dsa, dsb = bufs.upload(sa.astype(np.int32)), bufs.upload(sb.astype(np.int32))
        pa, pb = bufs.take(desc.moduli * m_pad * k_pad), bufs.take(desc.moduli * n_pad * k_pad)
        res = bufs.take(2 * desc.moduli * m * n)  # int16 residues, one m x n plane per modulus
        status = bufs.zeros(4)
        ptr = _PTR
        residue_types = (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr, ptr)

        def enqueue(stream: Any) -> None:
            self.launch(dev, functions[res_a.entry], res_a,
                        (da.ptr, k, m, k, m_pad, k_pad, dsa.ptr, pa.ptr, status.ptr), residue_types, stream)
            self.launch(dev, functions[res_b.entry], res_b,
                        (db.ptr, n, n, k, n_pad, k_pad, dsb.ptr, pb.ptr, status.ptr), residue_types, stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (pa.ptr, pb.ptr, m, n, m_pad, n_pad, k_pad, res.ptr, n, m * n),
                        (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _I64), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            residues = dev.download(res, (desc.moduli, m, n), np.dtype(np.int16))
            return reconstruct(residues, sa, sb, dtype == np.float32).astype(dtype, copy=False)

        return enqueue, finish


register_launcher(Ozaki2Launcher())
