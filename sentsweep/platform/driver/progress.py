"""One line of sweep progress whenever a trial ends, and every ``every_s`` seconds in between.

    [  41s] 5/8 trials: 2 finished, 2 running, 1 pruned, 0 failed | best stsb_dev 78.41 (3c1f2a0b)

and one line when a trial resumed elsewhere than the checkpoint Tune named
(:mod:`sentsweep.trainables.restore_note`).
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from ray.tune import Callback

from sentsweep.platform.tracking.trial_runs_callback import trial_outcome
from sentsweep.tracking.names import SEARCH_PREFIX, trial_label
from sentsweep.trainables.restore_note import restore_line

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


class ProgressCallback(Callback):
    """Prints trials done / running / pruned / failed and the best value so far."""

    def __init__(self, metric: str, mode: str, num_samples: int, every_s: float = 30.0,
                 label_prefix: str = SEARCH_PREFIX) -> None:
        self.metric = metric
        self.label_prefix = label_prefix
        self.mode = mode
        self.num_samples = num_samples
        self.every_s = every_s
        self._start = time.monotonic()
        self._last = 0.0

    def setup(self, **info: Any) -> None:
        self._start = time.monotonic()
        self.num_samples = info.get("total_num_samples") or self.num_samples  # a resume may have changed it

    def line(self, trials: list[Trial], ending: Trial | None = None) -> str:
        """The progress line; ``ending`` is a trial Tune is completing (its status not yet updated)."""
        counts = Counter(self._outcome(t, ending) for t in trials)
        ended = counts["finished"] + counts["pruned"] + counts["failed"]
        text = (f"[{time.monotonic() - self._start:5.0f}s] {ended}/{self.num_samples} trials: "
                f"{counts['finished']} finished, {counts['running']} running, "
                f"{counts['pruned']} pruned, {counts['failed']} failed")
        best = self.best(trials)
        if best is not None:
            text += f" | best {self.metric} {best[1]:.2f} ({best[0]})"
        return text

    @staticmethod
    def _outcome(trial: Trial, ending: Trial | None) -> str:
        outcome = trial_outcome(trial)
        return "pruned" if trial is ending and outcome == "running" else outcome

    def best(self, trials: list[Trial]) -> tuple[str, float] | None:
        """The best value any trial reported so far, and its trial's label (:mod:`sentsweep.tracking.names`)."""
        found: tuple[str, float] | None = None
        for number, trial in enumerate(trials, 1):
            result = trial.last_result or {}
            value = result.get(f"best_{self.metric}", result.get(self.metric))
            if not isinstance(value, int | float) or math.isnan(value):
                continue
            if found is None or (value > found[1] if self.mode == "max" else value < found[1]):
                found = (trial_label(number, self.label_prefix) or trial.trial_id, float(value))
        return found

    def _print(self, trials: list[Trial], ending: Trial | None = None) -> None:
        self._last = time.monotonic()
        print(self.line(trials, ending), file=sys.stdout, flush=True)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if time.monotonic() - self._last >= self.every_s:
            self._print(trials)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        """One line for a trial that resumed elsewhere than the checkpoint Tune named (:func:`restore_line`)."""
        line = restore_line(trial.trial_id, result)
        if line is not None:
            print(line, file=sys.stdout, flush=True)

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._print(trials, ending=trial)

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._print(trials)
