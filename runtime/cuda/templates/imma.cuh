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

