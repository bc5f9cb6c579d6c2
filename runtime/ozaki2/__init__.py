"""Ozaki scheme II (CRT over INT8 residues): the CPU executor and its CUDA parts (cuda/)."""
