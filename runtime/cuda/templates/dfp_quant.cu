// The dfp scheme's kernels around int8_gemm.cu (docs/numerics.md "dfp", bits <= 8, out=fp32): each
// row of op(A) / column of op(B) gets its largest finite magnitude, each block of rows the shared
// exponent of its largest (step 1), each element the mantissa q = rint(v·2^-E) (ties to even,
// |q| <= 2^r - 1 <= 127, one INT8 plane), and C = RN32(S·2^(E_a + E_b)) of the exact INT32 sums S
// (step 3). runtime/dfp/cuda/fragments.py models it; an inf/NaN input raises the status word (the
// launcher hands the GEMM back: the CPU executor applies the non-finite rule).

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
    if (threadIdx.x != 0) return;
    const double v = __longlong_as_double((i64)s_amax);
    int e = 0;
    if (v != 0.0) {
        int ex;
        frexp(v, &ex);  // v = f·2^ex, f in [0.5, 1): e(v) = ex - 1
        e = ex - kMagnitudeBits;
        if (rint(ldexp(v, -e)) == (double)(1 << kMagnitudeBits)) e += 1;
    }
    exps[z] = e;
}

// One CTA per padded row: q = rint(v·2^-E) with E its block's exponent; 0 for padding, an
// all-zero block and an inf/NaN (whose status the maxima raised).
template <bool kIsB>
__device__ __forceinline__ void quantize(const InT* __restrict__ x, i64 ld, int rows, int K, int k_pad, int per,
                                         const int* __restrict__ exps, i8* __restrict__ plane) {
    const int r = blockIdx.x;
    const int e = r < rows ? exps[r / per] : 0;
    for (int k = threadIdx.x; k < k_pad; k += kReduceThreads) {
        double q = 0.0;
        if (r < rows && k < K) {
            const double v = operand_element<kIsB>(x, ld, r, k);
            if (isfinite(v)) q = rint(ldexp(v, -e));  // exact scaling, then ties to even
        }
        plane[(i64)r * k_pad + k] = (i8)(int)q;
    }
}

// grid (M_pad), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_quantize_a(const InT* __restrict__ a, i64 lda, int m, int k, int k_pad, int per, const int* __restrict__ exps,
               i8* __restrict__ plane) {
    quantize<false>(a, lda, m, k, k_pad, per, exps, plane);
}

// grid (N_pad), block kReduceThreads
extern "C" __global__ void __launch_bounds__(kReduceThreads)
dfp_quantize_b(const InT* __restrict__ b, i64 ldb, int n, int k, int k_pad, int per, const int* __restrict__ exps,
               i8* __restrict__ plane) {
    quantize<true>(b, ldb, n, k, k_pad, per, exps, plane);
}

// grid (⌈n/32⌉, ⌈m/8⌉), block (32, 8): C = RN32(S·2^(E_a + E_b)), the scaling exact in float64
// (|S| < 2^31, the exponent sum in [-320, 256]), one rounding to float32 (beyond FLT_MAX: inf; a
// zero result +0), widened to OutT.
extern "C" __global__ void __launch_bounds__(256)
dfp_rescale(const int* __restrict__ sums, int m, int n, const int* __restrict__ exps_a, int per_a,
            const int* __restrict__ exps_b, int per_b, OutT* __restrict__ out, i64 ldo) {
    const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
    if (row >= m || col >= n) return;
    const double v = ldexp((double)sums[(i64)row * n + col], exps_a[row / per_a] + exps_b[col / per_b]);
    out[(i64)row * ldo + col] = (OutT)(__double2float_rn(v) + 0.0f);  // -0 + +0 = +0
}
