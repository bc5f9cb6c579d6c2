"""The complex launcher: a complex GEMM as the real scheme's launches for the parts, then ``complex_combine``.

For ``form=4,real=<scheme>(<config>)`` on complex64 (complex128) operands: the parts are split on
the host (runtime/complex/cuda/host.py, form 3's sums there too), the real scheme's own launcher
prepares and queues each of the ``form`` real products on the stream (its kernels, its host steps,
its status word), and ``finish`` takes their products (a real launcher returns its C on the host:
Ozaki-II forms it there with the CRT), uploads them and runs the epilogue kernel, which writes the
interleaved complex C. A real product's status hands the whole GEMM back (HandBack: the complex
wrapper's CPU executor runs it). Bit-equal to that executor exactly when the real kernels are
(MixPert, Ozaki-II, vitbit, split with ``fp16=0``): ``inexact`` is the real launcher's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixjit.runtime.complex.cuda.desc import PART_DTYPES, ComplexDesc
from mixjit.runtime.complex.cuda.host import part_operands
from mixjit.runtime.complex.label import split_complex_label
from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.device import CudaDevice
from mixjit.runtime.cuda.launch import (
    _F64,
    _I32,
    _I64,
    _PTR,
    BufferSet,
    DescLauncher,
    KernelLauncher,
    PreparedGemm,
    kernel_binary,
    kernel_desc_for,
    launcher_for,
    register_launcher,
)
from mixjit.runtime.schemes import catalog

__all__ = ["ComplexLauncher"]

#: complex_combine's parameters (templates/complex_combine.cu)
COMBINE_TYPES = (_PTR, _PTR, _PTR, _PTR, _I32, _I32, _I32, _PTR, _I64, _F64, _F64, _PTR, _I64)


class ComplexLauncher(KernelLauncher):
    """complex: the real launcher's kernels per product of the parts, then the complex epilogue."""

    scheme = "complex"

    def desc(self, config: str, dtype: np.dtype, arch: str) -> ComplexDesc:
        """The desc of ``config`` for complex ``dtype`` operands on ``arch`` (cached per parts' dtype)."""
        return kernel_desc_for(self.scheme, config, np.finfo(dtype).dtype, arch)

    def why_not(self, config: str, dtype: np.dtype, arch: str) -> str:
        dt = np.dtype(dtype)
        if dt.name not in PART_DTYPES:
            return f"{dt} operands (the complex kernels take complex64 or complex128)"
        try:
            desc = self.desc(config, dt, arch)
        except (UnsupportedConfig, ValueError) as exc:
            return str(exc)
        real = launcher_for(desc.real.scheme)
        if real is None:
            return f"the real scheme {desc.real.scheme!r} has kernels but no launcher"
        return real.why_not(desc.real.config, np.finfo(dt).dtype, arch)

    def inexact(self, config: str) -> str:
        _, scheme, real_config = split_complex_label(config)
        scheme, real_config = catalog.alias_table().get(scheme, (scheme, real_config))
        real = launcher_for(scheme)
        return real.inexact(real_config) if real is not None else ""

    def prepare(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> PreparedGemm:
        desc = self.desc(config, a.dtype, dev.status.target)
        real = launcher_for(desc.real.scheme)
        if real is None:
            raise UnsupportedConfig(f"cuda: the real scheme {desc.real.scheme!r} has kernels but no launcher")
        (m, k), n = a.shape, b.shape[1]
        combine, = desc.launches(m, n, k)
        bufs = BufferSet(dev)
        try:
            function, = dev.functions(kernel_binary(desc), desc.entry_points)
            products = []
            for x, y in part_operands(a, b, desc.products()):
                part = real.prepare(dev, x, y, desc.real.config)
                for buf in part.buffers:
                    bufs.keep(buf)  # released with this GEMM's own buffers
                products.append(part)
            out = bufs.take(a.dtype.itemsize * m * n)
        except BaseException:
            bufs.release()
            raise

        def enqueue(stream: Any) -> None:
            for part in products:
                part.enqueue(stream)

        def finish() -> np.ndarray:
            parts = [bufs.upload(part.finish()) for part in products]  # HandBack: a real product's status
            ptrs = [p.ptr for p in parts] + [parts[-1].ptr] * (4 - len(parts))  # form 3 reads no p3
            DescLauncher.launch(dev, function, combine, (*ptrs, n, m, n, out.ptr, n, 1.0, 0.0, out.ptr, n),
                                COMBINE_TYPES, 0)
            return dev.download(out, (m, n), a.dtype)

        return PreparedGemm(dev, enqueue, finish, bufs.items)


register_launcher(ComplexLauncher())
