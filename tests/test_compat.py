"""Every name of Ray outside its public API that sentsweep uses (:mod:`sentsweep._compat`), exercised here so that
an upgrade which renames or removes one fails with a message naming it; and a scan that keeps private names of Ray
and MLflow out of the rest of the package."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import sentsweep


def _require(module: str, name: str) -> Any:
    """``module.name``, or a failure naming it (the upgrade removed what :mod:`sentsweep._compat` relies on)."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{module}.{name} is gone ({exc}): update sentsweep/_compat for this version")


# -- Ray ---------------------------------------------------------------------------------------------------------
def test_ray_single_machine_switch() -> None:
    from sentsweep._compat.ray import set_single_machine

    constants = importlib.import_module("ray._private.ray_constants")
    _require("ray._private.ray_constants", "ENABLE_RAY_CLUSTER")
    before = set_single_machine(True)
    try:
        assert constants.ENABLE_RAY_CLUSTER is False, "ray._private.ray_constants.ENABLE_RAY_CLUSTER not switched"
    finally:
        set_single_machine(before)
    assert set_single_machine(before) is before


def test_ray_auth_settings_reload(monkeypatch: pytest.MonkeyPatch) -> None:
    from sentsweep._compat.ray import reload_auth_settings

    config, loader = _require("ray._raylet", "Config"), _require("ray._raylet", "AuthenticationTokenLoader")
    assert callable(config.initialize), "ray._raylet.Config.initialize is gone"
    assert callable(loader.instance().reset_cache), "ray._raylet.AuthenticationTokenLoader.reset_cache is gone"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    reload_auth_settings()


def test_ray_training_result_for_restore() -> None:
    """``Trainable.restore`` asserts that it is given its own ``_TrainingResult``: the one compat builds."""
    from ray.tune import Checkpoint

    from sentsweep._compat.ray import with_checkpoint

    result_class = _require("ray.train._internal.session", "_TrainingResult")
    trainable_module = importlib.import_module("ray.tune.trainable.trainable")
    assert getattr(trainable_module, "_TrainingResult", None) is result_class, \
        "Trainable.restore no longer takes ray.train._internal.session._TrainingResult"
    old = result_class(checkpoint=Checkpoint("/a"), metrics={"training_iteration": 3})
    new = with_checkpoint(old, Checkpoint("/b"))
    assert isinstance(new, result_class)
    assert new.checkpoint.path == "/b" and new.metrics == {"training_iteration": 3}


def test_ray_tune_propagating_none_of(ray_session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tune builds a trial actor's runtime_env from ``class_cache.ENV_VARS_TO_PROPAGATE`` when it registers the
    trainable: an actor of the class registered inside the block lacks the held-back variable and has the others,
    and the set is back after."""
    import os

    import ray

    from sentsweep._compat.ray import tune_propagating_none_of

    class_cache = importlib.import_module("ray.tune.execution.class_cache")
    before = _require("ray.tune.execution.class_cache", "ENV_VARS_TO_PROPAGATE")
    assert "AWS_SECRET_ACCESS_KEY" in before, "Tune no longer copies AWS_SECRET_ACCESS_KEY: drop the compat"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "held-back")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kept")

    class Trainable:
        def env(self, name: str) -> str | None:
            return os.environ.get(name)

    with tune_propagating_none_of(["AWS_SECRET_ACCESS_KEY"]):
        remote_class = class_cache._ActorClassCache().get(Trainable)
    assert class_cache.ENV_VARS_TO_PROPAGATE is before
    actor = remote_class.options(num_cpus=0).remote()
    try:
        seen = ray.get([actor.env.remote("AWS_SECRET_ACCESS_KEY"), actor.env.remote("AWS_ACCESS_KEY_ID")], timeout=120)
    finally:
        ray.kill(actor)
    assert seen[0] != "held-back" and seen[1] == "kept", seen


def test_ray_restored_tune_config() -> None:
    from ray import tune

    from sentsweep._compat.ray import restored_tune_config

    tune_config = tune.TuneConfig(num_samples=3, time_budget_s=5.0)
    tuner = tune.Tuner(lambda config: None, tune_config=tune_config)
    found = restored_tune_config(tuner)
    assert found is not None, "Tuner._local_tuner._tune_config is gone: a resume cannot change its TuneConfig"
    assert found.num_samples == 3 and found.time_budget_s == 5.0


def test_ray_tune_sync_threads_are_waited_for() -> None:
    """Tune's driver uploads its staging folder in a ``_BackgroundProcess`` thread whose target lives in
    ``ray.train._internal.syncer``: :func:`wait_for_tune_syncs` finds it by that module."""
    import threading

    from sentsweep._compat.ray import TUNE_SYNC_MODULE, wait_for_tune_syncs

    background = _require(TUNE_SYNC_MODULE, "_BackgroundProcess")
    release = threading.Event()
    upload = background(lambda: release.wait(30))
    upload.start()
    try:
        assert wait_for_tune_syncs(0.2) is False, f"Tune's upload thread is no longer a target of {TUNE_SYNC_MODULE}"
    finally:
        release.set()
    assert wait_for_tune_syncs(10) is True
    upload.wait()


def test_ray_trial_storage(ray_session, tmp_path: Path) -> None:
    """``tune.get_context().get_storage()`` (a DeveloperAPI) inside a trial, with the four paths compat copies."""
    from ray import tune

    from sentsweep._compat.ray import trial_storage

    assert trial_storage() is None  # outside a trial

    def trial(config: dict) -> None:
        storage = trial_storage()
        tune.report({"experiment": storage.experiment_fs_path, "trial": storage.trial_fs_path,
                     "working": storage.trial_working_directory,
                     "local": float(isinstance(storage.storage_filesystem, __import__("pyarrow").fs.LocalFileSystem))})

    tuner = tune.Tuner(trial, run_config=tune.RunConfig(name="compat", storage_path=str(tmp_path), verbose=0))
    (result,) = tuner.fit()
    assert result.error is None, f"tune.get_context().get_storage() failed in a trial: {result.error}"
    assert result.metrics["experiment"] == str(tmp_path / "compat") and result.metrics["local"] == 1.0
    assert result.metrics["trial"].startswith(str(tmp_path / "compat") + "/")
    assert result.metrics["working"]


def test_ray_trial_number_counts_creation_and_survives_restore(ray_session, tmp_path: Path) -> None:
    """A trial's ``experiment_tag`` starts with a number that counts the trials in creation order, for a searcher's
    trials and for plain variants, in the trial and in its results, and a restored experiment keeps it."""
    from ray import tune
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    from sentsweep._compat.ray import trial_number

    seen: dict[str, int | None] = {}

    class Numbers(tune.Callback):
        def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            seen[trial.trial_id] = trial_number(trial)

    def trial(config: dict) -> None:
        tune.report({"x": config["x"]})

    searcher = ConcurrencyLimiter(OptunaSearch(metric="x", mode="max", seed=0), max_concurrent=1)
    tuner = tune.Tuner(trial, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(num_samples=3, search_alg=searcher),
                       run_config=tune.RunConfig(name="numbers", storage_path=str(tmp_path), verbose=0,
                                                 callbacks=[Numbers()]))
    results = tuner.fit()
    numbers = sorted(trial_number(r.metrics) for r in results)
    assert numbers == [1, 2, 3], f"experiment_tag no longer starts with the trial's number: {numbers}"
    assert list(seen.values()) == [1, 2, 3]  # in the order the trials started
    restored = tune.Tuner.restore(str(tmp_path / "numbers"), trainable=trial).get_results()
    by_id = {r.metrics["trial_id"]: trial_number(r.metrics) for r in restored}
    assert by_id == seen
    variants = tune.Tuner(trial, param_space={"x": tune.grid_search([0.1, 0.2])},
                          run_config=tune.RunConfig(name="variants", storage_path=str(tmp_path), verbose=0)).fit()
    assert sorted(trial_number(r.metrics) for r in variants) == [0, 1]
    assert trial_number({}) is None and trial_number({"experiment_tag": "x_1"}) is None


# -- MLflow ------------------------------------------------------------------------------------------------------
def test_mlflow_request_once_asks_once_and_returns_any_status() -> None:
    """A store that answers 503 (a status MLflow's client retries) is asked exactly once, and the 503 comes back."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from sentsweep._compat.mlflow import request_once

    _require("mlflow.utils.rest_utils", "http_request")
    _require("mlflow.utils.credentials", "get_default_host_creds")
    asked: list[str] = []

    class Unavailable(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's API
            asked.append(self.path)
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        response = request_once(f"http://127.0.0.1:{server.server_address[1]}", "/api/2.0/mlflow/experiments/search",
                                {"max_results": 1}, 5.0)
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == 503
    assert asked == ["/api/2.0/mlflow/experiments/search?max_results=1"], "MLflow's http_request retried"


def test_mlflow_dataset_context_tag() -> None:
    from sentsweep._compat.mlflow import dataset_context_tag

    assert _require("mlflow.utils.mlflow_tags", "MLFLOW_DATASET_CONTEXT") == dataset_context_tag()
    assert dataset_context_tag() == "mlflow.data.context", "MLflow renamed the dataset context tag"


# -- the rest of the package -------------------------------------------------------------------------------------
#: What names a private part of Ray, MLflow or Optuna in source code.
PRIVATE = re.compile(r"ray\._private|ray\._raylet|ray\.[a-z_.]*\._internal|internal_kv|_local_tuner"
                     r"|mlflow\.[a-z_.]*\._|from mlflow[a-z_.]* import _|_to_mlflow_entity"
                     r"|mlflow\.system_metrics\.metrics|mlflow\.utils"
                     r"|optuna(?:\.[a-z]\w*)*\._|from optuna[a-z_.]* import _")


def test_no_private_ray_mlflow_or_optuna_name_outside_compat() -> None:
    root = Path(sentsweep.__file__).resolve().parent
    found = [f"{path.relative_to(root.parent)}:{number}: {line.strip()}"
             for path in sorted(root.rglob("*.py")) if not path.is_relative_to(root / "_compat")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if PRIVATE.search(line)]
    assert found == [], "private names of Ray, MLflow or Optuna outside sentsweep/_compat:\n" + "\n".join(found)
