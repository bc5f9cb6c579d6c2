// Batched INT8 GEMM on tensor cores (mma.sync m16n8k32 s8·s8 -> s32 through imma.cuh), one
// batch per blockIdx.z (ozaki2: one modulus), cp.async double buffering over 32-byte K chunks,
// exact INT32 accumulation over the whole of K (|sum| <= K·2^14 < 2^31 for K < 2^17; the desc
// refuses longer K). Epilogue: with kEpilogueModulus the sum reduced modulo the batch's modulus
// kModuli[z] into [0, p) as int16 (ozaki2's c_l = T_l mod p_l), else the raw int32 sum.
// Planes: [batch][rows_pad][k_pad] int8, A row-major, B column-major (k contiguous).
// runtime/ozaki2/cuda/fragments.py models exactly this arithmetic on the CPU.

namespace int8 {  // one translation unit may hold several GEMM templates (split)

constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMmaM = kWarpTileM / 16;
constexpr int kMmaN = kWarpTileN / 8;
constexpr int kChunk = 32;  // the MMA k

struct SharedTiles {
    i8 a[kStages][kBlockM][kChunk];
    i8 b[kStages][kBlockN][kChunk];
};

// Copy K chunk `chunk` of this CTA's A and B rows into stage `stage` (16 B per cp.async).
__device__ __forceinline__ void load_chunk(SharedTiles& s, int stage, int chunk, const i8* __restrict__ pa,
                                           const i8* __restrict__ pb, int m0, int n0, int k_pad) {
    constexpr int kUnitsA = kBlockM * 2;
    const int k0 = chunk * kChunk;
    for (int u = threadIdx.x; u < kUnitsA + kBlockN * 2; u += kThreads) {
        if (u < kUnitsA) {
            const int row = u / 2, half = u % 2;
            cp_async_16(&s.a[stage][row][16 * half], pa + (i64)(m0 + row) * k_pad + k0 + 16 * half);
        } else {
            const int col = (u - kUnitsA) / 2, half = u % 2;
            cp_async_16(&s.b[stage][col][16 * half], pb + (i64)(n0 + col) * k_pad + k0 + 16 * half);
        }
    }
}

// grid (N_pad / kBlockN, M_pad / kBlockM, batches), block kThreads; out[z][row][col] at
// out + z*batch_stride + row*ldo + col (int16 with kEpilogueModulus, else int32)
extern "C" __global__ void __launch_bounds__(kThreads)
int8_gemm(const i8* __restrict__ planes_a, const i8* __restrict__ planes_b, int m, int n, int m_pad, int n_pad,
          int k_pad, void* __restrict__ out, i64 ldo, i64 batch_stride) {
    __shared__ __align__(16) SharedTiles s;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int z = blockIdx.z;
    const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
    const int wm0 = (warp / kWarpsN) * kWarpTileM, wn0 = (warp % kWarpsN) * kWarpTileN;
    const int chunks = k_pad / kChunk;
    const i8* pa = planes_a + (i64)z * m_pad * k_pad;
    const i8* pb = planes_b + (i64)z * n_pad * k_pad;

    int acc[kMmaM][kMmaN][4];
    fill_fragments(acc, 0);
    pipelined_k_loop<kStages>(
        chunks, [&](int stage, int chunk) { load_chunk(s, stage, chunk, pa, pb, m0, n0, k_pad); },
        [&](int stage, int) { warp_mma_s8(acc, s.a[stage], s.b[stage], wm0, wn0, g, t); });

    for_each_fragment_element<kMmaM, kMmaN>(m0 + wm0, n0 + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
        if (row >= m || col >= n) return;
        const i64 at = (i64)z * batch_stride + (i64)row * ldo + col;
        if (kEpilogueModulus) {
            int p = 1;
#pragma unroll
            for (int l = 0; l < kNumModuli; ++l)
                if (l == z) p = kModuli::at(l);  // unrolled: no indexed (local-memory) array
            int r = acc[mi][ni][c] % p;
            if (r < 0) r += p;
            static_cast<short*>(out)[at] = (short)r;
        } else {
            static_cast<int*>(out)[at] = acc[mi][ni][c];
        }
    });
}

}  // namespace int8
