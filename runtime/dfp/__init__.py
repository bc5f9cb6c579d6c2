"""Dynamic fixed point (shared block exponents): the CPU executor."""
