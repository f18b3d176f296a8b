"""Multi-objective sweep configs: ``objectives:`` parsed, checked with one line naming the entry, and the first
objective is the sweep's metric; each objective's value read (or a cost derived) from a Tune result."""

from __future__ import annotations

import math

import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import parse_sweep_config
from sentsweep.platform.objectives import (
    Objective,
    extra_dev_sets,
    objective_value,
    objective_values,
    parse_objective,
    select_report,
)

BASE = {"name": "s", "method": "cosent"}


def _config(**raw):
    return parse_sweep_config({**BASE, **raw}, "sweep.yaml")


def test_objectives_set_metric_and_mode_from_the_first_and_round_trip():
    config = _config(objectives=["stsb_dev  max", "compute_seconds min"], mode="max")
    assert (config.metric, config.mode) == ("stsb_dev", "max")
    assert config.objectives == ["stsb_dev max", "compute_seconds min"]
    assert config.objective_list == (Objective("stsb_dev", "max"), Objective("compute_seconds", "min"))
    assert config.modes == ["max", "min"]
    assert parse_sweep_config(config.model_dump(mode="json")) == config


def test_without_objectives_the_sweep_is_single_metric():
    config = _config()
    assert config.objectives is None and config.objective_list == () and config.modes == ["max"]


def test_the_sickr_dev_set_and_gpu_seconds_on_a_gpu_sweep():
    config = _config(fixed={"dev_data": "sickr"}, resources={"gpu": 1},
                     objectives=["sickr_trial max", "gpu_seconds min", "compute_seconds min"])
    assert config.metric == "sickr_trial" and len(config.objective_list) == 3


@pytest.mark.parametrize(("objectives", "field", "words"), [
    (["stsb_dev max"], "objectives", "at least 2"),
    (["stsb_dev max", "compute_seconds down"], "objectives.1", "unknown mode 'down'"),
    (["stsb_dev max", "compute_seconds"], "objectives.1", "'METRIC max' or 'METRIC min'"),
    (["stsb_dev max", "stsb_dev min"], "objectives.1", "listed twice"),
    (["stsb_dev max", "sts_avg7 max"], "objectives.1", "no trial reports 'sts_avg7'"),
    (["compute_seconds min", "stsb_dev max"], "objectives.0", "must be the trial's dev metric 'stsb_dev'"),
    (["stsb_dev max", "gpu_seconds min"], "objectives.1", "hold no GPU"),
])
def test_a_bad_objective_is_one_line_naming_the_entry(objectives, field, words):
    with pytest.raises(ConfigError) as err:
        _config(objectives=objectives)
    message = str(err.value)
    assert message.startswith(f"sweep.yaml: field '{field}': ") and words in message and "\n" not in message


@pytest.mark.parametrize(("raw", "field"), [({"metric": "sickr_trial"}, "metric"), ({"mode": "min"}, "mode")])
def test_metric_or_mode_contradicting_the_first_objective_is_refused(raw, field):
    with pytest.raises(ConfigError, match=f"field '{field}': .* contradicts the first objective 'stsb_dev max'"):
        _config(objectives=["stsb_dev max", "compute_seconds min"], **raw)


def test_values_are_read_or_derived_from_a_result():
    cpu = {"stsb_dev": 71.5, "time_total_s": 12.0, "gpus": 0.0}
    gpu = {"stsb_dev": 80.0, "time_total_s": 10.0, "gpus": 0.5}
    dev, compute, gpus = (parse_objective(t) for t in ("stsb_dev max", "compute_seconds min", "gpu_seconds min"))
    assert objective_values(cpu, [dev, compute, gpus]) == [71.5, 12.0, 0.0]  # CPU: its wall seconds
    assert objective_values(gpu, [dev, compute, gpus]) == [80.0, 5.0, 5.0]  # seconds x GPUs held
    assert objective_value({"gpus": 1.0}, compute) is None and objective_value({}, dev) is None
    assert dev.better(2.0, 1.0) and compute.better(1.0, 2.0) and not compute.better(1.0, 1.0)
    assert "higher is better" in dev.label and "lower is better" in compute.label


def test_a_further_dev_metric_is_scored_by_the_trials():
    config = _config(objectives=["stsb_dev max", "sickr_trial max"], fixed={"extra_dev_data": ["stsb"]})
    assert config.fixed["extra_dev_data"] == ["stsb", "sickr"]  # what the trials' dev evaluator scores besides
    assert parse_sweep_config(config.model_dump(mode="json")) == config
    assert extra_dev_sets(config.objective_list) == ["sickr"]
    assert "extra_dev_data" not in _config(objectives=["stsb_dev max", "compute_seconds min"]).fixed


def test_the_selected_report_is_the_first_at_the_best_first_objective():
    first, sickr = parse_objective("stsb_dev max"), parse_objective("sickr_trial max")
    reports = [{"stsb_dev": 60.0, "sickr_trial": 50.0}, {"stsb_dev": 70.0, "sickr_trial": 55.0},
               {"stsb_dev": math.nan, "sickr_trial": 99.0}, {"stsb_dev": 70.0, "sickr_trial": 58.0},
               {"stsb_dev": 65.0, "sickr_trial": 61.0}]
    selected = None
    for report in reports:
        selected = select_report(selected, report, first)
    assert selected is reports[1]
    final = {"stsb_dev": 70.0, "time_total_s": 30.0}  # a final report: the best value and the tests, no sickr_trial
    assert objective_value(final, sickr, selected) == 55.0 and objective_value(final, sickr) is None
    assert objective_value({**final, "sickr_trial": 1.0}, sickr, selected) == 1.0


def test_the_trials_dev_evaluator_scores_the_further_sets():
    from sentsweep.trainables.trial_config import TrialConfig

    def keys(**raw):
        return [s.key for s in TrialConfig(max_dev_pairs=8, **raw).dev_evaluator(8).sets]

    assert keys() == ["stsb_dev"]  # as before
    assert keys(extra_dev_data=["sickr"]) == ["stsb_dev", "sickr_trial"]
    assert keys(dev_data="sickr", extra_dev_data=["sickr", "stsb"]) == ["sickr_trial", "stsb_dev"]
