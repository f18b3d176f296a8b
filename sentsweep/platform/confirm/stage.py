"""The confirmation stage's decisions and state. ``mean`` picks the best mean; ``lower_bound`` (the default) the
best pessimistic end of the interval, which ranks a single further seed (an infinite interval) last. Under either
rule a configuration with fewer failed further seeds ranks first, so seeds that failed cannot lift a mean. Ties go
to the better mean, then the higher search rank; the weights used are the winner's further seed closest to their
mean."""

from __future__ import annotations

import itertools
import json
import math
import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.outcome import Candidate, ConfirmationOutcome, Interval, SeedRun
from sentsweep.platform.results import FIGURE_SUFFIXES, is_final, metric_value, rank_results, varying_keys

if TYPE_CHECKING:
    from ray.tune import Result, ResultGrid

Rule = Literal["mean", "lower_bound"]

#: The stage's state in the sweep folder.
STATE_FILE = "confirmation.json"
#: The stage's Tune experiment, inside the sweep folder.
STAGE_DIR = "confirmation"


def rule_score(summary: Interval, rule: Rule, mode: str) -> float:
    """The figure ``rule`` ranks by, oriented so that larger is better."""
    value = summary.mean if rule == "mean" else summary.low if mode == "max" else summary.high  # the cautious end
    return -math.inf if math.isnan(value) else value if mode == "max" else -value


def ranked_by_rule(candidates: Sequence[Candidate], rule: Rule, mode: str) -> list[Candidate]:
    """The candidates, those with the fewest failed further seeds first, then the one ``rule`` prefers (ties: the
    better mean, then the higher single-seed rank)."""
    return sorted(candidates, key=lambda c: (-c.failed_seeds, rule_score(c.interval, rule, mode),
                                             rule_score(c.interval, "mean", mode), -c.rank), reverse=True)


def choose_winner(candidates: Sequence[Candidate], rule: Rule, mode: str) -> Candidate:
    if not candidates:
        raise ValueError("no candidate to choose from")
    return ranked_by_rule(candidates, rule, mode)[0]


def further_seeds(original: int, count: int, taken: Sequence[int] = ()) -> list[int]:
    """``count`` seeds after ``original``, skipping the ``taken`` ones (the seeds the search ran it with)."""
    return list(itertools.islice((s for s in itertools.count(original + 1) if s not in taken), count))


def figures(metrics: dict[str, Any], metric: str) -> dict[str, float]:
    """A run's recorded figures: the sweep's metric and its test suites."""
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)
            and (k == metric or k.endswith(FIGURE_SUFFIXES))}


def _seed_run(result: Result, seed: int, metric: str, original: bool) -> SeedRun:
    """A configuration's run with ``seed``: its value of ``metric`` (NaN unless it finished) and its figures."""
    value = metric_value(result, metric) if is_final(result.metrics) else None
    return SeedRun(str((result.metrics or {}).get("trial_id", "")), seed, math.nan if value is None else value,
                   original, figures(result.metrics or {}, metric))


def select_candidates(results: ResultGrid, config: SweepConfig) -> tuple[list[Candidate], dict[str, dict]]:
    """The ``top_k`` best finished configurations as candidates, and their configs by trial id. A configuration the
    search ran with several seeds (the noise replicas, a repeated suggestion) is one candidate: its best run first,
    its other runs after it, all outside the figures."""
    finished = [r for r in rank_results(results, config.metric, config.mode) if is_final(r.metrics)]
    searched = varying_keys(results, skip=("tracking", "seed"))
    configs: dict[str, dict] = {}
    by_identity: dict[str, Candidate] = {}  # in rank order
    for result in finished:
        trial_config = {k: v for k, v in (result.config or {}).items() if k != "tracking"}
        run = _seed_run(result, int(trial_config.get("seed", config.seed)), config.metric, True)
        if (seen := by_identity.get(key := _identity(trial_config))) is not None:
            seen.runs.append(run)
        elif len(by_identity) < config.confirm.top_k:
            by_identity[key] = Candidate(len(by_identity) + 1, run.trial_id,
                                         {k: trial_config.get(k) for k in searched}, [run])
            configs[run.trial_id] = trial_config
    return list(by_identity.values()), configs


def stage_seeds(candidates: Sequence[Candidate], count: int) -> dict[str, list[int]]:
    """Each candidate's further seeds: after its best run's seed, past every seed the search ran it with."""
    return {c.trial_id: further_seeds(c.runs[0].seed, count, [r.seed for r in c.runs]) for c in candidates}


def _identity(trial_config: dict[str, Any]) -> str:
    """A configuration regardless of its seed."""
    return json.dumps({k: v for k, v in trial_config.items() if k not in ("seed", "tracking")}, sort_keys=True,
                      default=str)


def decide(candidates: list[Candidate], configs: dict[str, dict[str, Any]], stage_results: ResultGrid,
           config: SweepConfig, run_id: str) -> ConfirmationOutcome:
    """Each candidate with all its seeds (a failed or unfinished seed counts NaN, outside the figures), and the
    winner by the rule over the further seeds."""
    owners: dict[str, Candidate] = {}
    for candidate in candidates:
        candidate.runs = [r for r in candidate.runs if r.original]
        owners.setdefault(_identity(configs[candidate.trial_id]), candidate)
    for result in sorted(stage_results, key=lambda r: int((r.config or {}).get("seed", 0))):
        trial_config = dict(result.config or {})
        if (owner := owners.get(_identity(trial_config))) is not None:
            owner.runs.append(_seed_run(result, int(trial_config.get("seed", 0)), config.metric, False))
    winner = choose_winner(candidates, config.confirm.rule, config.mode)
    return ConfirmationOutcome(run_id, config.confirm.rule, candidates, winner, winner.representative(), stage_results)


def stage_location(location: SweepLocation) -> SweepLocation:
    """The stage's Tune experiment folder, ``<sweep folder>/confirmation``."""
    return SweepLocation(location.tune_path, STAGE_DIR, location.filesystem, posixpath.join(location.uri, STAGE_DIR))


def read_state(location: SweepLocation) -> dict[str, Any] | None:
    """The stage's saved state (None before the stage began: the file is missing). A storage that does not answer
    is a :class:`~sentsweep.errors.StorageError` (never "not begun", which would fit the search again), an
    unreadable file a :class:`ConfigError` naming it."""
    return location.read_json_object(STATE_FILE, "the confirmation stage's candidates and seeds")


def write_state(location: SweepLocation, state: dict[str, Any]) -> None:
    location.write_text(STATE_FILE, json.dumps(state, indent=1, default=str))


def stage_points(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The confirmation trials' configs: every candidate with every further seed."""
    return [{**state["configs"][c["trial_id"]], "seed": seed}
            for c in state["candidates"] for seed in state["seeds"][c["trial_id"]]]


def candidate_from(raw: dict[str, Any]) -> Candidate:
    """A candidate as the state file holds it."""
    return Candidate(raw["rank"], raw["trial_id"], raw["params"], [SeedRun(**r) for r in raw["runs"]])
