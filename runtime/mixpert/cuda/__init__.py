"""MixPert's CUDA parts: its kernel desc, the CPU model of its kernels and its launcher."""
