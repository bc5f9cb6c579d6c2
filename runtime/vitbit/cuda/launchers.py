"""The VitBit launcher (runtime/vitbit/cuda/desc.py): host scales, pack A, pack B three ways, the fused GEMM.

As the CPU executor (runtime/vitbit/executor.py): each row's (A) and column's (B) scale
RN64(amax/q_max) on the host, by the executor's own compiled quantizer
(:func:`mixjit.runtime.vitbit.cuda.fragments.host_scales`); then on the device the A packer (one
int8 plane), the B packer (grid.z: the packed uint32 words of columns [0, N1), the converted float32
columns [N1, N1+N2), the int8 tensor-core columns after them, split by the desc's ratios with the
executor's ``column_split``) and the fused kernel whose tensor, INT and FP warps run at once. Every
path's integer sums are exact (packed fields never overflow at the config's ``acc``; FP32 sums stay
below 2^24 for ``fp_block`` products), and the epilogue dequantizes as the executor does, so C is
bit-equal to the CPU executor's. An inf/NaN input sets the status word and hands the GEMM back, as
does a K whose INT32 sums could overflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _F64, _I32, _I64, _PTR, DescLauncher, HandBack, register_launcher
from mixjit.runtime.vitbit.cuda.desc import column_split

__all__ = ["VitbitLauncher"]


class VitbitLauncher(DescLauncher):
    """vitbit: host scales, two packers, one fused kernel (tensor, INT and FP warp roles)."""

    scheme = "vitbit"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        from mixjit.runtime.vitbit.cuda.fragments import host_scales  # numba: loaded on first use

        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        try:
            pack_a, pack_b, gemm = desc.launches(m, n, k)
        except ValueError as exc:  # a K beyond exact INT32 sums
            raise HandBack(str(exc)) from None
        n1, n2, _ = column_split(n, desc.m_ratio, desc.n_ratio, desc.bits)
        pad = desc.padded(m, n, k)
        k_pad, g_pad, n2_pad, n3_pad = pad["k_pad"], pad["g_pad"], pad["n2_pad"], pad["n3_pad"]
        scale_a, scale_b = host_scales(a, b, desc.bits)
        da, db = bufs.upload(a), bufs.upload(b)
        dsa, dsb = bufs.upload(scale_a.astype(np.float64)), bufs.upload(scale_b.astype(np.float64))
        plane_a = bufs.take(pad["m_pad"] * k_pad)  # int8 [m_pad][k_pad]
        words = bufs.take(4 * k_pad * g_pad)  # uint32 [k_pad][g_pad]
        conv = bufs.take(4 * k_pad * n2_pad)  # float32 [k_pad][n2_pad]
        tens = bufs.take(n3_pad * k_pad)  # int8 [n3_pad][k_pad]
        out = bufs.take(m * n * dtype.itemsize)
        status = bufs.zeros(4)
        ptr = _PTR

        def enqueue(stream: Any) -> None:
            self.launch(dev, functions[pack_a.entry], pack_a,
                        (da.ptr, k, m, k, k_pad, dsa.ptr, plane_a.ptr, status.ptr),
                        (ptr, _I64, _I32, _I32, _I32, ptr, ptr, ptr), stream)
            self.launch(dev, functions[pack_b.entry], pack_b,
                        (db.ptr, n, n, k, k_pad, n1, n2, g_pad, n2_pad, n3_pad, dsb.ptr, words.ptr, conv.ptr,
                         tens.ptr, status.ptr),
                        (ptr, _I64, _I32, _I32, _I32, _I32, _I32, _I32, _I32, _I32, ptr, ptr, ptr, ptr, ptr), stream)
            self.launch(dev, functions[gemm.entry], gemm,
                        (plane_a.ptr, words.ptr, conv.ptr, tens.ptr, m, n, n1, n2, k_pad, g_pad, n2_pad, dsa.ptr,
                         dsb.ptr, out.ptr, n, 1.0, 0.0, out.ptr, n),
                        (ptr, ptr, ptr, ptr, _I32, _I32, _I32, _I32, _I32, _I32, _I32, ptr, ptr, ptr, _I64, _F64,
                         _F64, ptr, _I64), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


register_launcher(VitbitLauncher())
