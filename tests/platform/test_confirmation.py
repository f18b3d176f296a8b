"""The confirmation stage: the figures (mean, standard deviation, t interval), the rule, the seed whose weights are
used, and one small real sweep with confirmation on the toy (2 configurations x 2 further seeds)."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.confirm.stage import choose_winner, further_seeds, ranked_by_rule
from sentsweep.platform.driver.confirmation import ranking_text
from sentsweep.platform.outcome import Candidate, SeedRun, interval
from sentsweep.platform.results import FINAL_KEY
from sentsweep.tracking.vocabulary import (
    CONFIRM_RANK_TAG,
    CONFIRMATION_ROLE,
    CONFIRMS_TAG,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
)


def _candidate(rank: int, further: list[float], search: float = 90.0) -> Candidate:
    """A candidate: the search's run (``search``, seed 0) and the further seeds' values (seeds 1, 2, ...)."""
    runs = [SeedRun(f"t{rank}-0", 0, search, original=True)]
    runs += [SeedRun(f"t{rank}-{i}", i, v) for i, v in enumerate(further, start=1)]
    return Candidate(rank, f"t{rank}-0", {"lr": rank}, runs)


def test_interval_is_the_t_interval_of_the_mean():
    values = [80.0, 81.0, 79.0, 82.0]
    iv = interval(values)
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert iv.n == 4 and iv.mean == pytest.approx(80.5) and iv.std == pytest.approx(sd)
    half = 3.182446305284263 * sd / 2  # t(0.975, 3), from the table
    assert (iv.low, iv.high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    two = interval([1.0, 3.0])  # sd sqrt(2), n 2: the half-width is t(0.975, 1) itself
    assert two.high - two.mean == pytest.approx(12.706204736)
    # the line a user reads says what the +- and the bracket are: the 95% t interval, not the sd
    assert two.describe() == "2.00 +- 12.71 [-10.71, 14.71] (n=2, sd 1.41; 95% t interval of the mean)"


def test_interval_edge_cases():
    assert interval([]).n == 0 and math.isnan(interval([]).mean)
    one = interval([70.0])
    assert one.n == 1 and one.mean == 70.0 and one.low == -math.inf and one.high == math.inf
    nan_dropped = interval([70.0, float("nan"), 72.0])
    assert nan_dropped.n == 2 and nan_dropped.mean == 71.0


def test_seeds_that_agree_give_a_point_interval_and_lower_bound_ranks_it_by_its_mean():
    """sd 0 (a deterministic run, a coarse metric): the interval is [m, m], not NaN, which ``lower_bound`` ranked
    last."""
    agreed = interval([80.0, 80.0, 80.0])
    assert (agreed.std, agreed.low, agreed.high) == (0.0, 80.0, 80.0)
    assert agreed.describe().startswith("80.00 +- 0.00 [80.00, 80.00]")
    steady, worse = _candidate(1, [80.0, 80.0, 80.0]), _candidate(2, [70.0, 71.0, 72.0])
    assert choose_winner([worse, steady], "lower_bound", "max") is steady
    low_loss, high_loss = _candidate(1, [0.2, 0.2]), _candidate(2, [0.3, 0.31])
    assert choose_winner([high_loss, low_loss], "lower_bound", "min") is low_loss


def test_the_rules_choose_differently_when_the_best_mean_is_the_least_certain():
    lucky = _candidate(1, [84.0, 76.0, 83.0])  # mean 81, wide
    steady = _candidate(2, [80.4, 80.6, 80.5])  # mean 80.5, narrow
    assert choose_winner([lucky, steady], "mean", "max") is lucky
    assert choose_winner([lucky, steady], "lower_bound", "max") is steady
    assert [c.rank for c in ranked_by_rule([lucky, steady], "lower_bound", "max")] == [2, 1]
    # minimising: the pessimistic end is the upper one
    low_loss, risky = _candidate(1, [0.20, 0.21, 0.19]), _candidate(2, [0.10, 0.40, 0.05])
    assert choose_winner([low_loss, risky], "lower_bound", "min") is low_loss
    assert choose_winner([low_loss, risky], "mean", "min") is risky


def test_ties_go_to_the_higher_single_seed_rank():
    a, b = _candidate(2, [80.0, 80.0]), _candidate(1, [80.0, 80.0])
    assert choose_winner([a, b], "mean", "max") is b


def test_a_configuration_whose_further_seeds_failed_ranks_after_one_whose_seeds_all_finished():
    """The mean of the seeds that finished would favour a configuration whose other seeds diverged."""
    fragile = _candidate(1, [86.0, float("nan"), float("nan")])  # one lucky seed of three
    steady = _candidate(2, [80.0, 80.5, 80.2])
    half = _candidate(3, [85.0, 84.0, float("nan")])
    for rule in ("mean", "lower_bound"):
        assert [c.rank for c in ranked_by_rule([fragile, steady, half], rule, "max")] == [2, 3, 1]
    assert (fragile.failed_seeds, half.failed_seeds, steady.failed_seeds) == (2, 1, 0)
    # among configurations that failed alike, the rule decides as before
    assert choose_winner([fragile, _candidate(4, [70.0, float("nan"), float("nan")])], "mean", "max") is fragile
    # the confirmed winner's line says why the best mean lost
    assert ranking_text([fragile, steady, half], "mean", "max") == "#2, #3 (1 failed seed), #1 (2 failed seeds)"


def test_the_representative_seed_is_closest_to_the_mean():
    c = _candidate(1, [80.0, 81.0, 79.0, 85.0])  # mean 81.25
    assert c.representative().value == 81.0
    failed = _candidate(1, [80.0, float("nan"), 82.0])
    assert math.isfinite(failed.representative().value) and not failed.representative().original


def test_the_confirmed_figures_leave_out_the_search_run():
    """The winner's curse: the candidate was selected on its search run's value, so
    the mean, the interval, the rule and the exported seed rest on the further seeds alone."""
    c = Candidate(1, "t", {}, [SeedRun("t", 42, 90.0, True)] + [SeedRun(f"t{i}", 43 + i, 80.0) for i in range(3)])
    assert c.interval.mean == 80.0 and c.interval.n == 3 and c.interval.std == 0.0
    assert c.runs[0].original and c.search_value == 90.0 and len(c.further_runs) == 3
    # the same further seeds, whatever the search's value: the same figures, and the search's rank breaks the tie
    lucky, plain = _candidate(1, [80.0, 81.0, 82.0], search=90.0), _candidate(2, [80.0, 81.0, 82.0], search=81.0)
    assert lucky.interval == plain.interval
    assert (lucky.interval.mean, lucky.interval.n) == (81.0, 3)
    for rule in ("mean", "lower_bound"):
        assert choose_winner([plain, lucky], rule, "max") is lucky
    # a search run far above its further seeds no longer wins on it
    inflated = _candidate(1, [79.0, 80.0, 81.0], search=95.0)
    better = _candidate(2, [80.5, 81.0, 81.5], search=82.0)
    assert choose_winner([inflated, better], "mean", "max") is better
    assert choose_winner([inflated, better], "lower_bound", "max") is better


def test_the_search_run_is_never_the_representative_while_a_further_seed_finished():
    at_the_mean = _candidate(1, [80.0, 82.0], search=81.0)  # the search's run sits exactly at the mean
    assert not at_the_mean.representative().original and at_the_mean.representative().value in (80.0, 82.0)
    none_finished = _candidate(1, [float("nan"), float("nan")], search=85.0)
    assert none_finished.interval.n == 0 and none_finished.interval.describe() == "no finished seed"
    assert none_finished.representative().original  # its weights are the only ones there are


def test_one_further_seed_has_no_interval_and_the_rules_still_choose():
    """``confirm.seeds: 1``: n = 1, an infinite interval; ``lower_bound`` does not fail and, every interval being
    infinite, falls to the mean; a candidate with an interval beats one without."""
    low, high = _candidate(1, [80.0], search=90.0), _candidate(2, [82.0], search=85.0)
    assert low.interval.n == 1 and low.interval.low == -math.inf and low.interval.describe() == "80.00 (1 seed)"
    for rule in ("mean", "lower_bound"):
        assert choose_winner([low, high], rule, "max") is high
        assert [c.rank for c in ranked_by_rule([low, high], rule, "max")] == [2, 1]
    assert choose_winner([_candidate(1, [0.3]), _candidate(2, [0.2])], "lower_bound", "min").rank == 2
    assert high.representative().value == 82.0
    with_interval = _candidate(2, [79.0, 79.5])
    assert choose_winner([high, with_interval], "lower_bound", "max") is with_interval


def test_the_recorded_figures_and_tables_leave_out_the_search_run(tmp_path):
    import csv
    import shutil
    from types import SimpleNamespace

    from sentsweep.platform.driver.confirmation import record
    from sentsweep.platform.outcome import ConfirmationOutcome

    class Logged:
        def __init__(self, folder: Path) -> None:
            self.folder, self.metrics, self.tags = folder, {}, {}
            self.trial_tags: dict[str, dict] = {}

        def log_metrics(self, metrics: dict) -> None:
            self.metrics.update(metrics)

        def set_tags(self, tags: dict) -> None:
            self.tags.update(tags)

        def log_artifacts(self, local: str, path: str) -> None:
            shutil.copytree(local, self.folder / path, dirs_exist_ok=True)

        def tag_trial(self, trial_id: str, tags: dict) -> None:
            self.trial_tags[trial_id] = tags

    def seed(trial: str, number: int, value: float, original: bool = False) -> SeedRun:
        return SeedRun(trial, number, value, original, {"stsb_dev": value, "stsb_test": value - 5.0})

    c = Candidate(1, "s1", {"lr": 1e-5}, [seed("s1", 42, 90.0, True), seed("c1", 43, 80.0), seed("c2", 44, 82.0)])
    outcome = ConfirmationOutcome("stage", "lower_bound", [c], c, c.representative())
    sweep, run = Logged(tmp_path / "sweep"), Logged(tmp_path / "stage")
    lines: list[str] = []
    record(outcome, SimpleNamespace(metric="stsb_dev", mode="max", plots=True), sweep, run, lines.append,
           {"s1": "t04"})
    assert lines[0].startswith("  #1 (trial t04, ")  # the search trial by its label, as every table names it
    assert sweep.metrics["confirmed_stsb_dev_mean"] == 81.0 and sweep.metrics["confirmed_seeds"] == 2.0
    assert sweep.metrics["confirmed_stsb_test_mean"] == 76.0
    assert run.metrics["r1_mean"] == 81.0 and run.metrics["r1_n"] == 2.0 and run.metrics["r1_search"] == 90.0
    assert "(n=2," in lines[0] and "search run 90.00" in lines[0]
    assert run.trial_tags == {t: {CONFIRMS_TAG: "s1", CONFIRM_RANK_TAG: "1"} for t in ("c1", "c2")}
    (summary,) = csv.DictReader((tmp_path / "sweep" / "confirmation" / "summary.csv").open())
    assert (float(summary["mean"]), summary["n"], summary["failed"]) == (81.0, "2", "0")
    assert float(summary["search_value"]) == 90.0
    seeds = list(csv.DictReader((tmp_path / "sweep" / "confirmation" / "seeds.csv").open()))
    assert [(r["trial"], r["original"]) for r in seeds] == [("s1", "1"), ("c1", "0"), ("c2", "0")]
    # the intervals plot beside the tables, its data in a CSV
    assert (tmp_path / "stage" / "confirmation" / "intervals.png").stat().st_size > 10_000
    plotted = list(csv.DictReader((tmp_path / "sweep" / "confirmation" / "intervals.csv").open()))
    assert [(r["trial"], r["search_run"], float(r["mean"]), r["n"]) for r in plotted] == [
        ("s1", "1", 81.0, "2"), ("c1", "0", 81.0, "2"), ("c2", "0", 81.0, "2")]


def test_the_per_seed_figures_keep_mrpc_f1_and_sick_relatedness():
    from sentsweep.platform.confirm.stage import figures

    final = {"stsb_dev": 80.0, "stsb_test": 78.0, "mrpc_acc": 70.0, "mrpc_f1": 80.5,
             "sick_relatedness_pearson": 85.0, "sick_relatedness_spearman": 79.0, "sick_relatedness_mse": 0.3,
             "wall_seconds": 12.0, "step": 4}
    assert set(figures(final, "stsb_dev")) == set(final) - {"wall_seconds", "step"}


def test_further_seeds():
    assert further_seeds(0, 3) == [1, 2, 3]
    assert further_seeds(42, 2) == [43, 44]
    assert further_seeds(1043, 3, [42, 1043, 1044]) == [1045, 1046, 1047]


def test_a_configuration_the_search_ran_with_several_seeds_is_one_candidate():
    """The first point and its noise replicas (the same settings, seeds 42, 1043, 1044) are the search's three best:
    they are one candidate, with every further seed, none of them a seed the search ran; the next configurations
    fill ``top_k``."""
    from types import SimpleNamespace

    from sentsweep.platform.confirm.stage import decide, select_candidates, stage_points, stage_seeds

    def result(trial_id: str, lr: float, seed: int, value: float) -> SimpleNamespace:
        return SimpleNamespace(error=None, config={"lr": lr, "seed": seed, "tracking": {}},
                               metrics={"trial_id": trial_id, "stsb_dev": value, FINAL_KEY: 1.0})

    search = [result("t1", 2e-5, 42, 85.0), result("t2", 2e-5, 1043, 86.0), result("t3", 2e-5, 1044, 84.5),
              result("t4", 1e-4, 42, 84.0), result("t5", 5e-6, 42, 83.0)]
    config = SimpleNamespace(metric="stsb_dev", mode="max", seed=42,
                             confirm=SimpleNamespace(top_k=2, seeds=2, rule="mean"))
    candidates, configs = select_candidates(search, config)
    assert [(c.rank, c.trial_id, c.params["lr"]) for c in candidates] == [(1, "t2", 2e-5), (2, "t4", 1e-4)]
    assert [(r.seed, r.original) for r in candidates[0].runs] == [(1043, True), (42, True), (1044, True)]
    assert candidates[0].search_value == 86.0 and candidates[0].interval.n == 0
    seeds = stage_seeds(candidates, 2)
    assert seeds == {"t2": [1045, 1046], "t4": [43, 44]}
    state = {"configs": configs, "candidates": [{"trial_id": c.trial_id} for c in candidates], "seeds": seeds}
    stage = [SimpleNamespace(error=None, config=p, metrics={"trial_id": f"c{i}", "stsb_dev": 80.0 + i,
                                                            FINAL_KEY: 1.0}) for i, p in enumerate(stage_points(state))]
    outcome = decide(candidates, configs, stage, config, "run")
    assert [[r.seed for r in c.further_runs] for c in outcome.candidates] == [[1045, 1046], [43, 44]]
    assert [c.interval.n for c in outcome.candidates] == [2, 2] and outcome.winner.rank == 2


class _Planted:
    """Unpickled, it creates the file ``path`` (what a planted ``tuner.pkl`` could do: run any code)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (open, (self.path, "w"))


# About 60-90 s on a loaded 2-core machine: the search (3 trials) and the stage (4 trials); in `make test` all the
# same (the only run of the whole stage there).
def test_sweep_with_confirmation(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentsweep.platform.confirm.stage import STATE_FILE, read_state
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.platform.location import locate
    from sentsweep.platform.report.compare import compare, render
    from sentsweep.platform.report.export import BEST_WEIGHTS, has_artifact
    from sentsweep.tracking.vocabulary import CHANGED_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, scheduler={"type": "fifo"},
                        fixed={"max_steps": 4}, confirm={"top_k": 2, "seeds": 2}, plots=False, export=False)
    lines: list[str] = []
    marker = tmp_path / "code-ran"

    def echo(line: str) -> None:  # once the folder exists, someone with the storage's keys plants a Tune state
        lines.append(line)
        if len(lines) == 1:
            folder = Path(line.split("; folder ", 1)[1].split(";", 1)[0])
            (folder / "confirmation").mkdir(parents=True)
            (folder / "confirmation" / "tuner.pkl").write_bytes(pickle.dumps(_Planted(str(marker))))

    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=echo)
    assert not marker.exists(), "a fresh sweep restored (unpickled) a Tune state planted in its folder"
    stage = outcome.confirmation
    assert stage is not None and [c.rank for c in stage.candidates] == [1, 2]
    for candidate in stage.candidates:
        assert [r.seed for r in candidate.runs] == [3, 4, 5]  # the sweep's seed, then two further ones
        assert candidate.interval.n == 2  # the further seeds: the search's run is reported apart
    assert stage.chosen in stage.winner.further_runs and not stage.chosen.original
    assert outcome.best_trial_id == stage.chosen.trial_id
    state = read_state(locate(outcome.sweep_dir))
    assert state["status"] == "done" and state["chosen"] == stage.chosen.trial_id
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'")
    assert run.data.tags[PARENT_TAG] == outcome.parent_run_id and run.info.status == "FINISHED"
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{run.info.run_id}'")
    assert len(children) == 4 and all(c.info.status == "FINISHED" for c in children)
    assert {"r1_mean", "r1_low", "r2_high"} <= set(run.data.metrics)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.data.metrics["confirmed_stsb_dev_mean"] == pytest.approx(stage.winner.interval.mean)
    assert parent.data.tags[CHANGED_TAG] == str(stage.changed).lower()
    stage_seconds = sum(r.metrics["time_total_s"] for r in stage.results)
    assert parent.data.metrics["budget_trial_seconds"] == pytest.approx(  # the stage is counted, never stopped
        sum(r.metrics["time_total_s"] for r in outcome.results) + stage_seconds) and stage_seconds > 0
    assert "confirmation/seeds.csv" in {f.path for f in client.list_artifacts(outcome.parent_run_id, "confirmation")}
    # export is off: the chosen seed's own run gets the weights (a seed of the stage's: under the stage's run)
    assert outcome.best_run_id is not None and has_artifact(client, outcome.best_run_id, BEST_WEIGHTS)
    (said,) = [line for line in lines if line.startswith("confirmed winner")]
    chosen_name = client.get_run(outcome.best_run_id).info.run_name  # the stage trial's label, as MLflow shows it
    assert chosen_name.startswith("c") and f"its weights: trial {chosen_name}, seed {stage.chosen.seed} (" in said
    sweeps, trials = compare(client)
    assert len(trials) == 3  # the search's trials only
    assert "## Confirmation" in render(sweeps, trials) and len(sweeps.attrs["confirmation"]) == 2
    assert STATE_FILE in locate(outcome.sweep_dir).list(".json")


def test_a_stage_that_never_runs_leaves_no_scheduled_run(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    """The stage's run is scheduled as the sweep begins; a sweep that ends without the stage (no
    finished trial reported the metric: here every dev figure is NaN) ended with that run SCHEDULED for good."""
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        fixed={"max_steps": 2, "dev_penalty": float("nan")}, confirm={"top_k": 1, "seeds": 1},
                        plots=False, export=False)
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    assert outcome.confirmation is None
    assert outcome.counts["finished"] == 1  # a NaN dev figure ends no trial (its report's log line raised before)
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'")
    assert run.info.status == "KILLED"
    assert run.data.tags[REASON_TAG].startswith("the confirmation stage did not run")


@pytest.mark.slow
def test_a_stopped_sweep_ends_its_scheduled_stage_run_and_a_resume_runs_it(tmp_path, tiny_bert_dir, tracking_uri,
                                                                          ray_session):
    """A sweep stopped mid-search (SIGINT) ends the stage's scheduled run KILLED, saying a resume runs the stage; the
    resume schedules it again and finishes it, the reason cleared."""
    from sentsweep.platform.driver.sweep import resume_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5},
                        confirm={"top_k": 1, "seeds": 1}, plots=False, export=False)
    folder = interrupted_sweep(config, 1, deadline_s=600, finalize=True)
    client = MlflowClient(tracking_uri=tracking_uri)

    def stage_run():
        experiments = [e.experiment_id for e in client.search_experiments()]
        (run,) = client.search_runs(experiments, f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'")
        return run

    stopped = stage_run()
    assert stopped.info.status == "KILLED"
    assert stopped.data.tags[REASON_TAG].startswith("the sweep stopped before its confirmation stage ended")
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                           echo=lambda line: None)
    assert outcome.confirmation is not None
    finished = stage_run()
    assert finished.info.run_id == stopped.info.run_id and finished.info.status == "FINISHED"
    assert REASON_TAG not in finished.data.tags
