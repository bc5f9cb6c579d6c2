"""The multi-term family's CUDA kernel description, CPU model of the kernels and launcher."""
