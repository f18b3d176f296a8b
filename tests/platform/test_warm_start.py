"""Warm start: a new sweep's searcher holds an earlier sweep's finished trials (same space, or the overlapping
parameters) before its first suggestion, and TPE uses them."""

from __future__ import annotations

import logging
import math

import optuna
import pytest
from optuna.trial import TrialState

from sentsweep.data.source import SAMPLE_DIR
from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepManifest, locate
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.platform.search.warm_start import load_history, measured_data
from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.method import failure_report


def old_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)
    trial.suggest_categorical("pooling", ["mean", "cls"])


def new_space(trial):
    """Overlaps the old one: ``lr`` narrower, ``pooling`` without ``cls``, a new ``scale``."""
    trial.suggest_float("lr", 1e-5, 1e-2, log=True)
    trial.suggest_categorical("pooling", ["mean", "max"])
    trial.suggest_float("scale", 1.0, 30.0)


def _config(**extra) -> SweepConfig:
    return SweepConfig(**{"name": "s", "method": "toy", "seed": 1, "metric": "score", "startup_trials": 4, **extra})


def _earlier_sweep(tmp_path, trials: int = 8, config: SweepConfig | None = None) -> str:
    """An earlier sweep's folder: manifest and study journal, as a finished sweep leaves them."""
    config = config or _config()
    location = locate(str(tmp_path / "earlier-20260101-000000-abcd"))
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id="r", experiment_id="0", tracking_uri="sqlite:///x.db",
                                          created=0.0, data_sha256=measured_data(config)), config)
    searcher = build_searcher(config, old_space, [], store=StudyStore(location.uri), study_name=location.name)
    for i in range(trials):
        lr = searcher.suggest(f"t{i}")["lr"]
        if i == 5:
            searcher.on_trial_complete(f"t{i}", failure_report("score", NonFiniteLossError(1, math.nan)))
        elif i == 6:
            searcher.on_trial_complete(f"t{i}", failure_report("score", ValueError("bad data")))  # FAIL
        else:
            searcher.on_trial_complete(f"t{i}", {"score": -abs(math.log10(lr) + 3), FINAL_KEY: 1.0})
    return location.uri


def test_warm_started_searcher_holds_the_earlier_trials(tmp_path):
    earlier = _earlier_sweep(tmp_path)
    history = load_history(earlier, old_space)
    assert len(history) == 7  # 8 trials less the FAIL; the infeasible one keeps its constraint
    assert sum(bool(t.constraints) for t in history) == 1
    searcher = build_searcher(_config(), old_space, [{"lr": history[0].params["lr"], "pooling":
                                                      history[0].params["pooling"]}], history=history)
    prior = [t for t in searcher.study.trials if t.user_attrs.get("warm_start_from") == "earlier-20260101-000000-abcd"]
    assert len(prior) == 7 and all(t.state in (TrialState.COMPLETE,) for t in prior)
    suggestion = searcher.suggest("new")  # the first point was evaluated already: TPE suggests at once
    assert suggestion["lr"] != history[0].params["lr"]


def test_overlapping_parameters_only(tmp_path):
    history = load_history(_earlier_sweep(tmp_path), new_space)
    assert history and all(set(t.params) <= {"lr", "pooling"} for t in history)
    assert all(t.params.get("pooling") != "cls" and t.params["lr"] <= 1e-2 for t in history if "lr" in t.params)
    searcher = build_searcher(_config(), new_space, [], history=history)
    assert len(searcher.study.trials) == len(history)
    assert set(searcher.suggest("n")) == {"lr", "pooling", "scale"}


def test_warm_start_folder_must_hold_a_study(tmp_path):
    folder = locate(str(tmp_path / "empty-1"))
    config = _config()
    folder.write_manifest(SweepManifest(sweep_name="empty-1", config=config.model_dump(mode="json"),
                                        parent_run_id="r", experiment_id="0", tracking_uri="sqlite:///x.db",
                                        created=0.0), config)
    with pytest.raises(ConfigError, match="no Optuna study yet"):
        load_history(folder.uri, old_space)
    with pytest.raises(ConfigError, match="not a sentsweep sweep folder"):
        load_history(str(tmp_path / "nowhere"), old_space)


def test_an_earlier_sweep_measured_otherwise_is_refused(tmp_path):
    """Values of another dev set, or of another sample of one, would be ranked together by TPE: refused with every
    difference named; the same measurement (defaults written out or not) is taken."""
    earlier = _earlier_sweep(tmp_path)
    assert load_history(earlier, old_space, config=_config(fixed={"dev_data": "stsb", "max_dev_pairs": None}))
    with pytest.raises(ConfigError, match=r"fixed\.max_dev_pairs None vs 100") as refused:
        load_history(earlier, old_space, config=_config(fixed={"max_dev_pairs": 100}))
    assert refused.value.field == "warm_start"
    with pytest.raises(ConfigError, match=r"^sweep\.yaml: field 'warm_start': .*method 'toy' vs 'cosent'"):
        load_history(earlier, old_space, config=_config(method="cosent"), source="sweep.yaml")  # another method


def test_a_warm_start_that_places_no_trial_says_why(tmp_path, caplog):
    def disjoint_space(trial):
        trial.suggest_float("scale", 1.0, 30.0)

    earlier = _earlier_sweep(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert load_history(earlier, disjoint_space) == []
    assert f"warm start: {earlier} places no trial (none of its 7 finished trials has a value this space searches)" \
        in caplog.text
    with pytest.raises(ConfigError, match=r"mode 'max' vs 'min'; fixed\.dev_data 'stsb' vs 'sickr'"):
        load_history(earlier, old_space, config=SweepConfig(name="s", method="toy", metric="score", mode="min",
                                                            fixed={"dev_data": "sickr"}))


def test_an_earlier_sweep_on_other_data_files_is_refused(tmp_path, monkeypatch):
    """The same settings on another data directory (the bundled sample against the full data; here a copy of the
    sample whose STS-B dev file has one more pair) are another measurement: refused, naming the metric's files; the
    same files in another directory are taken."""
    import shutil

    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)
    copy = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, copy)
    earlier = _earlier_sweep(tmp_path, config=_config(metric="stsb_dev"))  # data_dir unset: the bundled sample
    assert measured_data(_config(metric="stsb_dev"))["stsb_dev"]  # the manifest holds the sample's hash
    assert load_history(earlier, old_space, config=_config(metric="stsb_dev", data_dir=str(copy)))
    dev = next((copy / "senteval").rglob("sts-dev.csv"))
    dev.write_text(dev.read_text(encoding="utf-8") + dev.read_text(encoding="utf-8").splitlines()[0] + "\n",
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"the files stsb_dev reads \(sha256 [0-9a-f]{12} vs [0-9a-f]{12}"):
        load_history(earlier, old_space, config=_config(metric="stsb_dev", data_dir=str(copy)))
    # a data directory without the metric's files: unknown, not the digest of nothing
    (tmp_path / "empty").mkdir()
    assert measured_data(_config(metric="stsb_dev", data_dir=str(tmp_path / "empty"))) == {}
    # data that do not resolve on this machine (the workers' directory): nothing to compare, no error
    assert measured_data(_config(metric="stsb_dev", data_dir=str(tmp_path / "elsewhere"))) == {}
    assert load_history(earlier, old_space, config=_config(metric="stsb_dev", data_dir=str(tmp_path / "elsewhere")))


def test_warm_start_is_a_resolved_config_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _config(warm_start="ray_results/x").resolved().warm_start == str(tmp_path / "ray_results" / "x")


def test_a_warm_start_reads_the_earlier_journal_and_leaves_it_alone(tmp_path):
    """The earlier study is read from its journal as it is now (a running sweep's too); the new study holds its
    trials, and writing the new study adds nothing to the earlier journal."""
    earlier = _earlier_sweep(tmp_path, trials=3)
    journal = tmp_path / "earlier-20260101-000000-abcd" / "optuna_journal.log"
    before = journal.read_bytes()
    history = load_history(earlier, old_space)
    searcher = build_searcher(_config(), old_space, [], history=history, store=StudyStore(str(tmp_path)),
                              study_name="new")
    searcher.suggest("n")
    assert journal.read_bytes() == before
    again = optuna.load_study(study_name="new", storage=StudyStore(str(tmp_path)).storage(create=False))
    assert [t.state for t in again.trials] == [TrialState.COMPLETE] * 3 + [TrialState.RUNNING]
