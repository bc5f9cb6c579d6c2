"""CUDA kernels of complex GEMM sites: the real scheme's kernels for the parts' products, then the complex epilogue."""
