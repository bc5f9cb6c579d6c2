"""Numerics shared by every family: exact sums and roundings, floating-point formats, the executors' shared compiled pieces."""
