"""The dfp scheme's CUDA kernels: desc, CPU model, launcher."""
