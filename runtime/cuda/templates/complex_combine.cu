// Complex epilogue (docs/numerics.md "Complex products", docs/cuda.md "Complex sites"), after the
// real products of the parts, each computed by the real scheme's own kernels:
//   form 4: Re C = P_rr − P_ii, Im C = P_ri + P_ir            (p0..p3 = P_rr, P_ii, P_ri, P_ir)
//   form 3: Re C = T1 − T2,     Im C = (T3 − T1) − T2         (p0..p2 = T1, T2, T3; p3 unused)
// Every operation is one IEEE operation in the parts' type, rounded to nearest (the _rn
// intrinsics: never contracted into an FMA, no flush to zero), as runtime/complex/epilogue.py's
// compiled combine4/combine3 compute them. C is interleaved complex: (Re, Im) at element
// 2·(row·ldo + col). Update mode: C = alpha·P + beta·C in complex arithmetic as the frontend's
// _axpby does it in C's dtype: alpha and beta are (x + 0i), and (a + bi)(c + di) = (ac − bd) + i(ad + bc)
// with every product and sum rounded on its own (beta == 0 overwrites C).

namespace complex_epilogue {

__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

// (a + 0i)(re + i·im), the frontend's complex product with a real-valued factor
__device__ __forceinline__ void scale(InT a, InT re, InT im, InT& out_re, InT& out_im) {
    const InT zero = 0;
    out_re = sub_rn(mul_rn(a, re), mul_rn(zero, im));
    out_im = add_rn(mul_rn(a, im), mul_rn(zero, re));
}

}  // namespace complex_epilogue

// grid (ceil(n / kCombineCols), ceil(m / kCombineRows)), block (kCombineCols, kCombineRows)
// out and c_in may be the same matrix (C = alpha·P + beta·C in place): no __restrict__ on them.
extern "C" __global__ void __launch_bounds__(256)
complex_combine(const InT* __restrict__ p0, const InT* __restrict__ p1, const InT* __restrict__ p2,
                const InT* __restrict__ p3, int ld_part, int m, int n, InT* out, i64 ldo, double alpha,
                double beta, const InT* c_in, i64 ldc) {
    using complex_epilogue::sub_rn;
    const int col = blockIdx.x * kCombineCols + threadIdx.x, row = blockIdx.y * kCombineRows + threadIdx.y;
    if (row >= m || col >= n) return;
    const i64 at = (i64)row * ld_part + col;
    InT re, im;
    if (kForm == 4) {
        re = sub_rn(p0[at], p1[at]);
        im = add_rn(p2[at], p3[at]);
    } else {
        const InT t1 = p0[at], t2 = p1[at];
        re = sub_rn(t1, t2);
        im = sub_rn(sub_rn(p2[at], t1), t2);  // T1 is subtracted first
    }
    if (kAlphaBetaUpdate) {
        InT xr, xi;
        complex_epilogue::scale((InT)alpha, re, im, xr, xi);
        if (beta != 0.0) {
            InT yr, yi;
            const i64 ci = 2 * ((i64)row * ldc + col);
            complex_epilogue::scale((InT)beta, c_in[ci], c_in[ci + 1], yr, yi);
            xr = add_rn(xr, yr);
            xi = add_rn(xi, yi);
        }
        re = xr;
        im = xi;
    }
    const i64 o = 2 * ((i64)row * ldo + col);
    out[o] = re;
    out[o + 1] = im;
}
