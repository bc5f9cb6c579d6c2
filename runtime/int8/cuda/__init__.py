"""The int8 scheme's CUDA kernel description, CPU model of the kernels and launcher."""
