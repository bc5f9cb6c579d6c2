// MixPert device helpers (after common.cuh): the element split, the alignment shift, the exact two-word
// accumulator and its single rounding to float32 (docs/numerics.md "mixpert", steps 1, 2, 5).
// Compile-time parameters (kWidth, kRoundNearest, ...) come from the rendered Params block.
// No standard headers, so that NVRTC compiles the file as nvcc does.

// Exponent of a zero or non-finite element, and of an all-zero alignment group (ZERO_EXP).
constexpr int kNoExp = -32768;
constexpr int kZeroExp = -(1 << 30);

// Step 1: |x| = M * 2^(e - W + 1), 2^(W-1) <= M < 2^W, RNE at bit W+1, carry renormalised
// except at emax = 127 (truncate). `bits` is a finite nonzero float32.
__device__ __forceinline__ void split_element(u32 bits, i64& mag, int& e) {
    const int be = (bits >> 23) & 0xFF;
    const u32 frac = bits & 0x7FFFFFu;
    u64 mant;
    if (be == 0) {  // subnormal: normalise
        const int nb = 32 - __clz(frac);
        mant = (u64)frac << (24 - nb);
        e = -149 + nb - 1;
    } else {
        mant = (u64)(frac | 0x800000u);
        e = be - 127;
    }
    if constexpr (kWidth >= 24) {
        mag = (i64)(mant << (kWidth - 24));
    } else {
        const int sh = 24 - kWidth;
        u64 m = mant >> sh;
        const u64 rem = mant & ((1ull << sh) - 1);
        const u64 half = 1ull << (sh - 1);
        if (rem > half || (rem == half && (m & 1))) m += 1;
        if (m == (1ull << kWidth)) {
            if (e >= 127) m -= 1;
            else { m = 1ull << (kWidth - 1); e += 1; }
        }
        mag = (i64)m;
    }
}

// Step 2: the magnitude shifted right by d >= 0, truncated or rounded to nearest-even.
__device__ __forceinline__ i64 shift_magnitude(i64 a, int d) {
    if (d <= 0) return a;
    if (d >= 63) return 0;
    i64 q = a >> d;
    if (kRoundNearest) {
        const i64 rem = a - (q << d);
        const i64 half = 1ll << (d - 1);
        if (rem > half || (rem == half && (q & 1))) q += 1;
    }
    return q;
}

// The exact per-element accumulator: a two's-complement 128-bit integer.
struct I128 {
    u64 lo;
    i64 hi;
};

// acc += v * 2^s (0 <= s < 126; the caller checked that the sum fits).
__device__ __forceinline__ void add_shifted(I128& acc, i64 v, int s) {
    u64 lo;
    i64 hi;
    if (s == 0) { lo = (u64)v; hi = v >> 63; }
    else if (s < 64) { lo = (u64)v << s; hi = v >> (64 - s); }
    else { lo = 0; hi = (i64)((u64)v << (s - 64)); }
    const u64 sum = acc.lo + lo;
    acc.hi = acc.hi + hi + (sum < lo ? 1 : 0);
    acc.lo = sum;
}

// RN32(acc * 2^scale): one correctly rounded conversion (ties to even, gradual underflow,
// overflow to inf). A result that is zero, exactly or after rounding, is +0 (as the CPU executor).
__device__ float round_to_f32(I128 acc, int scale) {
    const bool neg = acc.hi < 0;
    u64 lo = acc.lo, hi = (u64)acc.hi;
    if (neg) { lo = ~lo + 1; hi = ~hi + (lo == 0 ? 1 : 0); }
    if (lo == 0 && hi == 0) return 0.0f;
    const int nb = hi ? 128 - __clzll((i64)hi) : 64 - __clzll((i64)lo);
    const int lead = nb - 1 + scale;
    if (lead > 127) return neg ? -__int_as_float(0x7F800000) : __int_as_float(0x7F800000);
    int keep = lead + 150;
    if (keep > 24) keep = 24;
    const int drop = nb - keep;
    u64 q;
    if (drop <= 0) {
        q = lo << (-drop);
    } else if (drop > nb) {
        q = 0;
    } else {
        // q = mag >> drop; round bit = bit drop-1; sticky = bits below it
        q = drop >= 64 ? (hi >> (drop - 64)) : ((lo >> drop) | (drop ? (hi << (64 - drop)) : 0));
        const int rb = drop - 1;
        const u64 round_bit = rb >= 64 ? (hi >> (rb - 64)) & 1 : (lo >> rb) & 1;
        bool sticky;
        if (rb >= 64) sticky = lo != 0 || (rb > 64 && (hi & ((1ull << (rb - 64)) - 1)) != 0);
        else sticky = rb > 0 && (lo & ((1ull << rb) - 1)) != 0;
        if (round_bit && (sticky || (q & 1))) q += 1;
    }
    if (q == 0) return 0.0f;
    const float r = (float)ldexp((double)q, scale + drop);
    return neg ? -r : r;
}

// The planes each packer writes: their count and the segment each holds (kSegA / kSegB).
struct PlanesA {
    static constexpr int kCount = kPlanesA;
    typedef kSegA Seg;
};
struct PlanesB {
    static constexpr int kCount = kPlanesB;
    typedef kSegB Seg;
};

// The GEMMs' shared-memory stages and their cp.async fill (mixpert_gemm.cu, mixpert_fp64_gemm.cu):
// every kept plane of A and B for one 32-wide K chunk.
constexpr int kChunk = 32;  // the MMA k
constexpr int kThreads = 32 * kWarpsM * kWarpsN;

struct SharedTiles {
    i8 a[kStages][kPlanesA][kBlockM][kChunk];
    i8 b[kStages][kPlanesB][kBlockN][kChunk];
};

// Copy K chunk `chunk` of every A and B plane of this CTA into stage `stage` (16 B per cp.async).
__device__ __forceinline__ void load_chunk(SharedTiles& s, int stage, int chunk, const i8* __restrict__ pa,
                                           const i8* __restrict__ pb, int m0, int n0, int m_pad, int n_pad,
                                           int k_pad) {
    constexpr int kUnitsA = kPlanesA * kBlockM * 2;
    constexpr int kUnitsB = kPlanesB * kBlockN * 2;
    const int k0 = chunk * kChunk;
    for (int u = threadIdx.x; u < kUnitsA + kUnitsB; u += kThreads) {
        if (u < kUnitsA) {
            const int plane = u / (kBlockM * 2), row = (u / 2) % kBlockM, half = u % 2;
            cp_async_16(&s.a[stage][plane][row][16 * half],
                        pa + ((i64)plane * m_pad + m0 + row) * k_pad + k0 + 16 * half);
        } else {
            const int v = u - kUnitsA;
            const int plane = v / (kBlockN * 2), col = (v / 2) % kBlockN, half = v % 2;
            cp_async_16(&s.b[stage][plane][col][16 * half],
                        pb + ((i64)plane * n_pad + n0 + col) * k_pad + k0 + 16 * half);
        }
    }
}

// Element with no nonzero product along K: no scale (its result is +0).
constexpr int kNoScale = 0x7FFFFFFF;

// The GEMMs' prescan: the smallest E_A + E_B along K of each element this thread owns in its warp's
// kM×kN m16n8 tiles (kNoScale: none), and a span check against the exact accumulator's kAccBits.
template <int kM, int kN>
__device__ __forceinline__ void prescan_scales(int (&emin)[kM][kN][4], const int* __restrict__ gexp_a,
                                               const int* __restrict__ gexp_b, int ktiles, int row0, int col0, int g,
                                               int t, u32* __restrict__ status) {
    for_each_fragment_element<kM, kN>(row0, col0, g, t, [&](int mi, int ni, int c, int row, int col) {
        int lo = kNoScale, hi = kZeroExp;
        for (int kt = 0; kt < ktiles; ++kt) {
            const int ea = gexp_a[(i64)row * ktiles + kt], eb = gexp_b[(i64)col * ktiles + kt];
            if (ea != kZeroExp && eb != kZeroExp) { lo = min(lo, ea + eb); hi = max(hi, ea + eb); }
        }
        emin[mi][ni][c] = lo;
        const int kt_bits = 32 - __clz(ktiles);
        if (hi != kZeroExp && hi - lo + kPartialBits + kt_bits > kAccBits) atomicOr(status, kStatusSpan);
    });
}
