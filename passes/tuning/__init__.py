"""The precision tuner as a pure library (no numba, no numpy at import).

``space``: the vocabulary (candidates, site spaces, plans, evaluations, the evaluator
interface). ``profile``: a site's profile as the ``mix.profile`` attribute of its
``mix.gemm`` op, so a dump carries it and ``mixopt`` can re-tune offline. The search
algorithms and the offline error model live beside them. The online evaluator (which
writes the plan table and runs the compiled function) lives in ``mixjit.tuning``.
"""
