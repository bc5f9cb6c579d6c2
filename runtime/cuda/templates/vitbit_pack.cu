// VitBit packers (docs/numerics.md "vitbit" steps 1-3). The host computed each row's (A) and
// column's (B) scale s = RN64(amax/q_max) (0 for an all-zero row); q = rint(RN64(x/s)), x rounded
// to float32 first, ties to even. A: one int8 plane [m_pad][k_pad]. B, split by Algorithm 1 into
// the packed columns [0, n1), the converted ones [n1, n1+n2) and the tensor-core ones (the rest):
//   blockIdx.z = 0: words[k][g] = sum_p q[k][g*kPack + p] * 2^(kSlot*(kPack-1-p)) mod 2^32 (uint32);
//   blockIdx.z = 1: conv[k][c]  = (float)q[k][n1 + c];
//   blockIdx.z = 2: tens[c][k]  = (int8)q[k][n1 + n2 + c] (k contiguous, as the MMA's .col B).
// Zero in every padding. An inf/NaN input sets kStatusNonFinite (the CPU executor runs the GEMM).
// runtime/vitbit/cuda/fragments.py models these kernels.

namespace vitbit {

// element (r, k) of an operand seen as rows x K: A's rows, B's columns
template <bool kIsB>
__device__ __forceinline__ int quantize(const InT* __restrict__ x, i64 ld, int r, int k, double s,
                                        u32* __restrict__ status) {
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    float v = (float)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
    if (((__float_as_uint(v) >> 23) & 0xFF) == 0xFF) {
        atomicOr(status, kStatusNonFinite);
        return 0;
    }
    return s == 0.0 ? 0 : (int)rint(__ddiv_rn((double)v, s));
}

}  // namespace vitbit

// grid (k_pad / kPackK, m_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
vitbit_pack_a(const InT* __restrict__ a, i64 lda, int m, int k, int k_pad, const double* __restrict__ scale_a,
              i8* __restrict__ plane_a, u32* __restrict__ status) {
    const int kk = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;
    const int q = r < m && kk < k ? vitbit::quantize<false>(a, lda, r, kk, scale_a[r], status) : 0;
    plane_a[(i64)r * k_pad + kk] = (i8)q;
}

// grid (k_pad / kPackK, ceil(max(g_pad, n2_pad, n3_pad) / kPackRows), 3), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
vitbit_pack_b(const InT* __restrict__ b, i64 ldb, int n, int k, int k_pad, int n1, int n2, int g_pad, int n2_pad,
              int n3_pad, const double* __restrict__ scale_b, u32* __restrict__ words, float* __restrict__ conv,
              i8* __restrict__ tens, u32* __restrict__ status) {
    const int kk = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;  // word, converted or tensor-core column
    const bool in_k = kk < k;
    if (blockIdx.z == 0) {
        if (r >= g_pad) return;
        u32 word = 0;
#pragma unroll
        for (int p = 0; p < kPack; ++p) {
            const int col = r * kPack + p;
            const int q = in_k && col < n1 ? vitbit::quantize<true>(b, ldb, col, kk, scale_b[col], status) : 0;
            word += (u32)q << (kSlot * (kPack - 1 - p));  // two's complement, modulo 2^32
        }
        words[(i64)kk * g_pad + r] = word;
    } else if (blockIdx.z == 1) {
        if (r >= n2_pad) return;
        const int col = n1 + r;
        const int q = in_k && r < n2 ? vitbit::quantize<true>(b, ldb, col, kk, scale_b[col], status) : 0;
        conv[(i64)kk * n2_pad + r] = (float)q;
    } else {
        if (r >= n3_pad) return;
        const int col = n1 + n2 + r;
        const int q = in_k && col < n ? vitbit::quantize<true>(b, ldb, col, kk, scale_b[col], status) : 0;
        tens[(i64)r * k_pad + kk] = (i8)q;
    }
}
