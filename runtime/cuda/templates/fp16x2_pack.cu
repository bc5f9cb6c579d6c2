// fp16x2's kernels around multiterm_gemm.cu (docs/numerics.md "fp16x2"): each row of op(A) / column
// of op(B) gets its range shift sigma = 14 - floor(log2 amax) over its finite float32-rounded values
// (0 for a row without them); each element y = x·2^sigma (exact in float64) is split into
// hi = RN16(y) and, with two parts, lo = RN16((y - hi)·2^11) (the top-binade rule for a lone hi:
// kTopTruncate); the GEMM sums hi·hi in one FP32 accumulator and the pairs with a lo part in
// another, combined as acc + acc_lo·2^-11 (kLoShift); fp16x2_rescale writes RN32(p·2^-(sigma_i +
// sigma_j)). An inf/NaN input raises the status word (the launcher hands the GEMM back).
// runtime/multiterm/cuda/fragments.py models it.

// One CTA per row: sigma from the largest finite |v| (common.cuh's cta_row_amax).
template <bool kIsB>
__device__ __forceinline__ void row_sigma(const InT* __restrict__ x, i64 ld, int K, int* __restrict__ sigma,
                                          u32* __restrict__ status) {
    const int r = blockIdx.x;
    const double amax = cta_row_amax<kIsB, kReduceThreads>(x, ld, r, K, status);
    if (threadIdx.x != 0) return;
    int ex = 0;
    if (amax != 0.0) frexp(amax, &ex);  // amax = f·2^ex, f in [0.5, 1): floor(log2 amax) = ex - 1
    sigma[r] = amax != 0.0 ? 15 - ex : 0;
}

// grid (m), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
fp16x2_sigma_a(const InT* __restrict__ a, i64 lda, int k, int* __restrict__ sigma, u32* __restrict__ status) {
    row_sigma<false>(a, lda, k, sigma, status);
}

// grid (n), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
fp16x2_sigma_b(const InT* __restrict__ b, i64 ldb, int k, int* __restrict__ sigma, u32* __restrict__ status) {
    row_sigma<true>(b, ldb, k, sigma, status);
}

// One thread per padded element: planes[part][row][k] as binary16 (A row-major, B column-major, as
// the .row.col MMA reads them), zero in the padding and for an inf/NaN.
template <bool kIsB>
__device__ __forceinline__ void pack_fp16x2(const InT* __restrict__ x, i64 ld, int rows, int K, int rows_pad,
                                            int k_pad, const int* __restrict__ sigma, u16* __restrict__ planes) {
    const int k = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;
    double y = 0.0;
    int s = 0;
    if (r < rows && k < K) {
        const double v = operand_element<kIsB>(x, ld, r, k);
        s = sigma[r];
        if (isfinite(v)) y = ldexp(v, s);
    }
    const double hi = rn16(y, kTopTruncate && s == kSigmaTop);
    planes[(i64)r * k_pad + k] = f16_bits(hi);
    if (kParts == 2) planes[((i64)rows_pad + r) * k_pad + k] = f16_bits(rn16(__dmul_rn(__dsub_rn(y, hi), 2048.0), false));
}

// grid (K_pad / kPackK, M_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
fp16x2_pack_a(const InT* __restrict__ a, i64 lda, int m, int k, int m_pad, int k_pad, const int* __restrict__ sigma,
              u16* __restrict__ planes) {
    pack_fp16x2<false>(a, lda, m, k, m_pad, k_pad, sigma, planes);
}

// grid (K_pad / kPackK, N_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
fp16x2_pack_b(const InT* __restrict__ b, i64 ldb, int n, int k, int n_pad, int k_pad, const int* __restrict__ sigma,
              u16* __restrict__ planes) {
    pack_fp16x2<true>(b, ldb, n, k, n_pad, k_pad, sigma, planes);
}

// grid (⌈n/32⌉, ⌈m/8⌉), block (32, 8): C = RN32(p·2^-(sigma_i + sigma_j)) of the GEMM's combined
// FP32 sum p (the scaling exact in float64, one rounding; beyond FLT_MAX inf; a zero +0), widened.
extern "C" __global__ void __launch_bounds__(256)
fp16x2_rescale(const OutT* __restrict__ p, int m, int n, const int* __restrict__ sigma_a,
               const int* __restrict__ sigma_b, OutT* __restrict__ out, i64 ldo) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    const double v = ldexp((double)p[(i64)row * n + col], -(sigma_a[row] + sigma_b[col]));
    out[(i64)row * ldo + col] = (OutT)(__double2float_rn(v) + 0.0f);  // -0 + +0 = +0
}
