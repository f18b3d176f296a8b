"""The confirmation stage's candidates and its decision: the search's best finished trials, each confirmation
trial matched to its configuration, and the winner by the rule (:mod:`.stats`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stats import Candidate, SeedRun, choose_winner
from sentsweep.platform.results import FIGURE_SUFFIXES, is_final, metric_value, rank_results

if TYPE_CHECKING:
    from ray.tune import Result, ResultGrid


@dataclass
class ConfirmationOutcome:
    """What the stage decided: the candidates with all their seeds, the winner, the seed whose weights are used."""

    run_id: str
    rule: str
    candidates: list[Candidate]
    winner: Candidate
    chosen: SeedRun
    results: ResultGrid | None = None  # the confirmation trials

    @property
    def changed(self) -> bool:
        """Whether the rule chose another configuration than the search's single-seed best."""
        return self.winner.rank != 1

    def chosen_result(self, search_results: Iterable[Result] | None) -> Result | None:
        """The Tune result of the chosen seed (a search trial, or a confirmation trial)."""
        pool = search_results if self.chosen.original else self.results
        return next((r for r in pool or [] if _trial_id(r) == self.chosen.trial_id), None)

    def chosen_parent(self, sweep_run_id: str) -> str:
        """The MLflow run the chosen trial's run is a child of."""
        return sweep_run_id if self.chosen.original else self.run_id

def _trial_id(result: Result) -> str:
    return str((result.metrics or {}).get("trial_id", ""))


def figures(metrics: dict[str, Any], metric: str) -> dict[str, float]:
    """A run's recorded figures: the sweep's metric and its test suites."""
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)
            and (k == metric or k.endswith(FIGURE_SUFFIXES))}


def searched_keys(configs: list[dict[str, Any]]) -> list[str]:
    """The trial settings that differ between the search's trials (what the search chose)."""
    keys = dict.fromkeys(k for c in configs for k in c if k not in ("tracking", "seed"))
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]


def select_candidates(results: ResultGrid, config: SweepConfig) -> tuple[list[Candidate], dict[str, dict]]:
    """The ``top_k`` best finished trials as candidates (each with its own run as its first seed), and their trial
    configs by trial id."""
    finished = [r for r in rank_results(results, config.metric, config.mode) if is_final(r.metrics)]
    searched = searched_keys([dict(r.config or {}) for r in results])
    candidates, configs = [], {}
    for rank, result in enumerate(finished[: config.confirm.top_k], start=1):
        trial_config = {k: v for k, v in (result.config or {}).items() if k != "tracking"}
        trial_id = _trial_id(result)
        seed = int(trial_config.get("seed", config.seed))
        value = metric_value(result, config.metric)
        run = SeedRun(trial_id, seed, math.nan if value is None else value, True,
                      figures(result.metrics or {}, config.metric))
        candidates.append(Candidate(rank, trial_id, {k: trial_config.get(k) for k in searched}, [run]))
        configs[trial_id] = trial_config
    return candidates, configs


def _identity(trial_config: dict[str, Any]) -> str:
    """A configuration regardless of its seed."""
    return json.dumps({k: v for k, v in trial_config.items() if k not in ("seed", "tracking")}, sort_keys=True,
                      default=str)


def decide(candidates: list[Candidate], configs: dict[str, dict[str, Any]], stage_results: ResultGrid,
           config: SweepConfig, run_id: str) -> ConfirmationOutcome:
    """Each candidate (its trial config in ``configs``) with all its seeds (a failed or unfinished seed counts NaN,
    outside the figures), the winner by the rule over the further seeds, and the winner's further seed closest to
    their mean."""
    owners: dict[str, Candidate] = {}
    for candidate in candidates:
        candidate.runs = [r for r in candidate.runs if r.original]
        owners.setdefault(_identity(configs[candidate.trial_id]), candidate)
    for result in sorted(stage_results, key=lambda r: int((r.config or {}).get("seed", 0))):
        trial_config = dict(result.config or {})
        owner = owners.get(_identity(trial_config))
        if owner is None:
            continue
        value = metric_value(result, config.metric) if is_final(result.metrics) else None
        owner.runs.append(SeedRun(_trial_id(result), int(trial_config.get("seed", 0)),
                                  math.nan if value is None else value, False,
                                  figures(result.metrics or {}, config.metric)))
    winner = choose_winner(candidates, config.confirm.rule, config.mode)
    return ConfirmationOutcome(run_id, config.confirm.rule, candidates, winner, winner.representative(),
                               stage_results)
