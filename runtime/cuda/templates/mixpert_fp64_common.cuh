// mixpert-fp64 device helpers (after mixpert_common.cuh): the float64 element split, the exact
// wide accumulator and its single rounding to float64 (docs/numerics.md "mixpert-fp64"; steps 1,
// 2 and 5 of "mixpert" in the float64 domain). runtime/mixpert/cuda/fp64_fragments.py models them.

// Step 1 for a float64: |x| = M * 2^(e - W + 1), 2^(W-1) <= M < 2^W; exact when W >= 53, else RNE
// at bit W+1 with the carry renormalised, except at emax = 1023 (truncate). `bits`: finite, nonzero.
__device__ __forceinline__ void split_element64(u64 bits, i64& mag, int& e) {
    const int be = (int)((bits >> 52) & 0x7FF);
    const u64 frac = bits & 0xFFFFFFFFFFFFFull;
    u64 mant;
    if (be == 0) {  // subnormal: normalise
        const int nb = 64 - __clzll((i64)frac);
        mant = frac << (53 - nb);
        e = -1074 + nb - 1;
    } else {
        mant = frac | (1ull << 52);
        e = be - 1023;
    }
    if constexpr (kWidth >= 53) {
        mag = (i64)(mant << (kWidth - 53));
    } else {
        const int sh = 53 - kWidth;
        u64 m = mant >> sh;
        const u64 rem = mant & ((1ull << sh) - 1);
        const u64 half = 1ull << (sh - 1);
        if (rem > half || (rem == half && (m & 1))) m += 1;
        if (m == (1ull << kWidth)) {
            if (e >= 1023) m -= 1;
            else { m = 1ull << (kWidth - 1); e += 1; }
        }
        mag = (i64)m;
    }
}

// The exact per-element accumulator: a two's-complement integer of kAccWords 64-bit words.
struct Wide {
    u64 w[kAccWords];
};

// acc += v * 2^s (0 <= s <= 64 * kAccWords - 64; the span check keeps the sum inside kAccBits).
__device__ __forceinline__ void add_shifted_wide(Wide& acc, i64 v, int s) {
    const u64 fill = v < 0 ? ~0ull : 0ull;
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < kAccWords; ++i) {
        const int low = 64 * i - s;  // the bit of v at bit 0 of word i
        u64 x;
        if (low <= -64) x = 0;
        else if (low < 0) x = (u64)v << (-low);
        else if (low == 0) x = (u64)v;
        else if (low < 64) x = ((u64)v >> low) | (fill << (64 - low));
        else x = fill;
        const u64 sum = acc.w[i] + x;
        const u64 out = sum + carry;
        carry = (sum < x ? 1ull : 0ull) + (out < sum ? 1ull : 0ull);
        acc.w[i] = out;
    }
}

// Word i of a magnitude (0 outside it), by unrolled selects: no local-memory array.
__device__ __forceinline__ u64 wide_word(const u64 (&mag)[kAccWords], int i) {
    u64 r = 0;
#pragma unroll
    for (int j = 0; j < kAccWords; ++j) r = j == i ? mag[j] : r;
    return r;
}

// Bits pos .. pos+63 of a magnitude (0 above its top word), pos >= 0.
__device__ __forceinline__ u64 wide_window(const u64 (&mag)[kAccWords], int pos) {
    const int wi = pos / 64, sh = pos % 64;
    return (wide_word(mag, wi) >> sh) | (sh ? wide_word(mag, wi + 1) << (64 - sh) : 0ull);
}

// RN64(acc * 2^scale): one correctly rounded conversion (ties to even, gradual underflow, overflow
// to inf). A result that is zero, exactly or after rounding, is +0 (as the CPU executor).
__device__ double round_to_f64(const Wide& acc, int scale) {
    const bool neg = (i64)acc.w[kAccWords - 1] < 0;
    u64 mag[kAccWords];
    u64 carry = 1;
#pragma unroll
    for (int i = 0; i < kAccWords; ++i) {
        const u64 x = neg ? ~acc.w[i] : acc.w[i];
        mag[i] = neg ? x + carry : x;
        carry = neg ? (carry && mag[i] == 0 ? 1ull : 0ull) : 0ull;
    }
    int nb = 0;
#pragma unroll
    for (int i = kAccWords - 1; i >= 0; --i)
        if (nb == 0 && mag[i] != 0) nb = 64 * i + 64 - __clzll((i64)mag[i]);
    if (nb == 0) return 0.0;
    const int lead = nb - 1 + scale;
    if (lead > 1023) return neg ? -__longlong_as_double(0x7FF0000000000000ll) : __longlong_as_double(0x7FF0000000000000ll);
    int keep = lead + 1075;
    if (keep > 53) keep = 53;
    const int drop = nb - keep;
    u64 q;
    if (drop <= 0) {
        q = mag[0] << (-drop);  // nb <= 53: the value is in word 0
    } else if (drop > nb) {
        q = 0;
    } else {
        q = wide_window(mag, drop);
        const int rb = drop - 1, rw = rb / 64;
        const u64 round_bit = (wide_word(mag, rw) >> (rb % 64)) & 1;
        bool sticky = (wide_word(mag, rw) & ((1ull << (rb % 64)) - 1)) != 0;
#pragma unroll
        for (int i = 0; i < kAccWords; ++i) sticky = sticky || (i < rw && mag[i] != 0);
        if (round_bit && (sticky || (q & 1))) q += 1;
    }
    if (q == 0) return 0.0;
    const double r = ldexp((double)q, scale + drop);
    return neg ? -r : r;
}
