"""The int8 scheme's launcher: quantize A and B, the INT8 GEMM (raw INT32 sums), the dequantization
(int8/cuda/desc.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _I32, _I64, _PTR, DescLauncher, HandBack, register_launcher

__all__ = ["Int8Launcher"]


class Int8Launcher(DescLauncher):
    """int8 (``encoding=int8``): every step on the device, bit-equal to the CPU executor; an inf/NaN
    input (status word) or a K beyond exact INT32 sums hands the GEMM back."""

    scheme = "int8"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        try:
            quant_a, quant_b, gemm, dequant = desc.launches(m, n, k)
        except ValueError as exc:  # K beyond exact INT32 sums
            raise HandBack(str(exc)) from None
        m_pad, n_pad, k_pad = desc.padded(m, n, k)
        da, db = bufs.upload(a), bufs.upload(b)
        pa, pb = bufs.take(m_pad * k_pad), bufs.take(n_pad * k_pad)  # INT8 planes
        sa, sb = bufs.take(8 * m_pad), bufs.take(8 * n_pad)  # float64 scales
        sums = bufs.take(4 * m * n)  # INT32
        out = bufs.take(m * n * dtype.itemsize)
        status = bufs.zeros(4)
        ptr = _PTR
        quant_types = (ptr, _I64, _I32, _I32, _I32, ptr, ptr, ptr)

        def enqueue(stream: Any) -> None:
            self.launch(dev, functions[quant_a.entry], quant_a, (da.ptr, k, m, k, k_pad, pa.ptr, sa.ptr, status.ptr),
                        quant_types, stream)
            self.launch(dev, functions[quant_b.entry], quant_b, (db.ptr, n, n, k, k_pad, pb.ptr, sb.ptr, status.ptr),
                        quant_types, stream)
            self.launch(dev, functions[gemm.entry], gemm, (pa.ptr, pb.ptr, m, n, m_pad, n_pad, k_pad, sums.ptr, n, m * n),
                        (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _I64), stream)
            self.launch(dev, functions[dequant.entry], dequant, (sums.ptr, m, n, sa.ptr, sb.ptr, out.ptr, n),
                        (ptr, _I32, _I32, ptr, ptr, ptr, _I64), stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


register_launcher(Int8Launcher())
