// The int8 scheme's kernels around int8_gemm.cu (docs/numerics.md "int8"): symmetric quantization of
// each row of op(A) / column of op(B) to INT8 planes with its float64 scale, and the dequantization
// C = RN32(RN64(RN64(S·s_i)·t_j)) of the exact INT32 sums S. runtime/int8/cuda/fragments.py models it.

// One CTA per row: amax over the row (|v| as bits: non-negative doubles order as integers),
// s = RN64(amax / 127), q = rint(RN64(v / s)) (ties to even; |q| <= 127), 0 for an all-zero row,
// padding and an inf/NaN (which raises the status word: the launcher hands the GEMM back).
template <bool kIsB>
__device__ __forceinline__ void quantize_rows(const InT* __restrict__ x, i64 ld, int rows, int K, int k_pad,
                                              i8* __restrict__ plane, double* __restrict__ scale,
                                              u32* __restrict__ status) {
    const int r = blockIdx.x;
    const double s = __ddiv_rn(cta_row_amax<kIsB, kQuantThreads>(x, ld, r, r < rows ? K : 0, status), 127.0);
    for (int k = threadIdx.x; k < k_pad; k += kQuantThreads) {
        double q = 0.0;
        if (r < rows && k < K && s != 0.0) {
            const double v = operand_element<kIsB>(x, ld, r, k);
            if (isfinite(v)) q = rint(__ddiv_rn(v, s));
        }
        plane[(i64)r * k_pad + k] = (i8)(int)q;
    }
    if (threadIdx.x == 0) scale[r] = s;
}

// grid (M_pad), block kQuantThreads
extern "C" __global__ void __launch_bounds__(kQuantThreads)
int8_quantize_a(const InT* __restrict__ a, i64 lda, int m, int k, int k_pad, i8* __restrict__ plane,
                double* __restrict__ scale, u32* __restrict__ status) {
    quantize_rows<false>(a, lda, m, k, k_pad, plane, scale, status);
}

// grid (N_pad), block kQuantThreads
extern "C" __global__ void __launch_bounds__(kQuantThreads)
int8_quantize_b(const InT* __restrict__ b, i64 ldb, int n, int k, int k_pad, i8* __restrict__ plane,
                double* __restrict__ scale, u32* __restrict__ status) {
    quantize_rows<true>(b, ldb, n, k, k_pad, plane, scale, status);
}

// grid (⌈n/32⌉, ⌈m/8⌉), block (32, 8): C = RN32(RN64(RN64(S·s_i)·t_j)), a zero result +0, widened to OutT.
extern "C" __global__ void __launch_bounds__(256)
int8_dequantize(const int* __restrict__ sums, int m, int n, const double* __restrict__ scale_a,
                const double* __restrict__ scale_b, OutT* __restrict__ out, i64 ldo) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    const double d = __dmul_rn(__dmul_rn((double)sums[(i64)row * n + col], scale_a[row]), scale_b[col]);
    out[(i64)row * ldo + col] = (OutT)(__double2float_rn(d) + 0.0f);  // -0 + +0 = +0
}
