// mixpert-fp64 packer: split + per-group alignment of one float64 operand into INT8 sign-magnitude
// segment planes laid out for the MMA (docs/numerics.md "mixpert" steps 1-3, float64 domain). One
// CTA of kPackThreads threads per alignment tile (kTileK of K × tile_rows rows of the operand), so
// long k-tiles (the default config's 4096) need no more threads than short ones.
//
// Outputs: planes[plane][row][k] (R_pad × K_pad bytes per plane, K_pad = K rounded up to the MMA's
// 32: A row-major, B column-major), the group exponent gexp[row][k-tile] (kZeroExp for an all-zero
// group), and the status bit of an inf/NaN input (the launcher then runs the CPU executor).

template <bool kIsB>
__device__ __forceinline__ u64 element_bits(const InT* __restrict__ x, i64 ld, int r, int k, int rows, int K) {
    // element (r, k) sits at x[r*ld + k] when rows are contiguous in memory, else at x[k*ld + r]
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    if (r >= rows || k >= K) return 0ull;
    return (u64)__double_as_longlong(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
}

template <bool kIsB, typename Planes>
__device__ __forceinline__ void pack_operand64(const InT* __restrict__ x, i64 ld, int rows, int K, int rows_pad,
                                               int k_pad, i8* __restrict__ planes, int* __restrict__ gexp,
                                               u32* __restrict__ status) {
    constexpr int kRows = kIsB ? kTileN : kTileM;
    __shared__ int s_rowmax[kRows];
    const int kt = blockIdx.x, r0 = blockIdx.y * kRows;
    const int k0 = kt * kTileK;
    const int len = min(kTileK, k_pad - k0);  // this tile's columns that the planes hold
    for (int i = threadIdx.x; i < kRows; i += kPackThreads) s_rowmax[i] = kNoExp;
    __syncthreads();

    // pass 1: every element's exponent; each row's largest
    for (int i = threadIdx.x; i < kRows * len; i += kPackThreads) {
        const int row = i / len, k = k0 + i % len;
        const u64 bits = element_bits<kIsB>(x, ld, r0 + row, k, rows, K);
        const bool finite = ((bits >> 52) & 0x7FF) != 0x7FF;
        if (!finite) atomicOr(status, kStatusNonFinite);
        if (finite && (bits << 1) != 0) {
            i64 mag;
            int e;
            split_element64(bits, mag, e);
            atomicMax(&s_rowmax[row], e);
        }
    }
    __syncthreads();

    // pass 2: align each element to its group exponent (its row's, or the tile's), write its digits
    int tile_max = kNoExp;
    if (!kAlignRow) {
#pragma unroll
        for (int i = 0; i < kRows; ++i) tile_max = max(tile_max, s_rowmax[i]);
    }
    const int ktiles = (k_pad + kTileK - 1) / kTileK;
    for (int i = threadIdx.x; i < kRows * len; i += kPackThreads) {
        const int row = i / len, k = k0 + i % len;
        const u64 bits = element_bits<kIsB>(x, ld, r0 + row, k, rows, K);
        const bool use = ((bits >> 52) & 0x7FF) != 0x7FF && (bits << 1) != 0;
        const int group = kAlignRow ? s_rowmax[row] : tile_max;
        i64 q = 0;
        if (use) {
            i64 mag;
            int e;
            split_element64(bits, mag, e);
            q = shift_magnitude(mag, group - e);
        }
        const bool negative = (bits >> 63) != 0;
#pragma unroll
        for (int p = 0; p < Planes::kCount; ++p) {
            const int seg = Planes::Seg::at(p);
            i64 v = q >> (kDigitBits * (kSegments - 1 - seg));
            if (seg > 0) v &= 127;
            planes[((i64)p * rows_pad + r0 + row) * k_pad + k] = (i8)(negative ? -v : v);
        }
    }
    for (int i = threadIdx.x; i < kRows; i += kPackThreads) {
        const int group = kAlignRow ? s_rowmax[i] : tile_max;
        gexp[(i64)(r0 + i) * ktiles + kt] = group == kNoExp ? kZeroExp : group;
    }
}

// grid (k-tiles, M_pad / kTileM), block kPackThreads
extern "C" __global__ void __launch_bounds__(kPackThreads)
mixpert_fp64_pack_a(const InT* __restrict__ a, i64 lda, int m, int k, int m_pad, int k_pad, i8* __restrict__ planes,
                    int* __restrict__ gexp, u32* __restrict__ status) {
    pack_operand64<false, PlanesA>(a, lda, m, k, m_pad, k_pad, planes, gexp, status);
}

// grid (k-tiles, N_pad / kTileN), block kPackThreads
extern "C" __global__ void __launch_bounds__(kPackThreads)
mixpert_fp64_pack_b(const InT* __restrict__ b, i64 ldb, int n, int k, int n_pad, int k_pad, i8* __restrict__ planes,
                    int* __restrict__ gexp, u32* __restrict__ status) {
    pack_operand64<true, PlanesB>(b, ldb, n, k, n_pad, k_pad, planes, gexp, status);
}
