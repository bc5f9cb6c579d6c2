// MixPert packer: split + per-group alignment of one operand into INT8 segment planes laid
// out for the MMA (docs/numerics.md "mixpert" steps 1-4). One CTA per alignment tile:
// kTileK × tile_rows threads (A: tile_rows = kTileM rows of op(A); B: kTileN columns of op(B)).
//
// Outputs: planes[plane][row][k] (R_pad × K_pad bytes per plane: A row-major, B column-major,
// i.e. each B column contiguous in k, as the m16n8k32 .row.col MMA reads them), the group
// exponent gexp[row][k-tile] (per row; equal over a tile when kAlignRow is false, kZeroExp for
// an all-zero group), and status bits for inputs the kernel path does not handle (non-finite
// elements, fallback tiles): the launcher then runs the CPU executor for the GEMM.

template <bool kIsB, typename Planes>
__device__ __forceinline__ void pack_operand(const InT* __restrict__ x, i64 ld, int rows, int K, int rows_pad,
                                             int k_pad, i8* __restrict__ planes, int* __restrict__ gexp,
                                             u32* __restrict__ status) {
    constexpr int kRows = kIsB ? kTileN : kTileM;
    // element (r, k) sits at x[r*ld + k] when rows are contiguous in memory, else at x[k*ld + r]
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    __shared__ int s_rowmax[kRows];
    __shared__ int s_over[kRows];  // balanced digits: an element at its row's max has M > kMaxAligned
    __shared__ int s_nonzero, s_far;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int kt = blockIdx.x;
    const int r = blockIdx.y * kRows + ty;
    const int k = kt * kTileK + tx;
    if (tx == 0) { s_rowmax[ty] = kNoExp; s_over[ty] = 0; }
    if (tx == 0 && ty == 0) { s_nonzero = 0; s_far = 0; }
    __syncthreads();

    float v = 0.0f;
    if (r < rows && k < K) v = (float)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
    const u32 bits = __float_as_uint(v);
    const bool finite = ((bits >> 23) & 0xFF) != 0xFF;
    const bool use = finite && (bits << 1) != 0;
    if (!finite) atomicOr(status, kStatusNonFinite);
    i64 mag = 0;
    int e = kNoExp;
    if (use) {
        split_element(bits, mag, e);
        atomicMax(&s_rowmax[ty], e);
    }
    __syncthreads();

    if (kBalanced) {  // the +128 edge (step 3): the top digit would round to +128
        if (use && e == s_rowmax[ty] && !((bits >> 31) != 0) && mag > kMaxAligned) atomicOr(&s_over[ty], 1);
        __syncthreads();
    }
    int group = s_rowmax[ty];
    bool bump = kBalanced && s_over[ty] != 0;
    if (!kAlignRow) {
#pragma unroll
        for (int i = 0; i < kRows; ++i) group = max(group, s_rowmax[i]);
        bump = false;
        if (kBalanced) {
#pragma unroll
            for (int i = 0; i < kRows; ++i) bump = bump || (s_rowmax[i] == group && s_over[i] != 0);
        }
    }
    if (bump && group != kNoExp) group += 1;
    const int d = use ? group - e : 0;
    i64 q = use ? shift_magnitude(mag, d) : 0;
    // at a bumped E = emax + 1, a shift that rounds up to 2^(W-1) (the value 2^128) truncates instead
    if (group > 127 && q > (1ll << (kWidth - 1)) - 1) q = (1ll << (kWidth - 1)) - 1;
    if (use) {
        atomicAdd(&s_nonzero, 1);
        if (d > kFallbackBits) atomicAdd(&s_far, 1);
    }
    const bool negative = (bits >> 31) != 0;
#pragma unroll
    for (int p = 0; p < Planes::kCount; ++p) {
        const int seg = Planes::Seg::at(p);
        const int shift = kDigitBits * (kSegments - 1 - seg);
        i8 digit;
        if (kBalanced) {  // balanced radix-256 digit: byte of q + 128*R, minus 128
            const i64 u = (negative ? -q : q) + kBalancedOffset;
            digit = (i8)(((u >> shift) & 255) - 128);
        } else {  // sign-magnitude
            i64 v = q >> shift;
            if (seg > 0) v &= 127;
            digit = (i8)(negative ? -v : v);
        }
        planes[((i64)p * rows_pad + r) * k_pad + k] = digit;
    }
    const int ktiles = k_pad / kTileK;
    if (tx == 0) gexp[(i64)r * ktiles + kt] = group == kNoExp ? kZeroExp : group;
    __syncthreads();
    if (tx == 0 && ty == 0 && kFallbackBits >= 0 && 8 * s_far > s_nonzero) atomicOr(status, kStatusFallback);
}

// grid (K_pad / kTileK, M_pad / kTileM), block (kTileK, kTileM)
extern "C" __global__ void __launch_bounds__(kTileK * kTileM)
mixpert_pack_a(const InT* __restrict__ a, i64 lda, int m, int k, int m_pad, int k_pad, i8* __restrict__ planes,
               int* __restrict__ gexp, u32* __restrict__ status) {
    pack_operand<false, PlanesA>(a, lda, m, k, m_pad, k_pad, planes, gexp, status);
}

// grid (K_pad / kTileK, N_pad / kTileN), block (kTileK, kTileN)
extern "C" __global__ void __launch_bounds__(kTileK * kTileN)
mixpert_pack_b(const InT* __restrict__ b, i64 ldb, int n, int k, int n_pad, int k_pad, i8* __restrict__ planes,
               int* __restrict__ gexp, u32* __restrict__ status) {
    pack_operand<true, PlanesB>(b, ldb, n, k, n_pad, k_pad, planes, gexp, status);
}
