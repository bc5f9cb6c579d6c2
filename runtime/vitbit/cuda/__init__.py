"""VitBit's CUDA kernel description, CPU model of the kernel and launcher."""
