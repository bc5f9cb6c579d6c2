// mixpert-fp64 GEMM: INT8 segment products on tensor cores (mma.sync m16n8k32 s8·s8 -> s32), cp.async
// double buffering over 32-wide K chunks, and the exact value X of docs/numerics.md "mixpert-fp64"
// rounded once to float64.
//
// The kept pairs (p, r) of one weight 2^(7(2(s-1) - p - r)) (one "diagonal" p + r) accumulate in
// one INT32 MMA accumulator, exactly: kFlushChunks chunks of the diagonal's pairs stay below 2^31.
// Every kFlushChunks chunks, and at the end of each k-tile, each diagonal is added, scaled by its
// weight and by 2^(E_A + E_B) relative to the element's smallest scale along K (a prescan of the
// group exponents), into a kAccWords-word integer accumulator; the epilogue rounds it once:
// P = RN64(X). The guarantee check (step 6) runs on the host (runtime/mixpert/cuda/host_check.py),
// so the kernel writes P only (product mode). Status: an inf/NaN input (the packers) or a span of
// group exponents too wide for the accumulator hands the GEMM to the CPU executor.
//
// CTA tile kBlockM × kBlockN, warp grid kWarpsM × kWarpsN, each warp kWarpTileM × kWarpTileN;
// fragments as mixpert_gemm.cu (imma.cuh). runtime/mixpert/cuda/fp64_fragments.py models it.

constexpr int kMmaM = kWarpTileM / 16;
constexpr int kMmaN = kWarpTileN / 8;
constexpr int kChunksPerKTile = kTileK / kChunk;

// grid (N_pad / kBlockN, M_pad / kBlockM), block kThreads
extern "C" __global__ void __launch_bounds__(kThreads)
mixpert_fp64_gemm(const i8* __restrict__ planes_a, const i8* __restrict__ planes_b, const int* __restrict__ gexp_a,
                  const int* __restrict__ gexp_b, int m, int n, int m_pad, int n_pad, int k_pad,
                  OutT* __restrict__ out, i64 ldo, u32* __restrict__ status) {
    __shared__ __align__(16) SharedTiles s;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
    const int wm0 = (warp / kWarpsN) * kWarpTileM, wn0 = (warp % kWarpsN) * kWarpTileN;
    const int ktiles = (k_pad + kTileK - 1) / kTileK;
    const int chunks = k_pad / kChunk;

    int emin[kMmaM][kMmaN][4];
    prescan_scales(emin, gexp_a, gexp_b, ktiles, m0 + wm0, n0 + wn0, g, t, status);

    Wide acc[kMmaM][kMmaN][4];
    int diag[kNumDiags][kMmaM][kMmaN][4];
    fill_fragments(acc, Wide{});
#pragma unroll
    for (int dg = 0; dg < kNumDiags; ++dg) fill_fragments(diag[dg], 0);

    pipelined_k_loop<kStages>(
        chunks,
        [&](int stage, int chunk) {
            load_chunk(s, stage, chunk, planes_a, planes_b, m0, n0, m_pad, n_pad, k_pad);
        },
        [&](int stage, int chunk) {
#pragma unroll
            for (int pi = 0; pi < kNumPairs; ++pi) {
                u32 fa[kMmaM][4], fb[kMmaN][2];
                load_fragments_s8(fa, fb, s.a[stage][kPairA::at(pi)], s.b[stage][kPairB::at(pi)], wm0, wn0, g, t);
#pragma unroll
                for (int mi = 0; mi < kMmaM; ++mi)
#pragma unroll
                    for (int ni = 0; ni < kMmaN; ++ni) mma_s8(diag[kPairDiag::at(pi)][mi][ni], fa[mi], fb[ni]);
            }
            const int kt = chunk / kChunksPerKTile, in_tile = chunk % kChunksPerKTile;
            if ((in_tile + 1) % kFlushChunks == 0 || in_tile + 1 == kChunksPerKTile || chunk + 1 == chunks) {
                for_each_fragment_element<kMmaM, kMmaN>(
                    m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
                        const int ea = gexp_a[(i64)row * ktiles + kt], eb = gexp_b[(i64)col * ktiles + kt];
                        const int scale = ea + eb - emin[mi][ni][c];
#pragma unroll
                        for (int dg = 0; dg < kNumDiags; ++dg) {
                            // a zero group's planes are zero: its diagonals are too
                            if (diag[dg][mi][ni][c] != 0)
                                add_shifted_wide(acc[mi][ni][c], diag[dg][mi][ni][c], kDiagShift::at(dg) + scale);
                            diag[dg][mi][ni][c] = 0;
                        }
                    });
            }
        });

    // Epilogue: P = RN64(acc * 2^(emin - 2(W-1))).
    for_each_fragment_element<kMmaM, kMmaN>(m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
        if (row >= m || col >= n) return;
        const bool any = emin[mi][ni][c] != kNoScale;
        out[(i64)row * ldo + col] = any ? round_to_f64(acc[mi][ni][c], emin[mi][ni][c] - 2 * (kWidth - 1)) : 0.0;
    });
}
