"""Resuming from a snapshot whose files come from different saves (the driver lost while Tune uploaded them).

A Tune experiment snapshot is several files: ``experiment_state-*.json`` (the trials), ``search_gen_state-*.json``
(the search generator's trial counter and the concurrency limiter's running trials) and ``searcher-state-*.pkl``
(the Optuna study and which Optuna trial each Tune trial is). The driver writes them together into its staging
folder, but a background thread uploads them to the sweep's storage one file at a time, so a driver lost in the
middle of an upload leaves the storage with the trials of one save and the searcher of another. Tune then resumes:

- the trials of a newer ``experiment_state`` that the older generator did not count, and creates as many new ones
  (the sweep runs more trials than ``num_samples``);
- into Optuna's ``KeyError`` on the first result of a trial the older searcher never suggested (the resume dies);
- with the running trials of an older or newer limiter, which may name trials the snapshot lacks: they never end,
  and once they fill ``max_concurrent_trials`` no trial starts again (the sweep hangs);
- with Optuna trials left RUNNING for ever (trials the snapshot lacks, or that it holds as ended), which constant
  liar counts as bad points for the rest of the search.

:func:`reconcile` makes the restored search agree with the restored trials, as the save they come from would have:
the counter is the number of trials, the limiter's running trials are those not ended, a trial the searcher never
suggested is adopted (an Optuna trial with its parameters, told its end if the snapshot has it ended), an Optuna
trial the snapshot lacks is told FAIL (its Tune trial is lost; the sweep's tracking deletes its run:
:mod:`.sweep_tracking`). :class:`~.resume_samples.ResizableSearchGenerator` calls it after restoring itself.

The points a sweep evaluates first (the paper's defaults: Optuna's enqueued, WAITING trials) are kept to once each:
a lost trial that was one of them is enqueued again (no trial of the resumed sweep would evaluate it otherwise), and
a restored trial that evaluates one the older searcher still holds WAITING is adopted as that waiting trial (else
the point would run twice).

Left: a multi-objective trial adopted after it ended is told from its last result alone; an objective only its
intermediate reports carried (an extra dev set) is missing there, and the trial is told FAIL.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState
from ray.tune.search import ConcurrencyLimiter, Searcher, SearchGenerator
from ray.tune.search.optuna import OptunaSearch
from ray.tune.utils import flatten_dict

if TYPE_CHECKING:
    import pyarrow.fs

logger = logging.getLogger(__name__)

#: Where Optuna keeps an enqueued trial's point (``Study.enqueue_trial``: a system attribute of the trial).
ENQUEUED_POINT = "fixed_params"
#: The statuses of trials that will not run again (Tune resumes errored trials, but tells no searcher of them again).
ENDED = frozenset({"TERMINATED", "ERROR"})


@dataclass(frozen=True)
class SnapshotTrial:
    """What a resume restores of one trial: its id, status, config and last result."""

    trial_id: str
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    last_result: dict[str, Any] = field(default_factory=dict)


def snapshot_trials(folder: str | Path, filesystem: pyarrow.fs.FileSystem | None = None) -> list[SnapshotTrial] | None:
    """The trials of the newest ``experiment_state-*.json`` in ``folder`` on ``filesystem`` (default: a local
    folder); None when there is none. Read from the sweep's storage, this is what ``TuneController.resume``
    restores; the driver's staging folder may also hold newer files that a lost driver never uploaded."""
    import pyarrow.fs
    from ray.tune.execution.experiment_state import _find_newest_experiment_checkpoint

    filesystem = filesystem or pyarrow.fs.LocalFileSystem()
    newest = _find_newest_experiment_checkpoint(str(folder), fs=filesystem)
    if newest is None:
        return None
    with filesystem.open_input_stream(newest) as stream:
        state = json.loads(stream.readall().decode("utf-8"))
    trials = []
    for trial_json, metadata_json in state.get("trial_data", []):  # plain JSON: nothing here is unpickled
        trial, metadata = json.loads(trial_json), json.loads(metadata_json)
        trials.append(SnapshotTrial(str(trial["trial_id"]), str(trial["status"]), dict(trial.get("config") or {}),
                                    dict(metadata.get("last_result") or {})))
    return trials


def reconcile(generator: SearchGenerator, trials: list[SnapshotTrial]) -> list[str]:
    """Make ``generator`` (restored from the search files) agree with ``trials`` (restored from the experiment
    state); what was changed, one phrase each (empty when the files came from one save)."""
    changes = []
    counter = int(generator._counter)
    if counter != len(trials):
        changes.append(f"trial counter {counter} -> {len(trials)}")
        if generator._finished and counter >= generator._total_samples > len(trials):
            generator._finished = False  # it ran out on trials the snapshot lacks: they are created again
        generator._counter = len(trials)
    limiter = _limiter(generator)
    if limiter is not None:
        running = {t.trial_id for t in trials if t.status not in ENDED}
        if set(limiter.live_trials) != running:
            changes.append(f"running trials {len(limiter.live_trials)} -> {len(running)}")
            limiter.live_trials = running
            limiter.num_unfinished_live_trials = len(running)
    searcher = base_searcher(generator)
    if isinstance(searcher, OptunaSearch):
        changes += adopt_trials(searcher, trials)
    if changes:
        logger.warning("the sweep's saved search did not agree with its saved trials (a driver lost while Tune "
                       "uploaded them, or trials a stop left untold); made them agree: %s", "; ".join(changes))
    return changes


def adopt_trials(searcher: OptunaSearch, trials: list[SnapshotTrial]) -> list[str]:
    """The Optuna side of :func:`reconcile`: an Optuna trial the snapshot lacks is told FAIL, a restored trial the
    searcher never suggested becomes an Optuna trial with its parameters, and a restored trial that has ended is
    told so (by the searcher's own ``on_trial_complete``: PRUNED, COMPLETE, FAIL as it would have been told)."""
    restored = {t.trial_id for t in trials}
    lost = [tid for tid in searcher._ot_trials if tid not in restored and tid not in searcher._completed_trials]
    study = searcher._ot_study
    requeued = 0
    for trial_id in lost:
        ot_trial = searcher._ot_trials[trial_id]
        ot_trial.set_user_attr("fail_reason", "lost with the driver: not in the snapshot the sweep resumed from")
        study.tell(ot_trial, state=TrialState.FAIL)
        searcher._completed_trials.add(trial_id)
        point = study._storage.get_trial_system_attrs(ot_trial._trial_id).get(ENQUEUED_POINT)
        if point:  # a point to evaluate first: evaluated by no trial of the resumed sweep otherwise
            study.enqueue_trial(point)
            requeued += 1
    adopted, skipped = [], []
    for trial in trials:
        if trial.trial_id in searcher._ot_trials:
            continue
        ot_trial = _running_trial(searcher, trial.config)
        if ot_trial is None:
            skipped.append(trial.trial_id)
            continue
        searcher._ot_trials[trial.trial_id] = ot_trial
        adopted.append(trial.trial_id)
    told = [t for t in trials if t.status in ENDED and t.trial_id in searcher._ot_trials
            and t.trial_id not in searcher._completed_trials]
    for trial in told:
        searcher.on_trial_complete(trial.trial_id, flatten_dict(trial.last_result) or None,
                                   error=trial.status == "ERROR")
    phrases = [f"{len(lost)} trial(s) the snapshot lacks told FAIL to Optuna" if lost else "",
               f"{requeued} of them a point to evaluate first, queued again" if requeued else "",
               f"{len(adopted)} trial(s) Optuna had not seen adopted" if adopted else "",
               f"{len(told)} ended trial(s) told to Optuna" if told else "",
               f"{len(skipped)} trial(s) whose parameters the search space does not take left out of Optuna"
               if skipped else ""]
    return [p for p in phrases if p]


def _running_trial(searcher: OptunaSearch, config: dict[str, Any]) -> optuna.Trial | None:
    """A RUNNING Optuna trial with the parameters ``config`` holds (those the search space suggests); None when the
    config lacks one of them."""
    flat = flatten_dict(config)
    if callable(searcher._space):  # a define-by-run space: run it on the fixed values to learn their distributions
        fixed = optuna.trial.FixedTrial(flat)
        try:
            searcher._space(fixed)
        except ValueError:  # a parameter the config does not hold
            return None
        params, distributions = fixed.params, fixed.distributions
    else:
        distributions = dict(searcher._space)
        if not set(distributions) <= set(flat):
            return None
        params = {name: flat[name] for name in distributions}
    study = searcher._ot_study
    twin = _waiting_point(study, params)
    if twin is not None and study._storage.set_trial_state_values(twin, state=TrialState.RUNNING):
        for name, value in params.items():  # as Optuna's ask and suggest would have set them
            study._storage.set_trial_param(twin, name, distributions[name].to_internal_repr(value),
                                           distributions[name])
        return optuna.Trial(study, twin)
    study.add_trial(optuna.trial.create_trial(state=TrialState.RUNNING, params=params, distributions=distributions))
    return optuna.Trial(study, study.get_trials(deepcopy=False)[-1]._trial_id)


def _waiting_point(study: optuna.Study, params: dict[str, Any]) -> int | None:
    """The id of a WAITING (enqueued) trial whose point ``params`` evaluate; None when there is none."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        point = trial.system_attrs.get(ENQUEUED_POINT) or {}
        if point and all(name in params and params[name] == value for name, value in point.items()):
            return trial._trial_id
    return None


def base_searcher(search_alg: Any) -> Searcher:
    """The searcher inside Tune's wrappers (``SearchGenerator``, ``ConcurrencyLimiter``)."""
    while not isinstance(search_alg, Searcher) or isinstance(search_alg, ConcurrencyLimiter):
        search_alg = search_alg.searcher
    return search_alg


def _limiter(generator: SearchGenerator) -> ConcurrencyLimiter | None:
    searcher = generator.searcher
    while not isinstance(searcher, ConcurrencyLimiter) and hasattr(searcher, "searcher"):
        searcher = searcher.searcher
    return searcher if isinstance(searcher, ConcurrencyLimiter) else None
