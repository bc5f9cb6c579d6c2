"""The dialects of mix IR. Importing this package registers every op (the parser and
``get_op_class`` do so on demand)."""

from mixjit.ir.dialects import arith, builtin, cf, func, mix, py, test

__all__ = ["arith", "builtin", "cf", "func", "mix", "py", "test"]
