// Ozaki-II residues (docs/numerics.md "ozaki2" steps 2-3): each element of op(A) / op(B) is
// scaled by its row's / column's power of two 2^shift (the shifts come from the host, computed
// as the CPU executor computes them), truncated toward zero (a' = trunc(x·2^s), exact in float64),
// and reduced modulo each of the first kNumModuli moduli into the symmetric range
// [-floor(p/2), ceil(p/2) - 1] (fmod of a float64 integer is exact). Output: planes[l][row][k]
// (R_pad × K_pad INT8 per modulus: A row-major, B column-major, as the .row.col MMA reads them),
// zero in the padding. An inf/NaN input sets kStatusNonFinite: the CPU executor runs the GEMM.

template <bool kIsB>
__device__ __forceinline__ void residues(const InT* __restrict__ x, i64 ld, int rows, int K, int rows_pad, int k_pad,
                                         const int* __restrict__ shift, i8* __restrict__ planes,
                                         u32* __restrict__ status) {
    // element (r, k) sits at x[r*ld + k] when rows are contiguous in memory, else at x[k*ld + r]
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;
    const int k = blockIdx.x * kPackK + threadIdx.x;
    const int r = blockIdx.y * kPackRows + threadIdx.y;
    double v = 0.0;
    if (r < rows && k < K) v = (double)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
    if (!isfinite(v)) {
        atomicOr(status, kStatusNonFinite);
        v = 0.0;
    }
    const double scaled = v == 0.0 ? 0.0 : trunc(ldexp(v, shift[r < rows ? r : 0]));
    const double mag = fabs(scaled);
#pragma unroll
    for (int l = 0; l < kNumModuli; ++l) {
        const int p = kModuli::at(l);
        int res = (int)fmod(mag, (double)p);
        if (scaled < 0.0) res = (p - res) % p;
        if (res >= (p + 1) / 2) res -= p;
        planes[((i64)l * rows_pad + r) * k_pad + k] = (i8)res;
    }
}

// grid (K_pad / kPackK, M_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
ozaki2_residues_a(const InT* __restrict__ a, i64 lda, int m, int k, int m_pad, int k_pad,
                  const int* __restrict__ shift_a, i8* __restrict__ planes, u32* __restrict__ status) {
    residues<false>(a, lda, m, k, m_pad, k_pad, shift_a, planes, status);
}

// grid (K_pad / kPackK, N_pad / kPackRows), block (kPackK, kPackRows)
extern "C" __global__ void __launch_bounds__(kPackK * kPackRows)
ozaki2_residues_b(const InT* __restrict__ b, i64 ldb, int n, int k, int n_pad, int k_pad,
                  const int* __restrict__ shift_b, i8* __restrict__ planes, u32* __restrict__ status) {
    residues<true>(b, ldb, n, k, n_pad, k_pad, shift_b, planes, status);
}
