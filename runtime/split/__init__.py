"""The split scheme (INT8 slices and an FP16 remainder): the CPU executor and its CUDA parts (cuda/)."""
