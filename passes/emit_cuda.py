"""``emit-cuda{arch=sm_80}``: generate the CUDA kernels of the module's GEMM sites.

For each ``mix.gemm`` the pass takes its chosen candidate: the tune pass's ``mix.plan``
(``{scheme, config, ...}``), else the frontend's ``mix.runs`` (the plan the compiled site runs),
else the default scheme for its dtype at its most precise config (``mixpert[segments=4,pairs=sig6,align=row]``
for f32, form 4 over it for complex<f32>). It renders the kernel of that scheme's family
(runtime/cuda/registry.py: mixpert, tf32x3, bf16xN, ...) for that config, dtype, transposes and
alpha/beta mode (:class:`~mixjit.runtime.cuda.desc.KernelDesc`), and attaches one ``mix.kernel``
op per distinct kernel to the module (name, scheme, config, arch, source hash, file, sites). A
complex site (the ``complex`` wrapper, docs/cuda.md "Complex sites") gets two: the real scheme's
kernel for the parts' products (in product mode, shared with real sites of the same desc) and
the complex epilogue (its alpha/beta mode). A site whose scheme or config has no CUDA kernel
gets a remark saying why (for a complex site: which real config has none); it keeps its CPU
executor.

The pass only renders (no compiler, no I/O, no numba); ``mixopt --emit-dir DIR`` writes the
sources and a manifest with :func:`write_kernels`, only inside DIR: a ``file`` that is not a
plain file name (a dump is untrusted) is an error at its op and nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mixjit.ir.attributes import ArrayAttr, DictAttr, IntegerAttr, StringAttr
from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects.mix import GemmOp, KernelOp
from mixjit.ir.types import FloatType, i64
from mixjit.passes.files import plain_name_problem, write_atomic
from mixjit.passes.pass_base import ModulePass, OptionError, PassContext, option
from mixjit.passes.registry import register_pass
from mixjit.passes.tuning.plan_attr import PLAN_ATTR
from mixjit.passes.tuning.sites import gemm_sites, site_loc
from mixjit.runtime.cuda.desc import ARCHS, KernelSpec, UnsupportedConfig
from mixjit.runtime.cuda.emit import KernelSource, render
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.mixpert.cuda.desc import MOST_PRECISE

__all__ = ["EmitCuda", "RUNS_ATTR", "site_choice", "site_kernels", "KernelFile", "kernel_files", "write_kernel_files",
           "write_kernels", "MANIFEST"]

#: the frontend's plan attribute (mixjit/decorator.py RUNS_ATTR; passes may not import mixjit)
RUNS_ATTR = "mix.runs"
MANIFEST = "manifest.json"
_DEFAULT_SCHEME = {"f32": ("mixpert", MOST_PRECISE), "f64": ("mixpert-fp64", ""),
                   "complex<f32>": ("complex", f"form=4,real=mixpert({MOST_PRECISE})"),
                   "complex<f64>": ("complex", "form=4,real=mixpert-fp64()")}
#: the parts' dtype of each complex site dtype
_COMPLEX_PARTS = {"complex<f32>": "f32", "complex<f64>": "f64"}


def _kind(op: GemmOp) -> str:
    """The site's element type as text: ``f32``, ``f64``, ``complex<f32>``..."""
    dtype = op.dtype.value
    return dtype.kind if isinstance(dtype, FloatType) else str(dtype)


def site_choice(op: GemmOp) -> tuple[str, str, str]:
    """(scheme, config, where it came from) for a site: ``mix.plan``, ``mix.runs`` or the default."""
    for attr_name in (PLAN_ATTR, RUNS_ATTR):
        attr = op.attributes.get(attr_name)
        if isinstance(attr, DictAttr):
            named, configured = attr.as_dict().get("scheme"), attr.as_dict().get("config")
            if isinstance(named, StringAttr) and isinstance(configured, StringAttr):
                return named.value, configured.value, attr_name
    kind = _kind(op)
    scheme, config = _DEFAULT_SCHEME.get(kind, (f"<none for {kind}>", ""))
    return scheme, config, "default"


def _descs(op: GemmOp, arch: str) -> list[KernelSpec]:
    """The descs of a site's kernels: its scheme's; for a complex site the real products' and the
    complex epilogue's (runtime/complex/cuda/desc.py)."""
    scheme, config, _ = site_choice(op)
    kind = _kind(op)
    plain = op.alpha.value == 1.0 and op.beta.value == 0.0
    fields = dict(arch=arch, trans_a=op.trans_a.value, trans_b=op.trans_b.value,
                  alpha_beta="product" if plain else "update")
    if kind in _COMPLEX_PARTS:
        if scheme != "complex":
            raise UnsupportedConfig(f"cuda: a {kind} site under {scheme!r} has no CUDA kernel; complex sites have "
                                    "kernels under the complex wrapper (scheme 'complex')")
        desc = kernel_desc(scheme, config, dtype=_COMPLEX_PARTS[kind], **fields)
        return [desc.real, desc]  # type: ignore[attr-defined]  # a ComplexDesc
    if kind not in ("f32", "f64"):
        raise UnsupportedConfig(f"cuda: dtype {kind} has no CUDA kernel (the site runs its CPU executor)")
    return [kernel_desc(scheme, config, dtype=kind, **fields)]


@dataclass(frozen=True)
class SiteKernels:
    """The kernels of a module (desc name -> source and its sites) and the sites without one."""

    kernels: dict[str, tuple[KernelSource, list[int]]]
    skipped: dict[int, str]


def site_kernels(module: Operation, arch: str) -> SiteKernels:
    """Render the kernels of every site (each shared by the sites with the same desc)."""
    kernels: dict[str, tuple[KernelSource, list[int]]] = {}
    skipped: dict[int, str] = {}
    for site, op in gemm_sites(module).items():
        try:
            descs = _descs(op, arch)
        except ValueError as exc:  # UnsupportedConfig, or a malformed label
            skipped[site] = str(exc)
            continue
        for desc in descs:
            if desc.name not in kernels:
                kernels[desc.name] = (render(desc), [])
            kernels[desc.name][1].append(site)
    return SiteKernels(kernels, skipped)


@register_pass
@dataclass(frozen=True)
class EmitCuda(ModulePass):
    """Generate CUDA kernels for the GEMM sites' chosen configs; attach them as mix.kernel ops."""

    name = "emit-cuda"
    arch: str = option("sm_80", f"target architecture: {' or '.join(ARCHS)}")

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise OptionError(f"option 'arch' of pass 'emit-cuda' must be one of {', '.join(ARCHS)}, "
                              f"got '{self.arch}'", "arch", 0)

    def run(self, module: Operation, context: PassContext) -> None:
        block = module.regions[0].blocks[0]
        for op in list(block.ops):  # re-running the pass replaces the kernels
            if isinstance(op, KernelOp):
                op.erase()
        found = site_kernels(module, self.arch)
        sites = gemm_sites(module)
        for site, why in found.skipped.items():
            context.remark(f"GEMM site {site} keeps its CPU executor: {why}", site_loc(sites[site]))
        for name, (kernel, kernel_sites) in found.kernels.items():
            block.add_op(KernelOp.build(
                sym_name=StringAttr(name), scheme=StringAttr(kernel.desc.scheme),
                config=StringAttr(kernel.desc.config), arch=StringAttr(self.arch),
                source_hash=StringAttr(kernel.source_hash), file=StringAttr(kernel.filename),
                sites=ArrayAttr(tuple(IntegerAttr(s, i64) for s in kernel_sites))))


@dataclass(frozen=True)
class KernelFile:
    """One ``mix.kernel`` op's source, checked: its plain ``file`` name and manifest entry."""

    name: str
    source: str
    entry: dict


def kernel_files(module: Operation) -> list[KernelFile]:
    """The source of every ``mix.kernel`` op of ``module``, rendered again from its sites, with its
    manifest entry. DiagnosticError with an error at each bad op: a ``file`` that is not a plain
    file name (absolute, ``..``, a directory part: the module may come from an untrusted dump), or
    a source hash that differs from the op's (a module edited after emit-cuda)."""
    by_arch: dict[str, dict[str, tuple[KernelSource, list[int]]]] = {}
    files, errors = [], []
    for op in (op for op in module.walk() if isinstance(op, KernelOp)):
        loc = op.text_loc or op.loc
        problem = plain_name_problem(op.file.value)
        if problem is not None:
            errors.append(Diagnostic.error(f"emit-cuda: kernel {op.sym_name.value} has file {op.file.value!r}: "
                                           f"{problem}; --emit-dir writes only plain file names inside its "
                                           "directory (run emit-cuda again to name it)", loc))
            continue
        arch = op.arch.value
        if arch not in by_arch:
            by_arch[arch] = site_kernels(module, arch).kernels
        found = by_arch[arch].get(op.sym_name.value)
        if found is None or found[0].source_hash != op.source_hash.value:
            errors.append(Diagnostic.error(f"emit-cuda: kernel {op.sym_name.value} no longer matches its sites "
                                           "(the module changed after emit-cuda); run emit-cuda again", loc))
            continue
        kernel = found[0]
        files.append(KernelFile(op.file.value, kernel.source, {
            "name": op.sym_name.value, "scheme": op.scheme.value, "config": op.config.value, "arch": arch,
            "source_hash": op.source_hash.value, "file": op.file.value, "sites": [s.value for s in op.sites],
            "entry_points": list(kernel.entry_points)}))
    if errors:
        raise DiagnosticError(errors)
    return files


def write_kernel_files(files: list[KernelFile], directory: str | Path) -> Path:
    """Write ``files`` (from :func:`kernel_files`) into ``directory`` and a JSON manifest
    (``manifest.json``: name, scheme, config, arch, source hash, file, sites, entry points), each
    atomically and never through a symlink. Returns the manifest's path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        write_atomic(out / f.name, f.source)
    return write_atomic(out / MANIFEST, json.dumps({"kernels": [f.entry for f in files]}, indent=2) + "\n")


def write_kernels(module: Operation, directory: str | Path) -> Path:
    """Write the source of every ``mix.kernel`` op of ``module`` into ``directory`` with its
    manifest (:func:`kernel_files`, then :func:`write_kernel_files`): nothing is written when any
    op is refused (DiagnosticError). Returns the manifest's path."""
    return write_kernel_files(kernel_files(module), directory)
