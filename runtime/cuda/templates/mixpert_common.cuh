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
