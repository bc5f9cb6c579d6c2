"""Quantized INT8 GEMMs: the CPU executor and the operand encodings."""
