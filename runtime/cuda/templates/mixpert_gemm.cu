// MixPert GEMM: INT8 segment products on tensor cores (mma.sync m16n8k32 s8·s8 -> s32),
// cp.async double buffering over 32-wide K chunks, and the exact epilogue of
// docs/numerics.md "mixpert" step 5: per k-tile the kept pairs combine exactly in an int64,
// are scaled by 2^(E_A + E_B) relative to the element's smallest scale along K (a prescan of
// the group exponents), added into a two-word integer accumulator, and rounded once to float32.
//
// CTA tile kBlockM × kBlockN, warp grid kWarpsM × kWarpsN, each warp kWarpTileM × kWarpTileN.
// m16n8k32 fragments (PTX ISA, "Matrix Fragments for mma.m16n8k32", .s8): lane = 4*g + t,
//   A (16×32, row): a0 = A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][16+4t..], a3 = A[g+8][16+4t..]
//   B (32×8, col):  b0 = B[4t..4t+3][g], b1 = B[16+4t..16+4t+3][g]
//   C (16×8):       c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
// runtime/cuda/fragments.py models exactly this arithmetic on the CPU.

constexpr int kMmaM = kWarpTileM / 16;
constexpr int kMmaN = kWarpTileN / 8;
constexpr int kChunksPerKTile = kTileK / kChunk;

// grid (N_pad / kBlockN, M_pad / kBlockM), block kThreads
extern "C" __global__ void __launch_bounds__(kThreads)
mixpert_gemm(const i8* __restrict__ planes_a, const i8* __restrict__ planes_b, const int* __restrict__ gexp_a,
             const int* __restrict__ gexp_b, int m, int n, int m_pad, int n_pad, int k_pad, OutT* __restrict__ out,
             i64 ldo, double alpha, double beta, const OutT* __restrict__ c_in, i64 ldc, u32* __restrict__ status) {
    __shared__ __align__(16) SharedTiles s;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
    const int wm0 = (warp / kWarpsN) * kWarpTileM, wn0 = (warp % kWarpsN) * kWarpTileN;
    const int ktiles = k_pad / kTileK;
    const int chunks = k_pad / kChunk;

    int emin[kMmaM][kMmaN][4];
    prescan_scales(emin, gexp_a, gexp_b, ktiles, m0 + wm0, n0 + wn0, g, t, status);

    I128 acc[kMmaM][kMmaN][4];
    i64 part[kMmaM][kMmaN][4];
    fill_fragments(acc, I128{0, 0});
    fill_fragments(part, (i64)0);

    pipelined_k_loop<kStages>(
        chunks,
        [&](int stage, int chunk) {
            load_chunk(s, stage, chunk, planes_a, planes_b, m0, n0, m_pad, n_pad, k_pad);
        },
        [&](int stage, int chunk) {
#pragma unroll
            for (int pi = 0; pi < kNumPairs; ++pi) {
                const int pa = kPairA::at(pi), pb = kPairB::at(pi), shift = kPairShift::at(pi);
                u32 fa[kMmaM][4], fb[kMmaN][2];
                load_fragments_s8(fa, fb, s.a[stage][pa], s.b[stage][pb], wm0, wn0, g, t);
#pragma unroll
                for (int mi = 0; mi < kMmaM; ++mi)
#pragma unroll
                    for (int ni = 0; ni < kMmaN; ++ni) {
                        int d[4] = {0, 0, 0, 0};
                        mma_s8(d, fa[mi], fb[ni]);
#pragma unroll
                        for (int c = 0; c < 4; ++c) part[mi][ni][c] += (i64)d[c] << shift;
                    }
            }
            if ((chunk + 1) % kChunksPerKTile == 0) {  // end of a k-tile: scale and add exactly
                const int kt = chunk / kChunksPerKTile;
                for_each_fragment_element<kMmaM, kMmaN>(
                    m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
                        const int ea = gexp_a[(i64)row * ktiles + kt], eb = gexp_b[(i64)col * ktiles + kt];
                        if (ea != kZeroExp && eb != kZeroExp && part[mi][ni][c] != 0)
                            add_shifted(acc[mi][ni][c], part[mi][ni][c], ea + eb - emin[mi][ni][c]);
                        part[mi][ni][c] = 0;
                    });
            }
        });

    // Epilogue: C = RN32(acc * 2^(emin - 2(W-1))), widened to the output type.
    for_each_fragment_element<kMmaM, kMmaN>(m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
        if (row >= m || col >= n) return;
        const bool any = emin[mi][ni][c] != kNoScale;
        const float p = any ? round_to_f32(acc[mi][ni][c], emin[mi][ni][c] - 2 * (kWidth - 1)) : 0.0f;
        store_output<kAlphaBetaUpdate>(out, ldo, row, col, p, alpha, beta, c_in, ldc);
    });
}
