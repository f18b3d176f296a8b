"""The dev sets a trial selects on (``dev_data``) or scores beside (``extra_dev_data``): STS-B dev, SICK-R trial and
SNLI dev against its NLI labels (``nli``: the CoSENT reference selects its NLI transfer on NLI dev). The
metric follows the dev set; a metric naming another dev set is refused, naming the field."""

from __future__ import annotations

import pytest

from sentsweep.errors import ConfigError
from sentsweep.evaluation.sts import NLI_DEV, SICKR_TRIAL, STSB_DEV
from sentsweep.tracking.datasets import trial_datasets
from sentsweep.trainables.cosent import CosentConfig
from sentsweep.trainables.trial_config import DEV_SETS, TrialConfig, parse_config


def test_dev_data_nli_selects_on_nli_dev() -> None:
    assert DEV_SETS["nli"] == NLI_DEV == "nli_dev"
    config = parse_config(CosentConfig, {"train_data": "snli", "train_split": "train+mnli", "dev_data": "nli"})
    assert (config.dev_metric, config.metric) == (NLI_DEV, NLI_DEV)
    assert parse_config(TrialConfig, {"dev_data": "nli", "metric": "nli_dev"}).metric == NLI_DEV
    assert TrialConfig(dev_data="sickr").metric == SICKR_TRIAL  # an unset metric still follows the dev set


@pytest.mark.parametrize(("raw", "named"), [
    ({"metric": "stsb_dev", "dev_data": "nli"}, "nli_dev"),
    ({"metric": "nli_dev"}, "stsb_dev"),
    ({"metric": "sickr_trial", "dev_data": "nli"}, "nli_dev"),
])
def test_a_metric_of_another_dev_set_is_refused(raw: dict[str, str], named: str) -> None:
    """The loop selects on the set of ``dev_data``; a sweep ranking by another dev set's metric would find it in
    no report, so an explicit mismatch is one error naming the field (never rewritten silently)."""
    with pytest.raises(ConfigError, match=f"is not the metric of dev_data .*selects on '{named}'") as err:
        parse_config(TrialConfig, raw, "trial.yaml")
    assert err.value.field == "metric" and err.value.file == "trial.yaml" and "\n" not in str(err.value)


def test_the_nli_dev_set_loads_with_the_other_sets_and_max_dev_pairs() -> None:
    """SNLI dev through the data loaders (the bundled sample or $SENTSWEEP_DATA), its labels as the scores,
    cut to ``max_dev_pairs`` as the other dev sets are; ``extra_dev_data`` takes it too."""
    sets = TrialConfig(dev_data="nli", extra_dev_data=["stsb", "nli"], max_dev_pairs=8).dev_evaluator(8).sets
    assert [s.key for s in sets] == [NLI_DEV, STSB_DEV] and [len(s.pairs) for s in sets] == [8, 8]
    assert {p.score for p in sets[0].pairs} <= {0.0, 1.0, 2.0}
    extra = TrialConfig(extra_dev_data=["nli"], max_dev_pairs=5).dev_evaluator(8).sets
    assert [(s.key, len(s.pairs)) for s in extra] == [(STSB_DEV, 5), (NLI_DEV, 5)]


def test_the_nli_dev_set_is_the_runs_validation_input() -> None:
    records = {r.name: r.context for r in trial_datasets(TrialConfig(dev_data="nli", max_dev_pairs=8,
                                                                     test_tasks="stsb_test"))}
    assert records == {"snli/dev[8 sampled]": "validation", "stsb/test": "test"}


def test_selecting_on_the_split_a_trial_trains_on_is_refused() -> None:
    """Offline, CoSENT's NLI runs train on SNLI dev (``train_split: dev``): selecting on ``nli`` would then rank the
    very pairs the model fits; the same for STS-B dev. Other dev sets stay allowed."""
    for raw in ({"train_data": "snli", "train_split": "dev", "dev_data": "nli"},
                {"train_data": "stsb", "train_split": "dev"}):
        with pytest.raises(ConfigError, match="the split this trial trains on") as err:
            parse_config(CosentConfig, raw, "trial.yaml")
        assert err.value.field == "dev_data"
    assert parse_config(CosentConfig, {"train_data": "snli", "train_split": "dev"}).dev_metric == STSB_DEV
    # a further dev set (a multi-objective sweep's other objective) that scores the training pairs: refused too
    with pytest.raises(ConfigError, match="'nli' scores snli dev, the split this trial trains on") as err:
        parse_config(CosentConfig, {"train_data": "snli", "train_split": "dev", "extra_dev_data": ["nli"]}, "t.yaml")
    assert err.value.field == "extra_dev_data"


@pytest.mark.parametrize("raw", [
    {"train_data": "stsb", "train_split": "test"},
    {"train_data": "sickr", "train_split": "test", "test_tasks": "sickr_test"},
    {"train_data": "sickr", "train_split": "test", "test_tasks": "sick_relatedness"},
    {"train_data": "mrpc", "train_split": "test", "test_tasks": "senteval"},
    {"train_data": "stsb", "train_split": "test", "architecture": "cross", "test_tasks": "sts12"},
])
def test_training_on_a_split_the_test_suite_scores_is_refused(raw: dict[str, str]) -> None:
    """Training on STS-B test and then reporting ``stsb_test`` (or SICK/MRPC test under SentEval) measures the test
    figures on training pairs: the config is refused, naming ``train_split``. The cross-encoder's suite is always
    STS-B and SICK-R test, whatever ``test_tasks`` says."""
    with pytest.raises(ConfigError, match="the split this trial trains on .*measured on training pairs") as err:
        parse_config(CosentConfig, raw, "trial.yaml")
    assert err.value.field == "train_split"


def test_a_test_split_outside_the_test_suite_is_allowed() -> None:
    config = parse_config(CosentConfig, {"train_data": "sickr", "train_split": "test", "test_tasks": "stsb_test"})
    assert (config.train_data, config.train_split) == ("sickr", "test")
    assert parse_config(CosentConfig, {"train_data": "stsb", "train_split": "dev", "dev_data": "sickr"}).train_split \
        == "dev"


def test_test_tasks_set_with_the_cross_encoder_is_named_as_having_no_effect(caplog: pytest.LogCaptureFixture) -> None:
    """The cross-encoder's final figures are always STS-B and SICK-R test (it has no sentence embedding for the
    suites): a ``test_tasks`` set with it does nothing, and the config says so instead of accepting it silently."""
    with caplog.at_level("WARNING", logger="sentsweep.trainables.cosent"):
        parse_config(CosentConfig, {"architecture": "cross", "test_tasks": "senteval"})
    assert "test_tasks 'senteval' has no effect" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="sentsweep.trainables.cosent"):
        parse_config(CosentConfig, {"architecture": "cross"})
        parse_config(CosentConfig, {"test_tasks": "senteval"})
    assert "no effect" not in caplog.text
