// tf32x3 / bf16xN GEMM (and split's FP16 part, one part): the kept part pairs multiplied on
// tensor cores (mma.sync m16n8k8 .tf32, or m16n8k16 .bf16 / .f16, FP32 accumulation), cp.async double buffering over 64-byte K chunks.
// Within each MMA k-step the pairs are issued smallest first (kPairA/kPairB), so big·big comes
// last, as in CUTLASS's 3xTF32. With kLoShift > 0 (fp16x2, whose lo parts are stored scaled by
// 2^kLoShift) the pairs holding a lo part go to a second accumulator, added as acc_lo·2^-kLoShift in
// the epilogue. The FP32 accumulator rounds where the hardware rounds: this kernel is NOT
// bit-equal to the CPU executor's exact-then-round-once semantics (docs/cuda.md).
//
// Fragments in 32-bit words along K (a word is one TF32 part or two BF16 parts, the lower k in
// the low half; PTX ISA "Matrix Fragments for mma.m16n8k8" (.tf32) and "mma.m16n8k16" (.bf16)),
// lane = 4*g + t, within one k-step of 8 words:
//   A (16 × 8 words, row): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//   B (8 words × 8, col):  b0 = B[t][g], b1 = B[t+4][g]
//   C (16×8 f32):          c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
// runtime/multiterm/cuda/fragments.py models exactly this arithmetic on the CPU.

namespace multiterm {  // one translation unit may hold several GEMM templates (split)

constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMmaM = kWarpTileM / 16;
constexpr int kMmaN = kWarpTileN / 8;
constexpr int kRowWords = (kChunkBytes + kPadBytes) / 4;  // one smem row: a chunk of K plus a pad
constexpr int kStepWords = 8;                              // one MMA k-step
constexpr int kStepsPerChunk = kChunkBytes / 4 / kStepWords;
constexpr int kUnitsPerRow = kChunkBytes / 16;             // 16-byte cp.async units

__device__ __forceinline__ void mma_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    if (kFormat == kFormatTf32) {
        asm volatile(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else if (kFormat == kFormatBf16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
}

struct SharedTiles {
    u32 a[kStages][kParts][kBlockM][kRowWords];
    u32 b[kStages][kParts][kBlockN][kRowWords];
};

// Copy K chunk `chunk` of every A and B part plane of this CTA into stage `stage`.
__device__ __forceinline__ void load_chunk(SharedTiles& s, int stage, int chunk, const char* __restrict__ pa,
                                           const char* __restrict__ pb, int m0, int n0, int m_pad, int n_pad,
                                           i64 row_bytes) {
    constexpr int kUnitsA = kParts * kBlockM * kUnitsPerRow;
    constexpr int kUnitsB = kParts * kBlockN * kUnitsPerRow;
    const i64 k0 = (i64)chunk * kChunkBytes;
    for (int u = threadIdx.x; u < kUnitsA + kUnitsB; u += kThreads) {
        if (u < kUnitsA) {
            const int part = u / (kBlockM * kUnitsPerRow), row = (u / kUnitsPerRow) % kBlockM, q = u % kUnitsPerRow;
            cp_async_16(&s.a[stage][part][row][4 * q], pa + ((i64)part * m_pad + m0 + row) * row_bytes + k0 + 16 * q);
        } else {
            const int v = u - kUnitsA;
            const int part = v / (kBlockN * kUnitsPerRow), col = (v / kUnitsPerRow) % kBlockN, q = v % kUnitsPerRow;
            cp_async_16(&s.b[stage][part][col][4 * q], pb + ((i64)part * n_pad + n0 + col) * row_bytes + k0 + 16 * q);
        }
    }
}

// grid (N_pad / kBlockN, M_pad / kBlockM), block kThreads; planes from multiterm_pack_a/b
extern "C" __global__ void __launch_bounds__(kThreads)
multiterm_gemm(const void* __restrict__ planes_a, const void* __restrict__ planes_b, int m, int n, int m_pad,
               int n_pad, int k_pad, OutT* __restrict__ out, i64 ldo, double alpha, double beta,
               const OutT* __restrict__ c_in, i64 ldc) {
    __shared__ __align__(16) SharedTiles s;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
    const int wm0 = (warp / kWarpsN) * kWarpTileM, wn0 = (warp % kWarpsN) * kWarpTileN;
    const i64 row_bytes = (i64)k_pad * kPartBytes;
    const int chunks = (int)(row_bytes / kChunkBytes);
    const char* pa = static_cast<const char*>(planes_a);
    const char* pb = static_cast<const char*>(planes_b);

    float acc[kMmaM][kMmaN][4];
    float acc_lo[kMmaM][kMmaN][4];  // kLoShift > 0 only (unused, hence removed, otherwise)
    fill_fragments(acc, 0.0f);
    fill_fragments(acc_lo, 0.0f);
    pipelined_k_loop<kStages>(
        chunks,
        [&](int stage, int chunk) { load_chunk(s, stage, chunk, pa, pb, m0, n0, m_pad, n_pad, row_bytes); },
        [&](int stage, int) {
#pragma unroll
            for (int step = 0; step < kStepsPerChunk; ++step) {
                const int w0 = step * kStepWords;
#pragma unroll
                for (int pi = 0; pi < kNumPairs; ++pi) {
                    const int pa_ = kPairA::at(pi), pb_ = kPairB::at(pi);
                    u32 fa[kMmaM][4], fb[kMmaN][2];
#pragma unroll
                    for (int mi = 0; mi < kMmaM; ++mi) {
                        const int r = wm0 + 16 * mi + g;
                        fa[mi][0] = s.a[stage][pa_][r][w0 + t];
                        fa[mi][1] = s.a[stage][pa_][r + 8][w0 + t];
                        fa[mi][2] = s.a[stage][pa_][r][w0 + t + 4];
                        fa[mi][3] = s.a[stage][pa_][r + 8][w0 + t + 4];
                    }
#pragma unroll
                    for (int ni = 0; ni < kMmaN; ++ni) {
                        const int cidx = wn0 + 8 * ni + g;
                        fb[ni][0] = s.b[stage][pb_][cidx][w0 + t];
                        fb[ni][1] = s.b[stage][pb_][cidx][w0 + t + 4];
                    }
                    const bool lo = kLoShift > 0 && pa_ + pb_ > 0;  // a compile-time constant per unrolled pair
#pragma unroll
                    for (int mi = 0; mi < kMmaM; ++mi)
#pragma unroll
                        for (int ni = 0; ni < kMmaN; ++ni) {
                            if (lo) mma_f32(acc_lo[mi][ni], fa[mi], fb[ni]);
                            else mma_f32(acc[mi][ni], fa[mi], fb[ni]);
                        }
                }
            }
        });

    // Epilogue: the FP32 accumulator(s) (a zero written +0), widened to the output type.
    for_each_fragment_element<kMmaM, kMmaN>(m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
        if (row >= m || col >= n) return;
        float sum = acc[mi][ni][c];
        if (kLoShift > 0) sum = __fadd_rn(sum, __fmul_rn(acc_lo[mi][ni][c], 1.0f / (float)(1 << kLoShift)));
        const float p = sum == 0.0f ? 0.0f : sum;
        store_output<kGemmUpdate>(out, ldo, row, col, p, alpha, beta, c_in, ldc);
    });
}

}  // namespace multiterm
