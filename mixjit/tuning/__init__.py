"""The online half of the precision tuner: profile a @mixjit function on sample inputs,
judge plans by running its compiled code under the plan table, search (the ``tune`` pass,
greedy or exhaustive from ``mixjit.passes.tuning``, run by the pass manager), validate on
held-out inputs, save and load plans, report. docs/frontend_tuning.md.

Modules: ``outputs`` (what a run produces, the error metric), ``profiling`` (shape log,
statistics, candidates with modeled times), ``evaluator`` (the online ``Evaluator``),
``online`` (the backend that lets the ``tune`` pass measure and judge online, and the pass
manager runs of ``detect-gemm,detect-linalg,build-dag,tune{...}``), ``driver`` (``tune``), ``persistence`` (plan files), ``report`` (table, Pareto plot),
``progress`` (progress line), ``api`` (what the dispatcher's methods call),
``annotate`` (``mix.profile`` attributes for dumps).
"""

from mixjit.tuning.driver import TuneResult, Validation, tune
from mixjit.tuning.persistence import PlanFileError, PlanSite, TunedPlan

__all__ = ["tune", "TuneResult", "Validation", "TunedPlan", "PlanSite", "PlanFileError"]
