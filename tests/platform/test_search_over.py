"""A sweep whose search ended (Tune's ``fit`` returned) is not searched again by a resume, confirmation stage or
not: a crash after the search (in finalize) resumes with the search's results read back, its errored trial not
trained again; a resume that raises a bound of the search (``num_samples``) searches on (real Ray, Optuna, MLflow,
the toy method)."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from sentsweep.platform.location import locate
from sentsweep.platform.search.searcher import SEARCH_FILE
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, PARENT_TAG


def _attempts(client: MlflowClient, experiment_id: str, parent: str) -> dict[str, str]:
    runs = client.search_runs([experiment_id], f"tags.`{PARENT_TAG}` = '{parent}'")
    return {run.info.run_id: run.data.tags[ATTEMPT_TAG] for run in runs}


@pytest.mark.slow
def test_a_resume_after_the_search_ended_reads_its_results_back(tmp_path, tiny_bert_dir, tracking_uri,
                                                                ray_session) -> None:
    from sentsweep.platform.driver.sweep import resume_sweep, run_sweep
    from tests.platform.sweep_toy import FAULTY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 2, "eval_every": 2})
    first = run_sweep(config, trainable=TOY_TRAINABLE, space=FAULTY_SPACE, finalize=False, preflight=False,
                      echo=lambda line: None)
    # trial 1 raises at its first step
    assert first.counts == {"finished": 1, "pruned": 0, "stopped": 0, "not started": 0, "failed": 1}
    mark = locate(first.sweep_dir).read_json_object(SEARCH_FILE, "the search's mark")
    assert mark is not None and mark["bounds"]["num_samples"] == 2
    client = MlflowClient(tracking_uri=tracking_uri)
    before = _attempts(client, first.experiment_id, first.parent_run_id)

    # as after a crash in finalize: the same config, the search over
    again = resume_sweep(first.sweep_dir, trainable=TOY_TRAINABLE, space=FAULTY_SPACE, finalize=False,
                         preflight=False, echo=lambda line: None)
    assert again.counts == first.counts
    assert _attempts(client, first.experiment_id, first.parent_run_id) == before, "no trial trained again"

    # more trials asked for: the search goes on (and the mark then holds the new bound)
    more = resume_sweep(first.sweep_dir, overrides=["num_samples=3"], allow_change=["num_samples"],
                        trainable=TOY_TRAINABLE, space=FAULTY_SPACE, finalize=False, preflight=False,
                        echo=lambda line: None)
    assert len(more.results) == 3
    assert locate(first.sweep_dir).read_json_object(SEARCH_FILE, "the search's mark")["bounds"]["num_samples"] == 3
    assert (tmp_path / "ray_results" / locate(first.sweep_dir).name / SEARCH_FILE).is_file()


def test_a_finalize_run_again_takes_the_test_suite_an_earlier_one_recorded(tmp_path, tiny_bert_dir, tracking_uri,
                                                                            ray_session) -> None:
    """A resume after a crash past finalize's evaluation (here: a finalize run to its end, then run again) does not
    evaluate the best trial again, nor log its figures twice: the parent run holds them for that trial."""
    from sentsweep.platform.driver.sweep import resume_sweep, run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        fixed={"max_steps": 2, "eval_every": 2}, export=False, plots=False)
    first = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=lambda line: None)
    assert first.final_metrics
    lines: list[str] = []
    again = resume_sweep(first.sweep_dir, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                         echo=lines.append)
    assert again.final_metrics == first.final_metrics and again.best_trial_id == first.best_trial_id
    assert any("test suite (recorded by an earlier finalize)" in line for line in lines), lines
    client = MlflowClient(tracking_uri=tracking_uri)
    keys = [f"final_{k}" for k in first.final_metrics] + [f"best_{config.metric}"]
    logged = [len(client.get_metric_history(first.parent_run_id, key)) for key in keys]
    assert logged == [1] * len(keys), dict(zip(keys, logged, strict=True))
