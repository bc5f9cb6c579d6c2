"""The mix IR: values, operations, blocks, regions, types, attributes, text format. Never imports
numba or numpy. Syntax and rules: docs/ir.md.

Status (for the passes engineer): the API of the IR contract is implemented and tested: core,
opdef, traits, types, attributes, location, diagnostics, printer, parser, verifier, dominance,
builder, rewriting, dialects (builtin, func, cf, arith, py, mix, test).

Deviations from / additions to the contract:
- Sequences returned by the core (``op.operands``, ``op.results``, ``op.regions``,
  ``op.successors``, ``block.ops``, ``block.args``, ``region.blocks``) are tuples (snapshots);
  mutate through the methods (``set_operand``, ``add_op``, ``add_block``, ``set_successor``...).
- Declared ops are created with ``OpClass.build(name=value, ...)`` (one keyword per definition)
  and ``builder.create(OpClass, **same)``; ``Operation(name, operands=..., ...)`` is the generic
  constructor. Helpers: ``ModuleOp.from_ops(ops)``, ``FuncOp.define(name, inputs, outputs,
  arg_names)``.
- Definitions: ``prop(...)`` declares a property (``<{...}>``, inherent), ``attr(...)`` a
  discardable attribute (``{...}``). Verify hooks are ``verify_(self)`` raising
  ``mixjit.ir.verifier.VerifyError(message, at=None)``.
- ``parse_module(text, filename, *, first_line=1, allow_unregistered=False, verify=True)``
  verifies by default. Parsed ops carry ``op.text_loc`` (their place in the .mix text), which
  diagnostics prefer over ``op.loc``.
- ``apply_patterns_greedily(root, patterns, max_iterations=10, fold=True, erase_dead=True)`` also
  folds (constants via ``rewriting.register_constant_materializer``) and erases dead ops (unused,
  writing no memory: ``rewriting.is_trivially_dead``); it raises IRError when patterns never settle.
"""
