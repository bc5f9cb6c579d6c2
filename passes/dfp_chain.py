"""``dfp-chain``: carry a dfp site's output exponent into the dfp sites that read its output.

Claims 8 and 14 of the dynamic fixed point seed (004): an operation whose input is a dynamic
fixed-point output tensor works on that tensor's mantissas and shared exponent as they are. Here:
a ``mix.gemm`` whose plan (``mix.plan``, from ``tune``) is ``dfp`` and whose operand A or B is the
result of another ``dfp`` site with ``out=dfp`` (directly, or through views: slices, transposes,
casts; the GEMM DAG must have the edge) gets ``carry_a`` / ``carry_b`` = the producer's ``bits``
in its plan config, and ``mix.dfp_carry = {a = <producer site>}`` records the chain in the IR.
The operand then keeps the producer's shared exponent and mantissas instead of being quantized to
the site's own config (docs/numerics.md, "dfp", chains; runtime/dfp/executor.py checks at run time
that the operand still is such a tensor, and quantizes it again if it is not).

By default only producers no wider than the site's own ``bits`` are carried: the result is then
the same bit for bit (such a tensor is held exactly at the wider width), with less work (no
requantization pass, fewer IMMA products), so the plan's measured ``error`` stays valid.
``widen=true`` also carries wider producers (no requantization error, more products); their
plan's ``error`` was measured without the carry and is dropped. ``modeled_time`` is re-modeled
with the cost model over the site's profiled shapes (``mix.profile``) when both exist; otherwise
the pass warns that it is the uncarried config's. The module's ``mix.tuning`` ``modeled_time`` moves
by the same amounts; its ``error`` stays the search's (measured without the carries).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mixjit.ir.attributes import DictAttr, FloatAttr, IntegerAttr
from mixjit.ir.core import Operation, OpResult, Value
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from mixjit.ir.dialects import py
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.types import i64
from mixjit.passes.aliasing import Kind, op_kind
from mixjit.passes.analysis import ALL_ANALYSES
from mixjit.passes.build_dag import GemmDag
from mixjit.passes.pass_base import ModulePass, PassContext, option
from mixjit.passes.registry import register_pass
from mixjit.passes.tuning.attrs import TuningAttrError
from mixjit.passes.tuning.candidates import config_fields
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
from mixjit.passes.tuning.profile import PROFILE_ATTR, SiteProfile
from mixjit.passes.tuning.retarget import cost_model
from mixjit.passes.tuning.sites import gemm_sites, site_loc

__all__ = ["DfpChain", "CARRY_ATTR", "carried_config", "producer_of"]

CARRY_ATTR = "mix.dfp_carry"
DFP = "dfp"
_CARRY_FIELDS = {"a": "carry_a", "b": "carry_b"}


def carried_config(config: str, operand: str, width: int) -> str:
    """``config`` (a dfp label) with operand ``"a"`` / ``"b"`` carried at ``width`` bits; the
    carries come last, A's first, as ``DfpConfig.label`` writes them."""
    fields = config_fields(config)
    fields[_CARRY_FIELDS[operand]] = str(width)
    carries: dict[str, str] = {k: fields.pop(k) for k in ("carry_a", "carry_b") if k in fields}
    fields.update(carries)
    return ",".join(f"{k}={v}" for k, v in fields.items())


def _is_plain_view(op: Operation) -> bool:
    """A view that refers to its operand's values without changing them (not ``x += y``)."""
    return op_kind(op) is Kind.VIEW and not isinstance(op, py.InplaceBinOp) and len(op.operands) >= 1


def producer_of(value: Value) -> GemmOp | None:
    """The ``mix.gemm`` whose result ``value`` is, directly or through plain views of it."""
    while isinstance(value, OpResult):
        op = value.op
        if isinstance(op, GemmOp):
            return op
        if not _is_plain_view(op):
            return None
        value = op.operands[0]
    return None


def _located(op: GemmOp, err: Exception) -> DiagnosticError:
    """``err`` (a malformed tuner attribute, a config the cost model refuses) as an error at ``op``."""
    return DiagnosticError(Diagnostic.error(f"dfp-chain: {err}", site_loc(op)))


def _plan(op: GemmOp) -> SitePlan | None:
    attr = op.attributes.get(PLAN_ATTR)
    try:
        return None if attr is None else SitePlan.from_attr(op.site.value, attr)
    except TuningAttrError as err:
        raise _located(op, err) from None


def _bits(plan: SitePlan) -> int | None:
    text = config_fields(plan.config).get("bits", "")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 4 else None  # dfp bits are 2..16


@register_pass
@dataclass(frozen=True)
class DfpChain(ModulePass):
    """Carry dfp output exponents along chains of GEMMs (after tune): carry_a/carry_b in mix.plan."""

    name = "dfp-chain"
    widen: bool = option(False, "also carry producers wider than the site's bits (more products, no "
                                 "requantization error; the plan's measured error is dropped)")
    preserved_analyses = ALL_ANALYSES  # rewrites plan attributes only

    def run(self, module: Operation, context: PassContext) -> None:
        ops = gemm_sites(module)
        dag = context.analysis(GemmDag)
        calls_time = None
        saved = 0.0  # modeled seconds the carries change the plan by
        for site, op in ops.items():
            plan = _plan(op)
            if plan is None or plan.scheme != DFP or (width := _bits(plan)) is None:
                continue
            carried = {o: found for o, v in (("a", op.a), ("b", op.b))
                       if (found := self._carried_from(op, v, width, dag)) is not None}
            if not carried:
                continue
            config = plan.config
            for operand, (_, made_width) in sorted(carried.items()):
                config = carried_config(config, operand, made_width)
            widened = any(w > width for _, w in carried.values())
            if calls_time is None:
                calls_time = cost_model()
            new = self._remodel(op, replace(plan, config=config, error=None if widened else plan.error),
                                calls_time, context)
            op.attributes[PLAN_ATTR] = new.to_attr()
            saved += plan.modeled_time - new.modeled_time
            op.attributes[CARRY_ATTR] = DictAttr({o: IntegerAttr(s, i64) for o, (s, _) in sorted(carried.items())})
            chain = ", ".join(f"operand {o.upper()} carries the exponent of site {s} ({w} bits)"
                              for o, (s, w) in sorted(carried.items()))
            context.emit(Diagnostic(Severity.REMARK, f"site {site}: {chain}: {DFP}[{config}]", site_loc(op)))
        tuning = module.attributes.get(TUNING_ATTR)
        if saved and isinstance(tuning, DictAttr) and isinstance(old := tuning.as_dict().get("modeled_time"), FloatAttr):
            fields = tuning.as_dict()  # the plan's modeled time: its sites' times, carried ones re-modeled
            fields["modeled_time"] = FloatAttr(old.value - saved)
            module.attributes[TUNING_ATTR] = DictAttr(fields)

    def _carried_from(self, op: GemmOp, value: Value, width: int, dag) -> tuple[int, int] | None:
        """``(producer site, its bits)`` when ``value`` is a dfp ``out=dfp`` site's result that
        this site may carry (an edge of the GEMM DAG; no wider than ``width`` unless ``widen``)."""
        producer = producer_of(value)
        if producer is None or producer is op or not dag.has_edge(producer.site.value, op.site.value):
            return None
        made = _plan(producer)
        if made is None or made.scheme != DFP or config_fields(made.config).get("out") != "dfp":
            return None
        made_width = _bits(made)
        if made_width is None or (made_width > width and not self.widen):
            return None
        return producer.site.value, made_width

    @staticmethod
    def _remodel(op: GemmOp, plan: SitePlan, calls_time, context: PassContext) -> SitePlan:
        """``plan`` with its modeled time over the site's profiled shapes, when they and the cost
        model exist; else unchanged, with a warning."""
        attr = op.attributes.get(PROFILE_ATTR)
        if attr is not None and calls_time is not None:
            try:
                profile = SiteProfile.from_attr(op.site.value, attr)
                if profile.shapes:
                    time = calls_time(plan.scheme, plan.config, profile.shapes, profile.dtype, profile.target)
                    return replace(plan, modeled_time=float(time))
            except (TuningAttrError, KeyError, ValueError) as err:
                raise _located(op, err) from None
        context.emit(Diagnostic(
            Severity.WARNING, f"site {op.site.value}: no profiled shapes or no cost model to re-model {DFP}[{plan.config}]; "
            "its modeled_time is the uncarried config's", site_loc(op)))
        return plan
