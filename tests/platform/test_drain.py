"""The driver's side of a drain: the stop flag in Ray's internal KV as a worker sees it, when the drain calls Tune's
stop, and how a draining report is kept from the scheduler and the searcher."""

from __future__ import annotations

import pytest

from sentsweep.platform.drain import Drain, evaluation_result, is_draining
from sentsweep.trainables.loop import EVALUATIONS_KEY
from sentsweep.trainables.stop_flag import DRAINING_KEY, StopFlag


def test_evaluation_result_counts_evaluations_not_reports() -> None:
    plain = {"training_iteration": 3, "score": 1.0}
    assert evaluation_result(plain) is plain and not is_draining(plain)
    # one draining report before: Tune counts 3 reports, the trial its second evaluation
    assert evaluation_result({**plain, EVALUATIONS_KEY: 2.0})["training_iteration"] == 2
    assert is_draining({DRAINING_KEY: 1.0, "training_iteration": 3})


def test_the_flag_is_seen_by_a_worker_and_the_drain_stops_tune_once(ray_session) -> None:
    import ray
    from ray.tune.experiment import Trial

    @ray.remote
    def worker_sees(name: str) -> bool:
        return StopFlag(name).is_raised()

    clock = [0.0]
    drain = Drain("sweep-a", grace_s=20.0, clock=lambda: clock[0])
    drain.reset_flag()
    running, done = Trial("__fake", trial_id="r1", stub=True), Trial("__fake", trial_id="d1", stub=True)
    running.set_status(Trial.RUNNING)
    drain.step([running, done])
    stopped: list[str] = []
    try:
        assert drain.begin(lambda: stopped.append("tune"))
        assert ray.get(worker_sees.remote("sweep-a")) and not ray.get(worker_sees.remote("sweep-b"))
        drain.step([running, done])
        assert not stopped  # the running trial has not drained yet
        drain.on_result("r1", {DRAINING_KEY: 1.0})
        drain.step([running, done])
        assert stopped == ["tune"]
        drain.step([running, done])
        assert stopped == ["tune"]
        assert not drain.begin(lambda: stopped.append("again"))  # a second signal: the caller stops Tune now
    finally:
        drain.reset_flag()
    assert not ray.get(worker_sees.remote("sweep-a"))


def test_an_overdue_drain_stops_and_no_grace_means_no_drain(ray_session) -> None:
    from ray.tune.experiment import Trial

    clock = [0.0]
    trial = Trial("__fake", trial_id="r2", stub=True)
    trial.set_status(Trial.RUNNING)
    stopped: list[str] = []
    drain = Drain("sweep-c", grace_s=5.0, clock=lambda: clock[0])
    drain.step([trial])
    try:
        assert drain.begin(lambda: stopped.append("tune"))
        clock[0] = 4.9
        drain.step([trial])
        assert not stopped
        clock[0] = 5.0
        drain.step([trial])
        assert stopped == ["tune"]
    finally:
        drain.reset_flag()
    off = Drain("sweep-d", grace_s=0.0)
    off.step([trial])
    assert not off.begin(lambda: stopped.append("x")) and not StopFlag("sweep-d").is_raised()


@pytest.mark.parametrize("grace", [-1.0])
def test_a_negative_grace_period_is_refused(grace: float, tmp_path, tiny_bert_dir) -> None:
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config
    from tests.platform.sweep_toy import toy_config

    raw = toy_config(tmp_path, tiny_bert_dir, "sqlite:///x.db").model_dump(mode="json")
    with pytest.raises(ConfigError, match="stop_grace_s"):
        parse_sweep_config({**raw, "stop_grace_s": grace}, "sweep.yaml")
