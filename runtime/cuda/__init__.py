"""CUDA backend: kernel descriptions, source generation, build, SASS checks and the CPU model of the warp-level computation. Never imports numba."""
