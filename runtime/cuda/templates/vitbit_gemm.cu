// The fused VitBit GEMM (seed 001, Algorithms 1-2; docs/numerics.md "vitbit" steps 3-5). One
// thread block, three warp roles over the same BM rows of A: warps [0, kTensorWarps) run IMMA on
// kBlockN tensor-core columns, then INT and FP warps alternate (warp kTensorWarps + 2j is INT warp
// j, the next one FP warp j). The A tile (int8, BM x 32 per K chunk) and the tensor-core B tile
// go through shared memory (cp.async, double-buffered); the INT and FP warps read their own B
// columns (packed words, converted floats) from global memory.
//   INT: thread r owns word column r % kIntWords and rows r / kIntWords + j*kIntGroups; per row,
//        reg = reg + u32(a)·word (IMAD, modulo 2^32) and after every kAcc k-steps the kPack
//        fields are extracted (lowest first, sign-extended, borrow returned) into INT32 sums.
//   FP:  thread r owns converted column r % kFpCols; FFMA on float(a)·b (products and sums below
//        2^24: exact), the FP32 sum added to INT32 after every kFpBlock k-steps.
//   Tensor: m16n8k32 s8 MMAs (imma.cuh) with INT32 accumulation.
// Epilogue: C[i][j] = RN32(RN64(RN64(S·s_i)·t_j)), the executor's dequantization, in product or
// alpha/beta update mode. runtime/vitbit/cuda/fragments.py models this kernel lane by lane.

namespace vitbit {

constexpr int kThreads = 32 * (kTensorWarps + kIntWarps + kFpWarps);
constexpr int kChunk = 32;  // the MMA k
constexpr int kMmaM = kWarpTileM / 16;
constexpr int kMmaN = kWarpTileN / 8;
constexpr int kIntGroups = 32 * kIntWarps / kIntWords;  // rows apart of one INT thread's rows
constexpr int kFpGroups = 32 * kFpWarps / kFpCols;
constexpr u32 kFieldMask = (1u << kSlot) - 1u;
constexpr int kTopBits = 32 - kSlot * (kPack - 1);  // the highest field keeps the remaining bits

struct Tiles {
    i8 a[kStages][kBlockM][kChunk];
    i8 b[kStages][kBlockN][kChunk];
};

// K chunk `chunk` of A's BM rows and of the CTA's tensor-core columns into stage `stage`.
__device__ __forceinline__ void load_tiles(Tiles& s, int stage, int chunk, const i8* __restrict__ plane_a,
                                           const i8* __restrict__ tens, int m0, int c0, int k_pad) {
    constexpr int kUnits = 2 * (kBlockM + kBlockN);  // 16-byte halves of 32-byte rows
    const int k0 = chunk * kChunk;
    for (int u = threadIdx.x; u < kUnits; u += kThreads) {
        const int row = u / 2, half = u % 2;
        if (row < kBlockM)
            cp_async_16(&s.a[stage][row][16 * half], plane_a + (i64)(m0 + row) * k_pad + k0 + 16 * half);
        else
            cp_async_16(&s.b[stage][row - kBlockM][16 * half],
                        tens + (i64)(c0 + row - kBlockM) * k_pad + k0 + 16 * half);
    }
}

// The signed fields of an accumulated word, added to sums[0..kPack): field p at bit kSlot*(kPack-1-p).
__device__ __forceinline__ void extract_fields(u32 reg, int (&sums)[kPack]) {
#pragma unroll
    for (int p = kPack - 1; p > 0; --p) {
        const int f = (int)((reg & kFieldMask) ^ (1u << (kSlot - 1))) - (1 << (kSlot - 1));
        sums[p] += f;
        reg = (reg - (u32)f) >> kSlot;  // exact: the low kSlot bits of reg - f are zero
    }
    const u32 top = reg & ((1u << kTopBits) - 1u);  // kTopBits < 32: kPack >= 2
    sums[0] += (int)(top ^ (1u << (kTopBits - 1))) - (1 << (kTopBits - 1));
}

__device__ __forceinline__ double dequantize(int sum, double sa, double sb) {
    return __dmul_rn(__dmul_rn((double)sum, sa), sb);
}

}  // namespace vitbit

// grid (grid_x, m_pad / kBlockM), block kThreads. Planes as vitbit_pack.cu writes them; column j of
// C: packed j < n1 (word j / kPack, field j % kPack), converted n1 <= j < n1 + n2, tensor-core after.
extern "C" __global__ void __launch_bounds__(vitbit::kThreads)
vitbit_gemm(const i8* __restrict__ plane_a, const u32* __restrict__ words, const float* __restrict__ conv,
            const i8* __restrict__ tens, int m, int n, int n1, int n2, int k_pad, int g_pad, int n2_pad,
            const double* __restrict__ scale_a, const double* __restrict__ scale_b, OutT* __restrict__ out, i64 ldo,
            double alpha, double beta, const OutT* __restrict__ c_in, i64 ldc) {
    using namespace vitbit;
    __shared__ __align__(16) Tiles s;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int m0 = blockIdx.y * kBlockM;
    const int chunks = k_pad / kChunk;
    const bool tensor = warp < kTensorWarps;
    const bool is_int = !tensor && (warp - kTensorWarps) % 2 == 0;
    const int role_warp = tensor ? warp : (warp - kTensorWarps) / 2;
    const int rt = 32 * role_warp + lane;  // thread index within its role

    // tensor role
    const int g = lane / 4, t = lane % 4;
    const int wm0 = (role_warp / kWarpsN) * kWarpTileM, wn0 = (role_warp % kWarpsN) * kWarpTileN;
    int acc[kMmaM][kMmaN][4];
    // INT role
    const int word_col = blockIdx.x * kIntWords + rt % kIntWords;
    const int int_row0 = rt / kIntWords;
    u32 reg[kIntRows];
    int isum[kIntRows][kPack];
    int steps = 0;
    // FP role
    const int fp_col = blockIdx.x * kFpCols + rt % kFpCols;
    const int fp_row0 = rt / kFpCols;
    float facc[kFpRows];
    int fsum[kFpRows];
    int fsteps = 0;

    fill_fragments(acc, 0);
#pragma unroll
    for (int j = 0; j < kIntRows; ++j) {
        reg[j] = 0u;
#pragma unroll
        for (int p = 0; p < kPack; ++p) isum[j][p] = 0;
    }
#pragma unroll
    for (int j = 0; j < kFpRows; ++j) {
        facc[j] = 0.0f;
        fsum[j] = 0;
    }

    pipelined_k_loop<kStages>(
        chunks,
        [&](int stage, int chunk) { load_tiles(s, stage, chunk, plane_a, tens, m0, blockIdx.x * kBlockN, k_pad); },
        [&](int stage, int chunk) {
            const int k0 = chunk * kChunk;
            if (tensor) {
                warp_mma_s8(acc, s.a[stage], s.b[stage], wm0, wn0, g, t);
            } else if (is_int) {
#pragma unroll 4
                for (int kk = 0; kk < kChunk; ++kk) {
                    const u32 w = words[(i64)(k0 + kk) * g_pad + word_col];
#pragma unroll
                    for (int j = 0; j < kIntRows; ++j)
                        reg[j] += (u32)(int)s.a[stage][int_row0 + j * kIntGroups][kk] * w;  // IMAD, packed
                    if (++steps == kAcc) {
#pragma unroll
                        for (int j = 0; j < kIntRows; ++j) {
                            extract_fields(reg[j], isum[j]);
                            reg[j] = 0u;
                        }
                        steps = 0;
                    }
                }
            } else {
#pragma unroll 4
                for (int kk = 0; kk < kChunk; ++kk) {
                    const float b = conv[(i64)(k0 + kk) * n2_pad + fp_col];
#pragma unroll
                    for (int j = 0; j < kFpRows; ++j)
                        facc[j] = __fmaf_rn((float)s.a[stage][fp_row0 + j * kFpGroups][kk], b, facc[j]);  // FFMA
                    if (++fsteps == kFpBlock) {
#pragma unroll
                        for (int j = 0; j < kFpRows; ++j) {
                            fsum[j] += __float2int_rn(facc[j]);
                            facc[j] = 0.0f;
                        }
                        fsteps = 0;
                    }
                }
            }
        });

    if (tensor) {
        const int base = n1 + n2 + blockIdx.x * kBlockN;
        for_each_fragment_element<kMmaM, kMmaN>(
            m0 + wm0, base + wn0, g, t, [&](int mi, int ni, int c, int row, int col) {
                if (row < m && col < n)
                    store_output<kAlphaBetaUpdate>(out, ldo, row, col,
                                                   (float)dequantize(acc[mi][ni][c], scale_a[row], scale_b[col]),
                                                   alpha, beta, c_in, ldc);
            });
    } else if (is_int) {
#pragma unroll
        for (int j = 0; j < kIntRows; ++j) {
            extract_fields(reg[j], isum[j]);  // the products since the last extraction
            const int row = m0 + int_row0 + j * kIntGroups;
#pragma unroll
            for (int p = 0; p < kPack; ++p) {
                const int col = word_col * kPack + p;
                if (row < m && col < n1)
                    store_output<kAlphaBetaUpdate>(out, ldo, row, col,
                                                   (float)dequantize(isum[j][p], scale_a[row], scale_b[col]), alpha,
                                                   beta, c_in, ldc);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < kFpRows; ++j) {
            const int row = m0 + fp_row0 + j * kFpGroups;
            const int col = n1 + fp_col;
            if (row < m && fp_col < n2)
                store_output<kAlphaBetaUpdate>(out, ldo, row, col,
                                               (float)dequantize(fsum[j] + __float2int_rn(facc[j]), scale_a[row],
                                                                 scale_b[col]),
                                               alpha, beta, c_in, ldc);
        }
    }
}
