// The INT8 tensor-core MMA (PTX ISA "Matrix Fragments for mma.m16n8k32", .s8), shared by the
// MixPert GEMM and the INT8 GEMM of the residue (ozaki2) and split kernels. lane = 4*g + t:
//   A (16×32, row): a0 = A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][16+4t..], a3 = A[g+8][16+4t..]
//   B (32×8, col):  b0 = B[4t..4t+3][g], b1 = B[16+4t..16+4t+3][g]
//   C (16×8):       c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
// runtime/cuda/fragments.py models it from these tables.

__device__ __forceinline__ void mma_s8(int (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}


// The A and B fragments of one warp's kM×kN m16n8k32 MMAs from int8 shared tiles of 32-byte rows:
// a[row][k] (A row-major, rows from wm0) and b[col][k] (B column-major, columns from wn0).
template <int kM, int kN>
__device__ __forceinline__ void load_fragments_s8(u32 (&fa)[kM][4], u32 (&fb)[kN][2], const i8 (*a)[32],
                                                  const i8 (*b)[32], int wm0, int wn0, int g, int t) {
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
        const int r = wm0 + 16 * mi + g;
        fa[mi][0] = *reinterpret_cast<const u32*>(&a[r][4 * t]);
        fa[mi][1] = *reinterpret_cast<const u32*>(&a[r + 8][4 * t]);
        fa[mi][2] = *reinterpret_cast<const u32*>(&a[r][16 + 4 * t]);
        fa[mi][3] = *reinterpret_cast<const u32*>(&a[r + 8][16 + 4 * t]);
    }
#pragma unroll
    for (int ni = 0; ni < kN; ++ni) {
        const int col = wn0 + 8 * ni + g;
        fb[ni][0] = *reinterpret_cast<const u32*>(&b[col][4 * t]);
        fb[ni][1] = *reinterpret_cast<const u32*>(&b[col][16 + 4 * t]);
    }
}

// acc += A·B over one 32-wide K chunk for a warp's kM×kN MMA tiles (INT32 accumulation).
template <int kM, int kN>
__device__ __forceinline__ void warp_mma_s8(int (&acc)[kM][kN][4], const i8 (*a)[32], const i8 (*b)[32], int wm0,
                                            int wn0, int g, int t) {
    u32 fa[kM][4], fb[kN][2];
    load_fragments_s8(fa, fb, a, b, wm0, wn0, g, t);
#pragma unroll
    for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kN; ++ni) mma_s8(acc[mi][ni], fa[mi], fb[ni]);
}
