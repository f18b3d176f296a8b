"""A paper config's reference trial in a real sweep (Ray Tune + Optuna + ASHA + MLflow sqlite) of the toy method:
the paper's setting is the worst at the first rung, finishes all the same, is tagged in MLflow and in ``compare``,
and the final summary puts the paper's figure, that trial and the tuned winner side by side."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
from mlflow import MlflowClient

from sentsweep.platform.config import load_sweep_config
from sentsweep.platform.report.compare import compare
from sentsweep.platform.results import is_final
from sentsweep.search_spaces.python_space import PythonSpace
from sentsweep.tracking.vocabulary import PARENT_TAG, REFERENCE_TAG, REFERENCE_TRIAL_TAG, TRIAL_ID_TAG
from tests.platform.sweep_toy import TOY_TRAINABLE, toy_config, toy_space

PAPER_POINT = {"lr": 1e-3, "scale": 1.0}
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


#: The environment variable naming the file every trial writes its steps to (read where the searcher runs).
STEP_LOG = "SENTSWEEP_TEST_STEP_LOG"


def worst_paper_space(trial: optuna.Trial) -> dict[str, Any] | None:
    """The toy's space; its first point (the paper's setting) scores 30 points below any other on dev and waits
    until another trial has trained 5 steps (past its first report, at step 2), so that it is the worst at the
    first rung when it reaches it."""
    toy_space(trial)
    log = {"step_log": os.environ[STEP_LOG]}
    return {**log, "dev_penalty": 30.0, "wait_for_steps": 5} if trial.params == PAPER_POINT else log


SPACE = PythonSpace("toy-worst-paper", "toy", worst_paper_space, dict(PAPER_POINT))


def test_the_reference_trial_is_the_worst_at_the_first_rung_and_still_finishes(tmp_path, tiny_bert_dir,
                                                                               tracking_uri, ray_session,
                                                                               monkeypatch):
    from sentsweep.platform.driver.sweep import run_sweep

    monkeypatch.setenv(STEP_LOG, str(tmp_path / "steps.log"))
    paper = load_sweep_config(CONFIGS / "paper-cosent-stsb.yaml")  # the paper config's reference section
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, max_concurrent_trials=2,
                        reference=paper.reference.model_dump(), plots=False, export=False,
                        confirm={"top_k": 1, "seeds": 2})
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=SPACE, echo=lines.append, preflight=False)

    reference = [r for r in outcome.results if all(r.config.get(k) == v for k, v in PAPER_POINT.items())]
    assert len(reference) == 1 and is_final(reference[0].metrics), "the paper's setting ran to its end"
    first_rung = {r.metrics["trial_id"]: float(r.metrics_dataframe.query("training_iteration == 1")["stsb_dev"].iloc[0])
                  for r in outcome.results if r.metrics_dataframe is not None and len(r.metrics_dataframe)}
    reached = {r.metrics["trial_id"]: int(r.metrics_dataframe.query("training_iteration == 1")["timestamp"].iloc[0])
               for r in outcome.results if r.metrics_dataframe is not None and len(r.metrics_dataframe)}
    ref_id = reference[0].metrics["trial_id"]
    assert first_rung[ref_id] == min(first_rung.values()) and len(first_rung) > 1, first_rung
    assert min(v for k, v in reached.items() if k != ref_id) <= reached[ref_id], "others reached the rung first"

    client = MlflowClient(tracking_uri=tracking_uri)
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    tagged = {r.data.tags[TRIAL_ID_TAG]: r.data.tags.get(REFERENCE_TAG) for r in children
              if TRIAL_ID_TAG in r.data.tags}  # the search's trials (the confirmation stage's run holds its own)
    assert tagged.pop(ref_id) == "paper" and set(tagged.values()) == {None}
    assert client.get_run(outcome.parent_run_id).data.tags[REFERENCE_TRIAL_TAG] == ref_id
    ref_label = next(r.info.run_name.split()[0] for r in children if r.data.tags.get(TRIAL_ID_TAG) == ref_id)
    sweeps, trials = compare(client, ["toy"])
    assert sweeps.loc[0, "reference_trial"] == ref_label  # named by its label, as every table names trials
    assert dict(zip(trials["trial"], trials["reference"], strict=True))[ref_label] == "paper"

    start = next(i for i, line in enumerate(lines) if line.startswith("paper vs paper setting vs tuned winner"))
    summary = lines[start:]
    print("\n".join(summary))
    assert "CoSENT, Table IV" in summary[0]
    assert any(line.split()[:2] == ["stsb_test", "85.75"] for line in summary), summary
    assert "tuned winner (confirmation, lower_bound)" in summary[1]
    assert any("+-" in line and "(n=2" in line for line in summary), "the winner's confirmation interval"
    assert any(f"trial {ref_label}" in line for line in summary)
    assert any("what differs: selection on stsb_dev here" in line for line in summary)
