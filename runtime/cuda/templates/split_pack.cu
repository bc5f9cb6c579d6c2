// Split packer (docs/numerics.md "split" steps 3-4): the host chose the K columns of the INT8 part
// (cols_i, k_i of them) and of the FP16 part (cols_f), and each row's INT8 scale s (RN64(amax/127)
// over the INT8 columns, 0 for an all-zero row) and FP16 range shift sigma (14 - floor(log2 amax)
// over the FP16 columns). blockIdx.z = 0 gathers and quantizes the INT8 plane, q = rint(RN64(x/s))
// (ties to even); blockIdx.z = 1 the FP16 plane, h = RN16(x·2^sigma) with the top-binade rule (a
// lone hi that rounds up to 2^15 in a row with sigma = -113 is truncated to 2^15 - 2^4). Planes:
// [rows_pad][k_pad] (A row-major, B column-major), zero in the padding; an inf/NaN input sets
// kStatusNonFinite (the CPU executor runs the GEMM).

namespace split {

template <bool kIsB>
__device__ __forceinline__ void pack_split(const InT* __restrict__ x, i64 ld, int rows, const int* __restrict__ cols_i,
                                           int k_i, int ki_pad, const int* __restrict__ cols_f, int k_f, int kf_pad,
                                           int rows_pad, const double* __restrict__ scale,
                                           const int* __restrict__ sigma, i8* __restrict__ plane_i8,
                                           u16* __restrict__ plane_f16, u32* __restrict__ status) {
    // element (r, k) sits at x[r*ld + k] when rows are contiguous in memory, else at x[k*ld + r]
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    const bool fp16 = blockIdx.z == 1;
    const int idx = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;
    if (idx >= (fp16 ? kf_pad : ki_pad)) return;
    float v = 0.0f;
    if (r < rows && idx < (fp16 ? k_f : k_i)) {
        const int k = fp16 ? cols_f[idx] : cols_i[idx];
        v = (float)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
    }
    if (((__float_as_uint(v) >> 23) & 0xFF) == 0xFF) {
        atomicOr(status, kStatusNonFinite);
        v = 0.0f;
    }
    if (fp16) {
        const int s = r < rows ? sigma[r] : 0;
        plane_f16[(i64)r * kf_pad + idx] = rn16_bits(ldexp((double)v, s), s == kSigmaTop);
    } else {
        const double s = r < rows ? scale[r] : 0.0;
        plane_i8[(i64)r * ki_pad + idx] = s == 0.0 ? (i8)0 : (i8)rint(__ddiv_rn((double)v, s));
    }
}

}  // namespace split

// grid (max(Ki_pad, Kf_pad) / kPackK, M_pad / kPackRows, 2), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
split_pack_a(const InT* __restrict__ a, i64 lda, int m, const int* __restrict__ cols_i, int k_i, int ki_pad,
             const int* __restrict__ cols_f, int k_f, int kf_pad, int m_pad, const double* __restrict__ scale_a,
             const int* __restrict__ sigma_a, i8* __restrict__ plane_i8, u16* __restrict__ plane_f16,
             u32* __restrict__ status) {
    split::pack_split<false>(a, lda, m, cols_i, k_i, ki_pad, cols_f, k_f, kf_pad, m_pad, scale_a, sigma_a, plane_i8,
                             plane_f16, status);
}

// grid (max(Ki_pad, Kf_pad) / kPackK, N_pad / kPackRows, 2), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
split_pack_b(const InT* __restrict__ b, i64 ldb, int n, const int* __restrict__ cols_i, int k_i, int ki_pad,
             const int* __restrict__ cols_f, int k_f, int kf_pad, int n_pad, const double* __restrict__ scale_b,
             const int* __restrict__ sigma_b, i8* __restrict__ plane_i8, u16* __restrict__ plane_f16,
             u32* __restrict__ status) {
    split::pack_split<true>(b, ldb, n, cols_i, k_i, ki_pad, cols_f, k_f, kf_pad, n_pad, scale_b, sigma_b, plane_i8,
                            plane_f16, status);
}
