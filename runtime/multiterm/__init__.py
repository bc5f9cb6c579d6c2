"""Multi-term floating-point splits (tf32x3, bf16xN, fp16x2): the CPU executor and its CUDA parts (cuda/)."""
