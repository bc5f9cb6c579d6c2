"""mixjit runtime: GEMM numerics, CPU executors and (later) CUDA kernels. Never imports the IR."""
