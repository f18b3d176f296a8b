"""The keys of a trial's reports that the driver reads: a failure, its kind, a draining report, the evaluation count.

A trial writes them (:mod:`.method`, :mod:`.infeasible`, :mod:`.stop_flag`, :mod:`.loop`); the platform reads them
(:mod:`sentsweep.platform.results`). They live here, apart from the training code, so that reading a sweep's results
back loads no torch.
"""

from __future__ import annotations

from typing import Literal

#: The key (1.0) of the terminal report of a trial that failed for a reason a retry cannot fix, and its reason.
FAILED_KEY = "failed"
FAILURE_REASON_KEY = "failure_reason"
#: The key of a failure report naming why the trial's settings are infeasible: one of :data:`INFEASIBLE_KINDS`.
INFEASIBLE_KEY = "infeasible"
InfeasibleKind = Literal["diverged", "out_of_memory"]
INFEASIBLE_KINDS: tuple[InfeasibleKind, ...] = ("diverged", "out_of_memory")
#: The key (1.0) of a trial's draining report: a checkpoint at the step reached, not an evaluation.
DRAINING_KEY = "sentsweep_draining"
#: The evaluations a trial made so far, counted from the state it restored.
EVALUATIONS_KEY = "evaluations"
#: The trial's step budget, in each evaluation's report: the evaluation at that step is its last.
TOTAL_STEPS_KEY = "total_steps"
