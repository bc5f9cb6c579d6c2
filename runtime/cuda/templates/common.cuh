// Helpers shared by every generated kernel: integer typedefs, the input/output type, the
// compile-time integer lists, the status bits a kernel raises to hand a GEMM back to the CPU
// executor, cp.async and the pipelined K loop, the m16n8 accumulator helpers, and the alpha/beta
// update of the output. The rendered Params block
// (runtime/cuda/emit.py) comes first and declares InputType and the scalar parameters.
// No standard headers, so that NVRTC compiles the file as nvcc does.

typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef InputType InT;
typedef InputType OutT;

// Status bits (atomicOr): the CPU executor must run this GEMM instead (never a silent wrong value).
constexpr u32 kStatusNonFinite = 1u;     // an inf/NaN input (non-finite rule)
constexpr u32 kStatusFallback = 2u;      // mixpert: a fallback tile (step 4)
constexpr u32 kStatusSpan = 4u;          // mixpert: exponent span too wide for the two-word accumulator
constexpr u32 kStatusPartOverflow = 8u;  // tf32x3/bf16xN: a leading part rounds to inf (part overflow)
constexpr u32 kStatusTinyPart = 16u;     // tf32x3/bf16xN: a part below 2^-126 (float32's subnormal grid)

// Element (r, k) of an operand's rows × K view (rows of op(A), columns of op(B)), rounded to float32
// (the FP32 domain), as float64.
template <bool kIsB>
__device__ __forceinline__ double operand_element(const InT* __restrict__ x, i64 ld, int r, int k) {
    constexpr bool kRowContiguous = kIsB ? kTransB : !kTransA;  // row r contiguous in memory
    return (double)(float)(kRowContiguous ? x[(i64)r * ld + k] : x[(i64)k * ld + r]);
}

// One CTA (kThreads threads) per row r: the largest finite |v| of its K elements (as the bits of
// |v|: non-negative doubles order as integers), returned to every thread; an inf/NaN raises
// kStatusNonFinite. The per-row statistic of int8's, dfp's and fp16x2's quantizers.
template <bool kIsB, int kThreads>
__device__ __forceinline__ double cta_row_amax(const InT* __restrict__ x, i64 ld, int r, int K,
                                               u32* __restrict__ status) {
    __shared__ u64 s_amax;
    if (threadIdx.x == 0) s_amax = 0;
    __syncthreads();
    for (int k = threadIdx.x; k < K; k += kThreads) {
        const double v = operand_element<kIsB>(x, ld, r, k);
        if (!isfinite(v)) atomicOr(status, kStatusNonFinite);
        else atomicMax(&s_amax, (u64)__double_as_longlong(fabs(v)));
    }
    __syncthreads();
    return __longlong_as_double((i64)s_amax);
}

// FP16 range scaling (split, fp16x2): a row's shift sigma = 14 - floor(log2 amax); kSigmaTop is
// the sigma of a row whose largest element is in float32's top binade.
constexpr int kSigmaTop = 14 - 127;  // sigma of a row whose largest element is in float32's top binade

// RN16 of a double |y| < 2^15 (ties to even, FP16 subnormals), as a double; `top`: the top-binade
// rule (a value rounding up to 2^15 in a row with sigma = kSigmaTop is truncated to 2^15 - 2^4).
__device__ __forceinline__ double rn16(double y, bool top) {
    double h;
    if (fabs(y) >= 0x1p-14) {  // keep 11 significant bits: round the float64 pattern at bit 42
        const u64 u = (u64)__double_as_longlong(y);
        h = __longlong_as_double((long long)((u + 0x1FFFFFFFFFFull + ((u >> 42) & 1)) & ~0x3FFFFFFFFFFull));
    } else {  // FP16's subnormal grid 2^-24
        h = __dsub_rn(__dadd_rn(y, 402653184.0), 402653184.0);
    }
    if (top && fabs(h) == 32768.0) h = copysign(32752.0, h);
    return h;
}

// The binary16 bit pattern of an FP16 value held in a double (exact).
__device__ __forceinline__ u16 f16_bits(double h) {
    unsigned short bits;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(h));
    return bits;
}

// RN16 of y as the binary16 bit pattern (split's FP16 plane).
__device__ __forceinline__ u16 rn16_bits(double y, bool top) { return f16_bits(rn16(y, top)); }

// Part formats of the float MMA kernels (kFormat).
constexpr int kFormatTf32 = 0, kFormatBf16 = 1, kFormatF16 = 2;

// Compile-time integer lists (kept pairs, their weights, the planes).
template <int... V>
struct IntList {
    __device__ static constexpr int at(int i) {
        constexpr int v[] = {V...};
        return v[i];
    }
};

template <bool kCond, typename T, typename F>
struct Select {
    typedef T type;
};
template <typename T, typename F>
struct Select<false, T, F> {
    typedef F type;
};

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
    const u32 dst = (u32)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The cp.async main loop over `chunks` K chunks with kStages shared-memory stages (the descs
// allow kStages == 2: one chunk in flight while the previous one is consumed).
// load(stage, chunk) issues the cp.async copies of K chunk `chunk` into `stage`;
// compute(stage, chunk) consumes a resident stage. Both are inlined device lambdas.
template <int kStages, typename Load, typename Compute>
__device__ __forceinline__ void pipelined_k_loop(int chunks, Load&& load, Compute&& compute) {
    load(0, 0);
    cp_async_commit();
    for (int chunk = 0; chunk < chunks; ++chunk) {
        const int stage = chunk % kStages;
        if (chunk + 1 < chunks) {
            load((chunk + 1) % kStages, chunk + 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        compute(stage, chunk);
        __syncthreads();
    }
}

// Per-warp accumulator tiles of m16n8 MMAs, [kMmaM][kMmaN][4] (both the IMMA and the HMMA
// C fragment): set every element to `value`.
template <typename T, int kM, int kN>
__device__ __forceinline__ void fill_fragments(T (&acc)[kM][kN][4], const T& value) {
#pragma unroll
    for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kN; ++ni)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[mi][ni][c] = value;
}

// f(mi, ni, c, row, col) for every C-fragment element a lane owns in a warp's kM×kN m16n8 MMA
// tiles (lane = 4*g + t: c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]);
// row0/col0: the warp tile's first row and column.
template <int kM, int kN, typename F>
__device__ __forceinline__ void for_each_fragment_element(int row0, int col0, int g, int t, F&& f) {
#pragma unroll
    for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kN; ++ni)
#pragma unroll
            for (int c = 0; c < 4; ++c) f(mi, ni, c, row0 + 16 * mi + g + 8 * (c / 2), col0 + 8 * ni + 2 * t + (c % 2));
}

// alpha*P + beta*C with every product and sum rounded on its own (no FMA contraction): the
// arithmetic of the frontend's C = alpha*P + beta*C in C's dtype (mixjit/entry.py _axpby).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

// out[row, col] = P (product mode) or alpha*P + beta*C (kUpdate; beta == 0 overwrites C, its
// NaNs do not survive, as in BLAS). P is the float32 result, widened to the output type.
template <bool kUpdate>
__device__ __forceinline__ void store_output(OutT* __restrict__ out, i64 ldo, int row, int col, float p,
                                             double alpha, double beta, const OutT* __restrict__ c_in,
                                             i64 ldc) {
    OutT value = (OutT)p;
    if (kUpdate) {
        const OutT av = (OutT)alpha, bv = (OutT)beta;
        value = beta == 0.0 ? mul_rn(av, value) : add_rn(mul_rn(av, value), mul_rn(bv, c_in[(i64)row * ldc + col]));
    }
    out[(i64)row * ldo + col] = value;
}
