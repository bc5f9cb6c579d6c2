"""Compile a rendered kernel to a cubin: nvcc when found, else NVRTC (pip wheel), cached on disk.

The cache lives under the user's cache directory (``$XDG_CACHE_HOME/mixjit/cuda`` or
``~/.cache/mixjit/cuda``, never the repository), keyed by the sha256 of the source, the arch,
the compiler and its flags. A compile error raises :class:`CudaBuildError`, which names the
kernel, and for each diagnostic the template file, its line and that line's text (the
generated source carries ``#line`` directives back to the templates).
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mixjit.runtime.cuda.emit import PARAMS_FILE, KernelSource, render_params, template_text

__all__ = ["Compiler", "CudaBuildError", "CompilerNotFound", "find_compiler", "build", "cache_dir", "Diagnostic"]

NVCC_FLAGS = ("-std=c++17", "-O3", "-lineinfo")


class CompilerNotFound(RuntimeError):
    """Neither nvcc nor NVRTC is available."""


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message mapped back to its template line."""

    template: str
    line: int
    text: str
    message: str

    def __str__(self) -> str:
        return f"{self.template}:{self.line}: {self.message}\n    {self.text.strip()}"


class CudaBuildError(RuntimeError):
    """A kernel failed to compile; ``diagnostics`` locate each error in its template."""

    def __init__(self, kernel: str, arch: str, diagnostics: list[Diagnostic], log: str) -> None:
        self.kernel, self.arch, self.diagnostics, self.log = kernel, arch, diagnostics, log
        where = "\n".join(str(d) for d in diagnostics) or log.strip()
        super().__init__(f"cuda: kernel {kernel} failed to compile for {arch}:\n{where}")


@dataclass(frozen=True)
class Compiler:
    """A CUDA compiler: ``kind`` is ``nvcc`` (path to the executable) or ``nvrtc`` (path to libnvrtc)."""

    kind: str
    path: str

    @property
    def ident(self) -> str:
        return f"{self.kind}:{self.path}:{' '.join(NVCC_FLAGS)}"


def _nvrtc_libraries() -> list[str]:
    found = []
    for entry in sys.path:
        found += glob.glob(os.path.join(entry, "nvidia", "*", "lib", "libnvrtc.so*"))
        found += glob.glob(os.path.join(entry, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*"))
    return sorted(p for p in found if "builtins" not in p)


def find_compiler(prefer: str | None = None) -> Compiler:
    """nvcc from PATH or /usr/local/cuda/bin, else NVRTC from the nvidia-cuda-nvrtc wheel.
    ``prefer`` = ``nvcc`` / ``nvrtc`` picks one. CompilerNotFound says what to install."""
    nvcc = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
    libs = _nvrtc_libraries()
    if prefer in (None, "nvcc") and nvcc:
        return Compiler("nvcc", nvcc)
    if prefer in (None, "nvrtc") and libs:
        return Compiler("nvrtc", libs[-1])
    raise CompilerNotFound(
        f"cuda: no CUDA compiler ({prefer or 'nvcc or NVRTC'}) found: put nvcc on PATH, or "
        "`pip install mixjit[cuda]` (nvidia-cuda-nvrtc)")


def cache_dir() -> Path:
    """The on-disk cubin cache (created on demand)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mixjit" / "cuda"


_DIAG = re.compile(r'^"?(?P<file>[^"(\n]+)"?\((?P<line>\d+)\): (?P<message>(?:catastrophic )?error.*)$', re.M)


def _diagnostics(log: str, kernel: KernelSource) -> list[Diagnostic]:
    out = []
    for m in _DIAG.finditer(log):
        template = os.path.basename(m["file"])
        line = int(m["line"])
        if template == PARAMS_FILE:
            lines = render_params(kernel.desc).splitlines()
        else:
            try:
                lines = template_text(template).splitlines()
            except (FileNotFoundError, OSError):
                lines = []
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        out.append(Diagnostic(template, line, text, m["message"]))
    return out


def _nvcc(compiler: Compiler, source: str, arch: str) -> tuple[bytes | None, str]:
    with tempfile.TemporaryDirectory(prefix="mixjit-cuda-") as tmp:
        src, cubin = os.path.join(tmp, "kernel.cu"), os.path.join(tmp, "kernel.cubin")
        Path(src).write_text(source)
        proc = subprocess.run([compiler.path, "-cubin", f"-arch={arch}", *NVCC_FLAGS, "-o", cubin, src],
                              capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            return None, proc.stderr + proc.stdout
        return Path(cubin).read_bytes(), proc.stderr


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"cuda: NVRTC {what} failed (nvrtcResult {rc})")


def _nvrtc(compiler: Compiler, source: str, arch: str) -> tuple[bytes | None, str]:
    lib = ctypes.CDLL(compiler.path)
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None), "create")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"-lineinfo"]
        argv = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace")
        if rc != 0:
            return None, text
        _check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "cubin size")
        cubin = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetCUBIN(prog, cubin), "cubin")
        return cubin.raw, text
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def build(kernel: KernelSource, arch: str | None = None, compiler: Compiler | None = None,
          cache: Path | None = None) -> Path:
    """The cubin of ``kernel`` for ``arch`` (default: its desc's), compiled once and cached by
    source hash. CudaBuildError on a compile error; CompilerNotFound without a compiler."""
    arch = arch or kernel.desc.arch
    compiler = compiler or find_compiler()
    key = hashlib.sha256(f"{kernel.source_hash}:{arch}:{compiler.ident}".encode()).hexdigest()[:32]
    directory = cache or cache_dir()
    path = directory / f"{kernel.desc.name}-{arch}-{key}.cubin"
    if path.exists():
        return path
    cubin, log = (_nvcc if compiler.kind == "nvcc" else _nvrtc)(compiler, kernel.source, arch)
    if cubin is None:
        raise CudaBuildError(kernel.desc.name, arch, _diagnostics(log, kernel), log)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(cubin)
    os.replace(tmp, path)  # atomic: concurrent builders never see a partial cubin
    return path
