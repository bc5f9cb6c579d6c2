"""The dfp scheme's launcher: row maxima, block exponents, quantizers, the INT8 GEMM (raw INT32
sums), the rescaling (dfp/cuda/desc.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _I32, _I64, _PTR, DescLauncher, HandBack, register_launcher

__all__ = ["DfpLauncher"]


class DfpLauncher(DescLauncher):
    """dfp (every width, both outputs; no carries): every step on the device, bit-equal to the CPU executor;
    an inf/NaN input (status word) or a K beyond exact INT32 sums hands the GEMM back."""

    scheme = "dfp"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        try:
            amax_a, amax_b, exps_a, exps_b, quant_a, quant_b, gemm, *out_amax, rescale = desc.launches(m, n, k)
        except ValueError as exc:  # K beyond exact INT32 sums
            raise HandBack(str(exc)) from None
        m_pad, n_pad, k_pad = desc.padded(m, n, k)
        per_a, per_b = desc.rows_per_block(m), desc.rows_per_block(n)
        da, db = bufs.upload(a), bufs.upload(b)
        ma, mb = bufs.take(8 * m), bufs.take(8 * n)  # row maxima (float64 bits)
        ea, eb = bufs.take(4 * desc.blocks(m)), bufs.take(4 * desc.blocks(n))  # block exponents
        batches = desc.batches
        pa, pb = bufs.take(batches * m_pad * k_pad), bufs.take(batches * n_pad * k_pad)  # INT8 planes
        ra, rb = bufs.take(8 * m), bufs.take(8 * n)  # row sums of q - 128 (two pieces)
        sums = bufs.take(4 * batches * m * n)  # INT32
        out = bufs.take(m * n * dtype.itemsize)
        status, top = bufs.zeros(4), bufs.zeros(8)  # the result's largest |V| (out=dfp)
        ptr = _PTR
        amax_types, exps_types = (ptr, _I64, _I32, ptr, ptr), (ptr, _I32, _I32, ptr)
        quant_types = (ptr, _I64, _I32, _I32, _I32, _I32, _I32, ptr, ptr, ptr)

        def enqueue(stream: Any) -> None:
            go = self.launch
            go(dev, functions[amax_a.entry], amax_a, (da.ptr, k, k, ma.ptr, status.ptr), amax_types, stream)
            go(dev, functions[amax_b.entry], amax_b, (db.ptr, n, k, mb.ptr, status.ptr), amax_types, stream)
            go(dev, functions[exps_a.entry], exps_a, (ma.ptr, m, per_a, ea.ptr), exps_types, stream)
            go(dev, functions[exps_b.entry], exps_b, (mb.ptr, n, per_b, eb.ptr), exps_types, stream)
            go(dev, functions[quant_a.entry], quant_a, (da.ptr, k, m, m_pad, k, k_pad, per_a, ea.ptr, pa.ptr, ra.ptr),
               quant_types, stream)
            go(dev, functions[quant_b.entry], quant_b, (db.ptr, n, n, n_pad, k, k_pad, per_b, eb.ptr, pb.ptr, rb.ptr),
               quant_types, stream)
            go(dev, functions[gemm.entry], gemm, (pa.ptr, pb.ptr, m, n, m_pad, n_pad, k_pad, sums.ptr, n, m * n),
               (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _I64), stream)
            exact_args = (sums.ptr, m, n, k, ea.ptr, per_a, eb.ptr, per_b, ra.ptr, rb.ptr)
            exact_types = (ptr, _I32, _I32, _I32, ptr, _I32, ptr, _I32, ptr, ptr)
            for launch in out_amax:
                go(dev, functions[launch.entry], launch, (*exact_args, top.ptr), (*exact_types, ptr), stream)
            go(dev, functions[rescale.entry], rescale, (*exact_args, top.ptr, out.ptr, n), (*exact_types, ptr, ptr, _I64),
               stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


register_launcher(DfpLauncher())
