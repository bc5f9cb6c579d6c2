"""Ozaki-II's CUDA kernel description, CPU model of the kernels, launcher and host steps."""
