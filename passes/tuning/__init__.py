"""The precision tuner as a pure library (no numba, no numpy at import).

``space``: the vocabulary (candidates, site spaces, plans, evaluations, the evaluator
interface). ``profile`` / ``plan_attr``: a site's profile and chosen plan as the
``mix.profile`` / ``mix.plan`` attributes of its ``mix.gemm`` op (``attrs`` reads them), so a
dump carries them and ``mixopt`` can re-tune offline. ``candidates``: ordering and Pareto
pruning. ``greedy`` / ``exhaustive``: the searches, over a shared ``judge`` (memo, max-evals,
Ctrl-C, progress). ``error_model``: the offline evaluator. ``backend``: the ``TuningBackend`` analysis through
which the ``tune`` pass gets profiles and its evaluator (offline by default; ``@mixjit``
registers an online one). ``retarget``: re-modeling times for
another target. ``report``: the ``mixopt --report`` table and the one table renderer (rich) of both reports. ``synthetic``: random problems for
tests and tools/bench_tuner_synthetic.py. The online backend (which writes the plan table and
runs the compiled function) lives in ``mixjit.tuning.online``. See docs/tuning.md.
"""
