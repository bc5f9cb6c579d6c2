// tf32x3 / bf16xN packer (docs/numerics.md "tf32x3" step 1): each element of op(A) / op(B),
// rounded to float32, is split into kParts parts x_p = RN_f(x - x_0 - ... - x_{p-1}) of the
// part format (TF32: add 0xFFF + bit 13 to the float32 pattern and clear the low 13 bits; BF16:
// add 0x7FFF + bit 16 and keep the high 16 bits), each difference exact in float32.
// Output: planes[part][row][k] (R_pad × K_pad parts per plane: A row-major, B column-major, as the
// .row.col MMA reads them), zero in the padding. Status bits hand the GEMM back to the CPU
// executor for an inf/NaN input, a leading part that rounds to inf (the executor's part-overflow
// fallback), and a nonzero part below 2^-126: the scheme rounds it to f's significand with no
// lower exponent limit, which float32's subnormal grid cannot represent.

typedef typename Select<kFormat == kFormatTf32, u32, u16>::type PartT;

// RN_f of the float32 pattern `bits` (ties to even), as the stored part.
__device__ __forceinline__ u32 round_part(u32 bits) {
    if (kFormat == kFormatTf32) return (bits + 0xFFFu + ((bits >> 13) & 1u)) & ~0x1FFFu;
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
}

template <bool kIsB>
__device__ __forceinline__ void pack_parts(const InT* __restrict__ x, i64 ld, int rows, int K, int rows_pad,
                                           int k_pad, PartT* __restrict__ planes, u32* __restrict__ status) {
    // element (r, k) sits at x[r*ld + k] when rows are contiguous in memory, else at x[k*ld + r]
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    const int k = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;
    float v = 0.0f;
    if (r < rows && k < K) v = (float)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
    u32 flags = 0;
    if (((__float_as_uint(v) >> 23) & 0xFF) == 0xFF) {
        flags |= kStatusNonFinite;
        v = 0.0f;
    }
#pragma unroll
    for (int p = 0; p < kParts; ++p) {
        const u32 bits = __float_as_uint(v);
        if ((bits & 0x7F800000u) == 0 && (bits & 0x7FFFFFu) != 0) flags |= kStatusTinyPart;
        u32 part = round_part(bits);
        if ((part & 0x7F800000u) == 0x7F800000u) {  // only the leading part can round past FLT_MAX
            flags |= kStatusPartOverflow;
            part = 0;
        }
        planes[((i64)p * rows_pad + r) * k_pad + k] = kFormat == kFormatTf32 ? (PartT)part : (PartT)(part >> 16);
        v = __fsub_rn(v, __uint_as_float(part));  // exact: the part is a prefix of v's significand
    }
    if (flags) atomicOr(status, flags);
}

// grid (K_pad / kPackK, M_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
multiterm_pack_a(const InT* __restrict__ a, i64 lda, int m, int k, int m_pad, int k_pad, PartT* __restrict__ planes,
                 u32* __restrict__ status) {
    pack_parts<false>(a, lda, m, k, m_pad, k_pad, planes, status);
}

// grid (K_pad / kPackK, N_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
multiterm_pack_b(const InT* __restrict__ b, i64 ldb, int n, int k, int n_pad, int k_pad, PartT* __restrict__ planes,
                 u32* __restrict__ status) {
    pack_parts<true>(b, ldb, n, k, n_pad, k_pad, planes, status);
}
