// The dfp scheme's kernels around int8_gemm.cu (docs/numerics.md "dfp"): each row of
// op(A) / column of op(B) gets its largest finite magnitude, each block of rows the shared exponent
// of its largest (step 1), each element the mantissa q = rint(v·2^-E) (ties to even, |q| <= 2^r - 1),
// and C = RN32(S·2^(E_a + E_b)) of the exact sums S (step 3; out=dfp: requantized with the result's
// own shared exponent, from a pass for its maximum). Up to 8 bits q is one INT8 plane
// (kPieces = 1, one INT8 GEMM). Wider, q - 128 = 256·h + l with h = floor(q / 256) and
// l = (q mod 256) - 128, both in [-128, 127]: planes h and l, four INT8 GEMMs (batches z: A's
// h, h, l, l against B's h, l, h, l), and S = 65536·S_hh + 256·(S_hl + S_lh) + S_ll
// + 128·(R_i + R_j) + 16384·K with R the row sums of q - 128 (all exact in int64).
// runtime/dfp/cuda/fragments.py models it; an inf/NaN input raises the status word (the launcher
// hands the GEMM back: the CPU executor applies the non-finite rule).

// One CTA per row: its largest finite |v| as bits (common.cuh's cta_row_amax).
template <bool kIsB>
__device__ __forceinline__ void row_amax(const InT* __restrict__ x, i64 ld, int K, u64* __restrict__ amax,
                                         u32* __restrict__ status) {
    const double v = cta_row_amax<kIsB, kReduceThreads>(x, ld, blockIdx.x, K, status);
    if (threadIdx.x == 0) amax[blockIdx.x] = (u64)__double_as_longlong(v);
}

// grid (m), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_amax_a(const InT* __restrict__ a, i64 lda, int k, u64* __restrict__ amax, u32* __restrict__ status) {
    row_amax<false>(a, lda, k, amax, status);
}

// grid (n), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_amax_b(const InT* __restrict__ b, i64 ldb, int k, u64* __restrict__ amax, u32* __restrict__ status) {
    row_amax<true>(b, ldb, k, amax, status);
}

// Step 1's shared exponent of a block whose largest magnitude is v: E = e(v) + 1 - r, one more where
// v·2^-E rounds (ties to even) to 2^r; 0 for an all-zero block.
__device__ __forceinline__ int shared_exponent(double v) {
    if (v == 0.0) return 0;
    int ex;
    frexp(v, &ex);  // v = f·2^ex, f in [0.5, 1): e(v) = ex - 1
    const int e = ex - kMagnitudeBits;
    return rint(ldexp(v, -e)) == (double)(1 << kMagnitudeBits) ? e + 1 : e;
}

// grid (blocks), block kReduceThreads: the shared exponent of rows [z·per, min((z+1)·per, rows)),
// E = e(amax) + 1 - r, one more where amax·2^-E rounds to 2^r (0 for an all-zero block).
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_exponents(const u64* __restrict__ amax, int rows, int per, int* __restrict__ exps) {
    __shared__ u64 s_amax;
    const int z = blockIdx.x, r0 = z * per, r1 = min(r0 + per, rows);
    if (threadIdx.x == 0) s_amax = 0;
    __syncthreads();
    for (int r = r0 + threadIdx.x; r < r1; r += kReduceThreads) atomicMax(&s_amax, amax[r]);
    __syncthreads();
    if (threadIdx.x == 0) exps[z] = shared_exponent(__longlong_as_double((i64)s_amax));
}

// One CTA per padded row: q = rint(v·2^-E) with E its block's exponent; 0 for an all-zero block and
// an inf/NaN (whose status the maxima raised). kPieces = 1: planes[0][r][k] = q. kPieces = 2: the
// h and l planes of q - 128 into the batches that multiply them (A: h in 0 and 1, l in 2 and 3; B:
// h in 0 and 2, l in 1 and 3), and the row sum of q - 128 into rowsum[r]; the padding (k >= K,
// r >= rows) is 0 in every plane and out of the sums.
template <bool kIsB>
__device__ __forceinline__ void quantize(const InT* __restrict__ x, i64 ld, int rows, int rows_pad, int K,
                                         int k_pad, int per, const int* __restrict__ exps, i8* __restrict__ planes,
                                         i64* __restrict__ rowsum) {
    __shared__ long long s_sum;
    const int r = blockIdx.x;
    const int e = r < rows ? exps[r / per] : 0;
    const i64 plane = (i64)rows_pad * k_pad, at0 = (i64)r * k_pad;
    if (kPieces == 2 && threadIdx.x == 0) s_sum = 0;
    if (kPieces == 2) __syncthreads();
    long long sum = 0;
    for (int k = threadIdx.x; k < k_pad; k += kReduceThreads) {
        const bool real = r < rows && k < K;
        int q = 0;
        if (real) {
            const double v = operand_element<kIsB>(x, ld, r, k);
            if (isfinite(v)) q = (int)rint(ldexp(v, -e));  // exact scaling, then ties to even
        }
        if (kPieces == 1) {
            planes[at0 + k] = (i8)q;
        } else {
            const int h = real ? (q >> 8) : 0, l = real ? (q & 255) - 128 : 0;  // q - 128 = 256·h + l
            planes[at0 + k] = (i8)h;
            planes[(kIsB ? 2 : 1) * plane + at0 + k] = (i8)h;
            planes[(kIsB ? 1 : 2) * plane + at0 + k] = (i8)l;
            planes[3 * plane + at0 + k] = (i8)l;
            if (real) sum += q - 128;
        }
    }
    if (kPieces == 2) {
        atomicAdd((unsigned long long*)&s_sum, (unsigned long long)sum);
        __syncthreads();
        if (threadIdx.x == 0 && r < rows) rowsum[r] = s_sum;
    }
}

// grid (M_pad), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_quantize_a(const InT* __restrict__ a, i64 lda, int m, int m_pad, int k, int k_pad, int per,
               const int* __restrict__ exps, i8* __restrict__ planes, i64* __restrict__ rowsum) {
    quantize<false>(a, lda, m, m_pad, k, k_pad, per, exps, planes, rowsum);
}

// grid (N_pad), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_quantize_b(const InT* __restrict__ b, i64 ldb, int n, int n_pad, int k, int k_pad, int per,
               const int* __restrict__ exps, i8* __restrict__ planes, i64* __restrict__ rowsum) {
    quantize<true>(b, ldb, n, n_pad, k, k_pad, per, exps, planes, rowsum);
}

// The exact value V = S·2^(E_a + E_b) of output (row, col) (kPieces = 2: S combined from the four
// batches' sums and the row sums, in int64); the scaling is exact in float64 (|S| < 2^45, the
// exponent sum within ±320).
__device__ __forceinline__ double exact_output(const int* __restrict__ sums, int m, int n, int k, int row, int col,
                                               const int* __restrict__ exps_a, int per_a,
                                               const int* __restrict__ exps_b, int per_b,
                                               const i64* __restrict__ rowsum_a, const i64* __restrict__ rowsum_b) {
    const i64 at = (i64)row * n + col, batch = (i64)m * n;
    i64 s = sums[at];
    if (kPieces == 2)
        s = 65536 * s + 256 * ((i64)sums[batch + at] + sums[2 * batch + at]) + sums[3 * batch + at] +
            128 * (rowsum_a[row] + rowsum_b[col]) + 16384 * (i64)k;
    return ldexp((double)s, exps_a[row / per_a] + exps_b[col / per_b]);
}

// out=dfp only: grid (⌈n/32⌉, ⌈m/8⌉), block (32, 8): the largest |V| of the whole result (as bits).
extern "C" __global__ void __launch_bounds__(256)
dfp_out_amax(const int* __restrict__ sums, int m, int n, int k, const int* __restrict__ exps_a, int per_a,
             const int* __restrict__ exps_b, int per_b, const i64* __restrict__ rowsum_a,
             const i64* __restrict__ rowsum_b, u64* __restrict__ amax) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    const double v = exact_output(sums, m, n, k, row, col, exps_a, per_a, exps_b, per_b, rowsum_a, rowsum_b);
    atomicMax(amax, (u64)__double_as_longlong(fabs(v)));
}

// grid (⌈n/32⌉, ⌈m/8⌉), block (32, 8): out=fp32: C = RN32(V), one rounding (beyond FLT_MAX: inf; a
// zero result +0); out=dfp (kOutDfp): the result requantized with its own shared exponent E_c (from
// out_amax, step 1's rule), C = RN32(rint(V·2^-E_c)·2^E_c); widened to OutT.
extern "C" __global__ void __launch_bounds__(256)
dfp_rescale(const int* __restrict__ sums, int m, int n, int k, const int* __restrict__ exps_a, int per_a,
            const int* __restrict__ exps_b, int per_b, const i64* __restrict__ rowsum_a,
            const i64* __restrict__ rowsum_b, const u64* __restrict__ out_amax, OutT* __restrict__ out, i64 ldo) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    double v = exact_output(sums, m, n, k, row, col, exps_a, per_a, exps_b, per_b, rowsum_a, rowsum_b);
    if (kOutDfp) {
        const int ec = shared_exponent(__longlong_as_double((i64)*out_amax));
        v = ldexp(rint(ldexp(v, -ec)), ec);
    }
    out[(i64)row * ldo + col] = (OutT)(__double2float_rn(v) + 0.0f);  // -0 + +0 = +0
}
