"""The split launcher (runtime/split/cuda/desc.py): the patent's INT8 and FP16 sub-GEMMs on two streams.

Host first, as the CPU executor does (:func:`mixjit.runtime.split.cuda.fragments.host_plan`: the
executor's own slice ranking and partition sizes choose the FP16 columns; the INT8 scales and FP16
shifts). Then on the device: pack A and pack B (both planes), the INT8 GEMM and the FP16 GEMM
concurrently (:meth:`mixjit.runtime.cuda.device.CudaDevice.concurrently`, one stream per part, in
the desc's stream order), and the combine, which waits for both. An inf/NaN input sets the status
word and hands the GEMM back. The FP16 part's FP32 accumulator is not bit-specified, so C is
bit-equal to the CPU executor's where that part is empty (``fp16=0``) and within docs/cuda.md's
bound elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.cuda.launch import _F64, _I32, _I64, _PTR, DescLauncher, HandBack, register_launcher

__all__ = ["SplitLauncher"]


class SplitLauncher(DescLauncher):
    """split (``encoding=int8``, the default): two packers, two sub-GEMMs on two streams, the combine."""

    scheme = "split"

    def inexact(self, config: str) -> str:
        from mixjit.runtime.split.cuda.desc import parse_split_label

        fp16 = parse_split_label(config)["fp16"]
        return "" if fp16 != "auto" and float(fp16) == 0.0 else "the FP16 part's FP32 tensor-core accumulation"

    def queue(self, dev, desc, functions, bufs, a, b, config):
        from mixjit.runtime.schemes import get_scheme
        from mixjit.runtime.split.cuda.fragments import host_plan  # numba: loaded on first use

        dtype = np.dtype(a.dtype)
        (m, k), n = a.shape, b.shape[1]
        words = np.asarray(get_scheme("split").parse_config(config).words(), np.int64)
        plan = host_plan(a, b, words)
        k_i, k_f = plan.cols_i.size, plan.cols_f.size
        try:
            pack_a, pack_b, *gemms, combine = desc.launches(m, n, k, k_f)
        except ValueError as exc:  # an INT8 K beyond exact INT32 sums
            raise HandBack(str(exc)) from None
        m_pad, n_pad, ki_pad, kf_pad = desc.padded(m, n, k_i, k_f)
        da, db = bufs.upload(a), bufs.upload(b)
        cols_i, cols_f = bufs.upload(plan.cols_i.astype(np.int32)), bufs.upload(plan.cols_f.astype(np.int32))
        scale_a, scale_b = bufs.upload(plan.scale_a.astype(np.float64)), bufs.upload(plan.scale_b.astype(np.float64))
        sigma_a, sigma_b = bufs.upload(plan.sigma_a.astype(np.int32)), bufs.upload(plan.sigma_b.astype(np.int32))
        a8, a16 = bufs.take(m_pad * ki_pad), bufs.take(2 * m_pad * kf_pad)
        b8, b16 = bufs.take(n_pad * ki_pad), bufs.take(2 * n_pad * kf_pad)
        s8, s16 = bufs.take(4 * m * n), bufs.take(dtype.itemsize * m * n)  # INT32 sums, FP32-accumulated sums
        out = bufs.take(dtype.itemsize * m * n)
        status = bufs.zeros(4)
        ptr = _PTR
        pack_types = (ptr, _I64, _I32, ptr, _I32, _I32, ptr, _I32, _I32, _I32, ptr, ptr, ptr, ptr, ptr)
        sub_gemms = {
            "int8_gemm": ((a8.ptr, b8.ptr, m, n, m_pad, n_pad, ki_pad, s8.ptr, n, m * n),
                          (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _I64)),
            "multiterm_gemm": ((a16.ptr, b16.ptr, m, n, m_pad, n_pad, kf_pad, s16.ptr, n, 1.0, 0.0, s16.ptr, n),
                               (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64)),
        }

        def part(geometry) -> Any:
            args, types = sub_gemms[geometry.entry]
            return lambda stream: self.launch(dev, functions[geometry.entry], geometry, args, types, stream)

        def enqueue(stream: Any) -> None:
            self.launch(dev, functions[pack_a.entry], pack_a,
                        (da.ptr, k, m, cols_i.ptr, k_i, ki_pad, cols_f.ptr, k_f, kf_pad, m_pad, scale_a.ptr,
                         sigma_a.ptr, a8.ptr, a16.ptr, status.ptr), pack_types, stream)
            self.launch(dev, functions[pack_b.entry], pack_b,
                        (db.ptr, n, n, cols_i.ptr, k_i, ki_pad, cols_f.ptr, k_f, kf_pad, n_pad, scale_b.ptr,
                         sigma_b.ptr, b8.ptr, b16.ptr, status.ptr), pack_types, stream)
            # the sub-GEMMs after the packers, side by side; the default stream waits for both
            dev.concurrently([part(g) for g in sorted(gemms, key=lambda g: g.stream)])
            self.launch(dev, functions[combine.entry], combine,
                        (s8.ptr, s16.ptr, n, m, n, int(k_i > 0), int(k_f > 0), scale_a.ptr, scale_b.ptr, sigma_a.ptr,
                         sigma_b.ptr, out.ptr, n, 1.0, 0.0, out.ptr, n),
                        (ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, ptr, ptr, ptr, ptr, _I64, _F64, _F64, ptr, _I64),
                        stream)

        def finish() -> np.ndarray:
            self.check_status(dev, status)
            return dev.download(out, (m, n), dtype)

        return enqueue, finish


register_launcher(SplitLauncher())
