"""Blocked factorizations and solves whose products run under a real GEMM scheme.

Semantics: docs/numerics.md, "linalg". The modules, one job each:

* config.py: a candidate's config (``block``, ``gemm``, ``refine``) and its label;
* panel.py: the compiled panel steps (Cholesky and LU panels, the block row of U, the
  in-block triangular substitutions), working precision, no GEMM;
* factor.py: the blocked drivers (Cholesky, LU with partial pivoting, the blocked
  triangular solves), GEMM updates through the configured scheme;
* refine.py: the iterative-refinement loop (residual and test given by the caller);
* lstsq.py: ``lstsq``'s solution by the normal equations, the uniqueness test, refinement;
* solve.py: ``cholesky``, ``solve``, ``inv``, ``lstsq``, ``det`` and ``slogdet`` as Numba's ``np.linalg`` checks and
  raises (the executor, ``run_linalg``), the LAPACK fallback;
* cost.py: the modeled time of a candidate (GEMM parts from the GEMM cost model).
"""
