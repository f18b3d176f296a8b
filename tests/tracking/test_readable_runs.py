"""What a person reads in MLflow: trials' names and labels, values at a readable precision, links that open on the
model-training view, the sweep's and the experiment's descriptions, a registered version's description and tags
(real MLflow sqlite for the writes)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.config import parse_sweep_config
from sentsweep.platform.report.winner import model_version
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.tracking.parent_run import SweepRun, experiment_description, sweep_description
from sentsweep.platform.tracking.run_writes import RunWrites
from sentsweep.tracking.names import figure, run_name, setting, tracked_key, trial_label, ui_link
from sentsweep.tracking.vocabulary import NOT_STARTED_REASON, NOTE_TAG, OUTCOME_TAG, OUTCOMES


@pytest.mark.parametrize(("value", "shown", "as_figure"), [
    (22.4, "22.4", "22.40"), (3.5e-05, "3.5e-05", "3.5e-05"), (87.8612, "87.86", "87.86"), (20.0, "20", "20.00"),
    (0.12345, "0.123", "0.123"), (2e10, "2e+10", "2e+10"), (16, "16", "16"), ("mean", "mean", "mean"),
    (True, "True", "True")])
def test_values_are_shown_at_a_readable_precision(value, shown, as_figure) -> None:
    """A setting drops trailing zeros; a figure keeps two decimals, as every line of the command line shows it."""
    assert setting(value) == shown and figure(value) == as_figure


def test_a_trial_run_is_named_after_its_label_and_searched_values() -> None:
    assert trial_label(3) == "t03" and trial_label(12, "c") == "c12" and trial_label(None) is None
    assert run_name("t03", "a5c2b788", {"scale": 22.4, "lr": 3.5e-05}) == "t03 scale=22.4 lr=3.5e-05"
    assert run_name(None, "a5c2b788", {}) == "a5c2b788"
    assert len(run_name("t03", "x", {f"p{i}": 1.0 / 3 for i in range(40)})) <= 120


def test_bookkeeping_keys_go_under_sys() -> None:
    assert [tracked_key(k) for k in ("stsb_dev", "train_loss", "lr", "epoch", "final", "attempt_seconds")] == [
        "stsb_dev", "train_loss", "lr", "system/epoch", "system/final", "system/attempt_seconds"]


def test_a_pruned_trial_ends_finished_and_an_interrupted_one_killed() -> None:
    assert OUTCOMES["pruned"] == OUTCOMES["stopped"] == OUTCOMES["finished"] == "FINISHED"
    assert OUTCOMES["failed"] == "FAILED" and OUTCOMES["interrupted"] == "KILLED"


def test_links_open_on_the_model_training_view() -> None:
    assert ui_link("http://mlflow:5000/", "4", "abc") == \
        "http://mlflow:5000/#/experiments/4/runs/abc?workflowType=machine_learning"
    assert ui_link("sqlite:///mlruns.db", "4") == "/#/experiments/4?workflowType=machine_learning"


def _config(tmp_path: Path, uri: str):
    return parse_sweep_config({"name": "demo", "method": "cosent", "metric": "stsb_dev", "num_samples": 5,
                               "storage_path": str(tmp_path / "runs"),
                               "tracking": {"uri": uri, "experiment": "readable",
                                            "artifact_location": (tmp_path / "artifacts").as_uri()}}, "sweep.yaml")


def test_the_descriptions_say_what_was_searched_and_which_columns_to_add(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://mlflow:5000")
    text = sweep_description(config, "demo-1", ["lr", "scale"], config.tracking.uri, "4")
    assert "5 trials of `cosent`" in text and "`lr`, `scale`" in text
    assert "Metrics `stsb_dev` and `best_stsb_dev`" in text and f"Tags `{OUTCOME_TAG}`" in text
    assert "pruned (stopped early" in text and "`system/`" in text and "System metrics" in text
    assert "http://mlflow:5000/#/experiments/4?workflowType=machine_learning" in text
    overview = experiment_description(config, "demo-1", ["lr", "scale"])
    assert "Model training" in overview and "Latest sweep: `demo-1`" in overview and "lr, scale" in overview


def test_a_sweep_run_and_its_experiment_carry_their_descriptions(tracking_uri: str, tmp_path: Path) -> None:
    config = _config(tmp_path, tracking_uri)
    sweep = SweepRun.open(config, "demo-1", str(tmp_path / "runs" / "demo-1"), None, {"lr": 2e-5, "scale": 20.0})
    client = MlflowClient(tracking_uri)
    run = client.get_run(sweep.run_id)
    assert "searching `lr`, `scale` for the highest dev `stsb_dev`" in run.data.tags[NOTE_TAG]
    experiment = client.get_experiment(sweep.experiment_id)
    assert "Columns to add" in experiment.tags[NOTE_TAG]


def test_a_resumed_sweep_that_finishes_keeps_no_reason(tracking_uri: str, tmp_path: Path) -> None:
    """A resume marks the sweep's run RUNNING with the reason ``resumed``; a finish without a reason clears it, and
    a stop's reason replaces it."""
    from sentsweep.tracking.vocabulary import REASON_TAG

    sweep = SweepRun.open(_config(tmp_path, tracking_uri), "demo-1", str(tmp_path / "runs" / "demo-1"), None, {})
    client = MlflowClient(tracking_uri)
    sweep.reopen()
    assert sweep.flush() and client.get_run(sweep.run_id).data.tags[REASON_TAG] == "resumed"
    sweep.close("interrupted", "interrupted by SIGTERM")
    assert sweep.flush() and client.get_run(sweep.run_id).data.tags[REASON_TAG] == "interrupted by SIGTERM"
    sweep.reopen()
    sweep.close("finished")
    assert sweep.flush()
    run = client.get_run(sweep.run_id)
    assert run.info.status == "FINISHED" and REASON_TAG not in run.data.tags


def test_a_registered_version_names_its_trial_configuration_and_figures(tracking_uri: str, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("registry", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(experiment).info.run_id
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "MLmodel").write_text("flavors: {}\n")  # what MLflow registers from a run
    client.log_artifacts(run_id, str(tmp_path / "model"), "best_model")
    figures = {"dev_stsb_dev": 82.3812, "test_stsb_test": 79.1, "confirmed_stsb_dev_mean": 81.95}
    description, tags = model_version("t03", "a5c2b788", {"scale": 22.4}, figures, "demo-1", "trial-run",
                                      "http://x/#/run")
    writes = RunWrites(client, experiment, pyarrow.fs.LocalFileSystem(), str(tmp_path / "sweep"))
    write = {"op": "register", "run": run_id, "name": "toy-model", "path": "best_model", "description": description,
             "tags": tags}
    writes.apply(write)
    writes.apply(write)  # delivered twice (an answer lost): still one version, the same text
    (version,) = client.search_model_versions("name = 'toy-model'")
    assert version.description == description and "The best trial **t03** of sweep `demo-1`" in description
    assert "scale=22.4" in description and "dev_stsb_dev 82.38" in description
    assert {k: version.tags[k] for k in ("trial", "sentsweep.trial_id", "sweep", "param.scale", "dev_stsb_dev",
                                         "test_stsb_test", "confirmed_stsb_dev_mean", "trial_run_id")} == {
        "trial": "t03", "sentsweep.trial_id": "a5c2b788", "sweep": "demo-1", "param.scale": "22.4",
        "dev_stsb_dev": "82.38", "test_stsb_test": "79.10", "confirmed_stsb_dev_mean": "81.95",
        "trial_run_id": "trial-run"}


class _Trial:
    """What the driver's callbacks read of a Tune trial."""

    def __init__(self, trial_id: str, status: str, last_result: dict | None, params: dict | None = None) -> None:
        self.trial_id, self.status, self.last_result = trial_id, status, last_result
        self.evaluated_params = params or {}


def test_the_driver_names_each_outcome_and_each_trial_by_its_number() -> None:
    from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback, completed_outcome, ended_outcome

    pruned = _Trial("b", "TERMINATED", {"training_iteration": 1, "step": 8, "done": True})
    assert completed_outcome(pruned, "ASHA") == ("pruned", "pruned by ASHA at iteration 1 (step 8)")
    assert completed_outcome(_Trial("a", "TERMINATED", {"final": 1.0}), "ASHA") == ("finished", None)
    assert completed_outcome(_Trial("c", "TERMINATED", {}), "ASHA") == ("not started", NOT_STARTED_REASON)
    assert ended_outcome(_Trial("d", "TERMINATED", {"training_iteration": 2, "done": False}), "ASHA")[0] == "stopped"
    assert ended_outcome(_Trial("e", "RUNNING", {"training_iteration": 2}), "ASHA")[0] == "interrupted"
    trials = [_Trial("a", "RUNNING", None, {"scale": 22.4}), _Trial("b", "RUNNING", None, {"lr": 3.5e-05})]
    callback = TrialRunsCallback({}, "ASHA", 0.0, label_prefix="c")
    callback._number(trials, trials[1])
    assert callback._name(trials[1]) == ("c02 lr=3.5e-05", 2)
    assert callback._name(trials[0]) == ("a scale=22.4", None), "a trial not seen yet: its id"


def test_the_progress_line_names_the_best_trial_by_its_label() -> None:
    from sentsweep.platform.driver.callbacks import ProgressCallback

    trials = [_Trial("a", "RUNNING", {"training_iteration": 1, "stsb_dev": 60.0}),
              _Trial("b", "RUNNING", {"training_iteration": 1, "best_stsb_dev": 80.0})]
    assert ProgressCallback("stsb_dev", "max", 2).best(trials) == ("t02", 80.0)
    trials[1].status = "TERMINATED"  # stopped between reports by the budget or the time limit: it cannot win
    assert ProgressCallback("stsb_dev", "max", 2).best(trials) == ("t02, stopped", 80.0)
    trials[1].last_result["done"] = True  # stopped by the scheduler at a report
    assert ProgressCallback("stsb_dev", "max", 2).best(trials) == ("t02, pruned", 80.0)


def test_a_trial_keeps_its_label_when_a_resume_reorders_tunes_trials() -> None:
    """Labels follow the order Tune created the trials (its ``experiment_tag`` count), not their place in the
    list, which a restore may change; the progress line, the failure line and the trial runs agree."""
    from sentsweep.platform.driver.callbacks import ProgressCallback, label_of
    from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback

    first, second, third = (_Trial(t, "RUNNING", {"stsb_dev": v}) for t, v in (("a", 80.0), ("b", 60.0), ("c", 70.0)))
    for number, trial in enumerate((first, second, third), 1):
        trial.experiment_tag = f"{number}_lr=0.001"
    restored = [third, second, first]  # the order a restore listed them in
    assert [label_of(restored, t) for t in restored] == ["t03", "t02", "t01"]
    assert ProgressCallback("stsb_dev", "max", 3).best(restored) == ("t01", 80.0)
    callback = TrialRunsCallback({}, "ASHA", 0.0)
    callback._number(restored, first)
    assert callback._name(first)[1] == 1
    untagged = [_Trial("x", "RUNNING", None), _Trial("y", "RUNNING", None)]  # no count: their place in the list
    assert label_of(untagged, untagged[1]) == "t02"


def test_the_sweep_prints_its_runs_page_on_a_tracking_server() -> None:
    from types import SimpleNamespace

    from sentsweep.platform.tracking.parent_run import run_page

    served = SimpleNamespace(tracking_uri="https://mlflow.example", experiment_id="2", run_id="r1")
    assert run_page(served) == " at https://mlflow.example/#/experiments/2/runs/r1?workflowType=machine_learning"
    assert run_page(SimpleNamespace(tracking_uri="sqlite:///mlruns.db", experiment_id="2", run_id="r1")) == ""


def test_a_retried_trial_is_named_in_one_line_with_where_it_restarts(tmp_path: Path, capsys) -> None:
    """Tune retries a failed trial (a lost node): one line says so, from its latest checkpoint or from scratch, with
    the error's last line instead of Tune's traceback."""
    from types import SimpleNamespace

    from sentsweep.platform.driver.callbacks import ProgressCallback
    from sentsweep.trainables.restore_note import SCRATCH, retry_line, retry_note

    error = tmp_path / "error.txt"
    error.write_text("Failure # 1 (occurred at 2026)\nTraceback (most recent call last):\n  File x\n"
                     "ray.exceptions.ActorDiedError: The actor died because its node was lost\n")
    trial = _Trial("a", "PENDING", None)
    trial.error_file, trial.checkpoint = str(error), None
    ProgressCallback("stsb_dev", "max", 2).on_trial_recover(1, [trial], trial)
    assert capsys.readouterr().out.strip() == ("trial t01 failed and restarts from scratch: ray.exceptions."
                                               "ActorDiedError: The actor died because its node was lost")
    trial.checkpoint = SimpleNamespace(path="/s/trial/checkpoint_000002/")
    assert retry_note(trial.checkpoint.path, "x") == ("checkpoint checkpoint_000002", "x")
    assert retry_note(None, "x") == (SCRATCH, "x")
    assert retry_line("t02", ("checkpoint checkpoint_000002", "E" * 400)).endswith("E" * 297 + "...")


def test_a_trial_that_fails_for_good_is_one_line_and_tunes_traceback_stays_in_its_file(tmp_path: Path, capsys,
                                                                                       monkeypatch) -> None:
    """A trial Tune does not retry: one line with the error's last line and where its traceback is; the CLI turns
    Tune's own printed traceback off unless the user set ``TUNE_PRINT_ALL_TRIAL_ERRORS``."""
    from sentsweep.cli.sweeps import _quiet_libraries
    from sentsweep.platform.driver.callbacks import ProgressCallback

    error = tmp_path / "error.txt"
    error.write_text("Failure # 2\nTraceback (most recent call last):\n  File x\nRuntimeError: CUDA out of memory\n")
    trial = _Trial("a", "ERROR", None)
    trial.error_file = str(error)
    ProgressCallback("stsb_dev", "max", 2).on_trial_error(1, [trial], trial)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"trial t01 failed: RuntimeError: CUDA out of memory (traceback in {error})"
    for name in ("TUNE_PRINT_ALL_TRIAL_ERRORS", "RAY_AIR_NEW_OUTPUT", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"):
        monkeypatch.delenv(name, raising=False)  # restored after the test
    _quiet_libraries()
    assert os.environ["TUNE_PRINT_ALL_TRIAL_ERRORS"] == "0"
    monkeypatch.setenv("TUNE_PRINT_ALL_TRIAL_ERRORS", "1")
    _quiet_libraries()
    assert os.environ["TUNE_PRINT_ALL_TRIAL_ERRORS"] == "1"


def test_a_resumed_sweep_does_not_repeat_its_last_progress_line(capsys) -> None:
    """A fresh sweep's first step says where it starts; a resume's first step, with trials that ended in the earlier
    session, says nothing (that session's last line did), and the next trial's end is said once."""
    import pickle

    from sentsweep.platform.driver.callbacks import ProgressCallback

    fresh = ProgressCallback("stsb_dev", "max", 2)
    pickled = pickle.dumps(fresh)  # Tune pickles the callbacks as it builds the Tuner, before the sweep runs
    fresh.setup(total_num_samples=2)
    fresh.on_step_end(1, [_Trial("a", "PENDING", None), _Trial("b", "PENDING", None)])
    assert capsys.readouterr().out.endswith("0/2 trials: 0 finished, 0 running, 0 pruned, 0 failed\n")
    resumed = pickle.loads(pickled)
    resumed.setup(total_num_samples=2)
    trials = [_Trial("a", "TERMINATED", {"stsb_dev": 60.0, FINAL_KEY: 1.0}), _Trial("b", "PENDING", None)]
    for iteration in (1, 2):
        resumed.on_step_end(iteration, trials)
    assert capsys.readouterr().out == ""
    trials[1].last_result = {"stsb_dev": 70.0, FINAL_KEY: 1.0}
    resumed.on_trial_complete(3, trials, trials[1])
    assert capsys.readouterr().out.endswith("2/2 trials: 2 finished, 0 running, 0 pruned, 0 failed | "
                                            "best stsb_dev 70.00 (t02)\n")
