// Split combine (docs/numerics.md "split" step 5), after both sub-GEMMs (int8_gemm on one
// stream, multiterm_gemm's FP16 part on another): D = RN64(RN64(S·s_i)·t_j) from the INT8 part's
// exact sum S, y = S16·2^-(sigma_i + sigma_j) from the FP16 part (exact in float64), and
// C = RN32(D + y) rounded once: D + y as a float64 two-sum (s, e), then s rounded to float32
// unless s is a float32 midpoint, where e decides. The FP16 part's S16 comes from the tensor
// core's FP32 accumulator, so C equals the CPU executor's where that sum is exact (docs/cuda.md).

namespace split {

// RN32 of the exact s + e (|e| <= ulp64(s)/2): only a float32 midpoint s can round otherwise.
__device__ __forceinline__ float rn32_sum(double s, double e) {
    const float a = __double2float_rz(s);  // the float32 at or below |s|
    if (e == 0.0 || isinf(a)) return __double2float_rn(s);
    const int ea = a == 0.0f ? -126 : max(ilogbf(a), -126);
    const double ulp = ldexp(1.0, ea - 23);
    const double mid = (double)a + copysign(0.5 * ulp, s);
    if (s != mid) return __double2float_rn(s);
    const bool away = (e > 0.0) == (s > 0.0);  // the exact value lies beyond the midpoint
    return away ? __double2float_rn((double)a + copysign(ulp, s)) : a;
}

}  // namespace split

// grid (ceil(n / 32), ceil(m / 8)), block (32, 8)
extern "C" __global__ void __launch_bounds__(256)
split_combine(const int* __restrict__ s8, const OutT* __restrict__ s16, int ld_part, int m, int n, int has_i8,
              int has_f16, const double* __restrict__ scale_a, const double* __restrict__ scale_b,
              const int* __restrict__ sigma_a, const int* __restrict__ sigma_b, OutT* __restrict__ out, i64 ldo,
              double alpha, double beta, const OutT* __restrict__ c_in, i64 ldc) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    const i64 at = (i64)row * ld_part + col;
    const double d = has_i8 ? __dmul_rn(__dmul_rn((double)s8[at], scale_a[row]), scale_b[col]) : 0.0;
    const double y = has_f16 ? ldexp((double)s16[at], -(sigma_a[row] + sigma_b[col])) : 0.0;
    const double s = __dadd_rn(d, y);  // two-sum: s + e = d + y exactly
    const double bb = __dsub_rn(s, d);
    const double e = __dadd_rn(__dsub_rn(d, __dsub_rn(s, bb)), __dsub_rn(y, bb));
    float p = split::rn32_sum(s, e);
    if (p == 0.0f) p = 0.0f;  // a zero result is +0
    store_output<kAlphaBetaUpdate>(out, ldo, row, col, p, alpha, beta, c_in, ldc);
}
