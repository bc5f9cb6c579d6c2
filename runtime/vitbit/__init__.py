"""VitBit (fused tensor/INT/FP lanes): the CPU executor and its CUDA parts (cuda/)."""
