"""func dialect: ``func.func`` (a function with a body region), ``func.return``, ``func.call``."""

from __future__ import annotations

from typing import Sequence

from mixjit.ir.attributes import StringAttr, SymbolRefAttr, TypeAttr
from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.location import Location, UnknownLoc
from mixjit.ir.opdef import opt_prop, prop, region, var_operand, var_result
from mixjit.ir.traits import IsolatedFromAbove, IsTerminator
from mixjit.ir.types import FunctionType, Type
from mixjit.ir.verifier import VerifyError


def _types(types: Sequence[Type]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


def _function_type(op: Operation) -> FunctionType | None:
    """The function type of a (possibly invalid) function op, or None when it has none."""
    attr = op.properties.get("function_type")
    return attr.value if isinstance(attr, TypeAttr) and isinstance(attr.value, FunctionType) else None


class FuncOp(Operation):
    """A function: ``sym_name``, ``function_type`` and a body whose entry block arguments are the
    parameters. An empty body declares an external function."""

    name = "func.func"
    sym_name = prop(StringAttr)
    function_type = prop(TypeAttr)
    sym_visibility = opt_prop(StringAttr)
    body = region()
    traits = (IsolatedFromAbove,)

    @classmethod
    def define(
        cls,
        sym_name: str,
        inputs: Sequence[Type],
        outputs: Sequence[Type],
        arg_names: Sequence[str | None] | None = None,
        loc: Location = UnknownLoc,
    ) -> "FuncOp":
        """A function with an (empty) entry block whose arguments have the input types."""
        entry = Block(arg_types=inputs, arg_names=arg_names)
        op = cls.build(
            sym_name=sym_name,
            function_type=TypeAttr(FunctionType(inputs, outputs)),
            body=Region([entry]),
            loc=loc,
        )
        assert isinstance(op, FuncOp)
        return op

    @property
    def type(self) -> FunctionType:
        value = self.function_type.value
        assert isinstance(value, FunctionType), "verify() first: function_type is not a function type"
        return value

    @property
    def entry_block(self) -> Block | None:
        return self.body.entry

    @property
    def is_declaration(self) -> bool:
        return not self.body.blocks

    def verify_(self) -> None:
        ftype = self.function_type.value
        if not isinstance(ftype, FunctionType):
            raise VerifyError(f"function_type must be a function type, got '{ftype}'")
        entry = self.body.entry
        if entry is None:
            return
        arg_types = tuple(a.type for a in entry.args)
        if arg_types != ftype.inputs:
            raise VerifyError(
                f"entry block arguments {_types(arg_types)} do not match the function inputs {_types(ftype.inputs)}"
            )


class ReturnOp(Operation):
    """Return from the enclosing ``func.func`` with values of its result types."""

    name = "func.return"
    values = var_operand()
    traits = (IsTerminator,)

    def verify_(self) -> None:
        parent = self.parent_op
        if not isinstance(parent, FuncOp):
            raise VerifyError(f"must be inside a 'func.func', not '{parent.name if parent else 'nothing'}'")
        ftype = _function_type(parent)
        if ftype is not None:
            got = tuple(v.type for v in self.operands)
            if got != ftype.outputs:
                raise VerifyError(f"returns {_types(got)} but the function returns {_types(ftype.outputs)}")


class CallOp(Operation):
    """Call the ``func.func`` named ``callee`` (a symbol of the enclosing module)."""

    name = "func.call"
    callee = prop(SymbolRefAttr)
    args = var_operand()
    outs = var_result()

    def verify_(self) -> None:
        from mixjit.ir.dialects.builtin import lookup_symbol

        target = lookup_symbol(self, self.callee)
        if target is None:
            if self.parent_op is not None:
                raise VerifyError(f"'{self.callee}' does not name a function in the enclosing module")
            return
        expected = _function_type(target) if isinstance(target, FuncOp) else None
        if expected is None:
            raise VerifyError(f"'{self.callee}' names a '{target.name}', not a function")
        got = FunctionType([v.type for v in self.operands], self.result_types)
        if got != expected:
            raise VerifyError(f"call signature {got} does not match '{self.callee}' of type {expected}")
