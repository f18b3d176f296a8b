"""The sweep's parent run (:class:`SweepRun`) and the markdown MLflow shows on its and its experiment's page. It is
a :class:`~.run_writes.RunWrites`, writing in the background: a sweep never waits because MLflow is down."""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import locate
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.platform.tracking.run_writes import RunWrites
from sentsweep.platform.tracking.store import prepare_store
from sentsweep.platform.tracking.trial_runs import create_unique_run, wall_ms
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import SYS_PREFIX, ui_link

VERSIONED_PACKAGES = ("sentsweep", "torch", "transformers", "sentence-transformers", "ray", "optuna",
                      "mlflow", "numpy", "pydantic")


def package_versions(names: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that decide a result."""
    versions = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def run_page(sweep: SweepRun) -> str:
    """``" at <address>"``: the run's page when MLflow is a server (the sweep does not know ``mlflow ui``'s)."""
    served = sweep.tracking_uri.startswith(("http://", "https://"))
    return f" at {ui_link(sweep.tracking_uri, sweep.experiment_id, sweep.run_id)}" if served else ""


def columns_to_add(metric: str, searched: Sequence[str]) -> str:
    params = ", ".join(f"`{p}`" for p in searched) or "the searched ones"
    return (f"Columns to add (**Columns** above the table): Metrics `{metric}` and `best_{metric}`; Params {params}; "
            f"Tags `{vocab.OUTCOME_TAG}`.")


def sweep_description(config: SweepConfig, sweep_name: str, searched: Sequence[str], tracking_uri: str,
                      experiment_id: str) -> str:
    space = config.space_name if isinstance(config.space_name, str) else "the space in its config"
    searched_text = ", ".join(f"`{p}`" for p in searched) or "no parameter"
    return "\n".join([
        f"**{sweep_name}**: {config.trials_text} trials of "
        f"`{config.method}` over the space `{space}`, searching {searched_text} for the "
        f"{'highest' if config.mode == 'max' else 'lowest'} dev `{config.metric}`; {config.search_text()}.",
        "",
        "- Expand this run's row for its trials. Each is named after its number and searched values "
        "(`t03 scale=22.4 lr=3.5e-05`); the number is the one `sentsweep compare` and the plots use.",
        f"- Tag `{vocab.OUTCOME_TAG}` says how a trial ended: finished, pruned (stopped early by the scheduler; its "
        "run is FINISHED, its figures are those of the steps it ran), stopped (by the budget), failed or interrupted.",
        f"- {columns_to_add(config.metric, searched)}",
        f"- Bookkeeping (step, epoch, seconds, GPUs, the final flag) is under `{SYS_PREFIX}`, on a trial's "
        "**System metrics** tab; its **Model metrics** tab holds the figures.",
        f"- [The experiment's runs]({ui_link(tracking_uri, experiment_id)}) on MLflow's model-training view.",
    ])


def experiment_description(config: SweepConfig, sweep_name: str, searched: Sequence[str]) -> str:
    return "\n".join([
        "Sweeps of `sentsweep`: each sweep is a run (tag `sentsweep.role` = sweep) whose child runs are its trials "
        "and, when it confirms its best, a confirmation run.",
        "",
        "Use the **Model training** view (top left) to see the runs.",
        f"{columns_to_add(config.metric, searched)}",
        "",
        f"Latest sweep: `{sweep_name}`, `{config.method}` searching {', '.join(searched) or 'no parameter'} for "
        f"dev `{config.metric}`.",
    ])


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """The id of experiment ``name`` (made with ``artifact_location`` if missing), of model-training kind unless set."""
    if (found := client.get_experiment_by_name(name)) is not None:
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        if vocab.EXPERIMENT_KIND_TAG not in found.tags:
            client.set_experiment_tag(found.experiment_id, vocab.EXPERIMENT_KIND_TAG, vocab.TRAINING_KIND)
        return found.experiment_id
    try:
        return client.create_experiment(name, artifact_location=artifact_location,
                                        tags={vocab.EXPERIMENT_KIND_TAG: vocab.TRAINING_KIND})
    except MlflowException:  # created meanwhile by another sweep
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


@dataclass
class SweepRun(RunWrites):
    """The parent run of a sweep (or of its confirmation stage). Only :meth:`open` needs MLflow; what MLflow has
    not taken at :meth:`flush` is saved in the folder ``fs``, ``path`` for a resume or ``sentsweep sync``."""

    client: MlflowClient
    tracking_uri: str
    experiment_id: str
    run_id: str
    sweep_name: str
    fs: pyarrow.fs.FileSystem
    path: str
    #: the confirmation stage's run, scheduled as the sweep began
    stage_run_id: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.client, self.experiment_id, self.fs, self.path)

    @classmethod
    def open(cls, config: SweepConfig, sweep_name: str, sweep_dir: str, define_by_run: Any,
             first_point: dict[str, Any] | None) -> SweepRun:
        """Create the run: config and package versions as params, source tags, the space, the descriptions."""
        prepare_store(config.tracking.uri)
        client = MlflowClient(tracking_uri=config.tracking.uri)
        experiment_id = ensure_experiment(client, config.tracking.experiment, config.tracking.artifact_location)
        searched = sorted(first_point or {})
        client.set_experiment_tag(experiment_id, vocab.NOTE_TAG, experiment_description(config, sweep_name, searched))
        key = {vocab.ROLE_TAG: "sweep", vocab.SWEEP_TAG: sweep_name}
        tags = {**key, vocab.SWEEP_DIR_TAG: sweep_dir, vocab.METHOD_TAG: config.method, vocab.STATUS_TAG: "running",
                vocab.SPACE_TAG: str(config.space_name), **vocab.source_tags("sentsweep sweep"),
                vocab.NOTE_TAG: sweep_description(config, sweep_name, searched, config.tracking.uri, experiment_id)}
        run = create_unique_run(client, experiment_id, tags, sweep_name, key)
        fs, path = locate(sweep_dir, config.storage_endpoint_url).resolve()
        sweep = cls(client, config.tracking.uri, experiment_id, run.info.run_id, sweep_name, fs, path)
        params = {**flatten(config.model_dump(mode="json")),
                  **{f"version.{k}": v for k, v in package_versions().items()}}
        vocab.log_missing_params(client, sweep.run_id, params)
        files = {"sweep.yaml": config.to_yaml(),
                 "first_point.json": json.dumps(first_point or {}, indent=2, default=str)}
        if hasattr(define_by_run, "describe"):  # a YAML space (sentsweep.search_spaces.YamlSpace)
            files["search_space.txt"] = "\n".join(define_by_run.describe()) + "\n"
        else:
            with contextlib.suppress(OSError, TypeError):  # no source for a lambda typed at a prompt
                files["search_space.py"] = inspect.getsource(define_by_run)
        for name, text in files.items():
            client.log_text(sweep.run_id, text, f"sweep/{name}")
        return sweep

    @classmethod
    def attach(cls, tracking_uri: str, experiment_id: str, run_id: str, sweep_name: str, fs: pyarrow.fs.FileSystem,
               path: str, *, runs: Collection[str] = (), register: str | None = None) -> SweepRun:
        """An existing run, its status unchanged, with the writes an earlier session saved queued first."""
        sweep = cls(MlflowClient(tracking_uri=tracking_uri), tracking_uri, experiment_id, run_id, sweep_name, fs, path)
        sweep.load({run_id, *runs}, register)
        return sweep

    def reopen(self) -> None:
        self.put({"op": "running", "run": self.run_id, "reason": "resumed"})
        self.set_tags({vocab.STATUS_TAG: "running"})

    def trial_settings(self) -> dict[str, Any]:
        return {"tracking_uri": self.tracking_uri, "experiment_id": self.experiment_id,
                "parent_run_id": self.run_id, "sweep_name": self.sweep_name}

    def set_tags(self, tags: dict[str, str]) -> None:
        self.put({"op": "tags", "run": self.run_id, "tags": tags})

    def log_params(self, params: dict[str, Any]) -> None:
        """Params the run lacks (MLflow never changes one)."""
        self.put({"op": "params", "run": self.run_id, "params": params})

    def log_metrics(self, metrics: dict[str, float]) -> None:
        stamp = wall_ms()
        self.put({"op": "metrics", "run": self.run_id, "points": [[k, float(v), 0, stamp] for k, v in metrics.items()]})

    def log_protocols(self, record: dict[str, Any]) -> None:
        if record:
            self.put({"op": "protocols", "run": self.run_id, "record": record})

    def log_artifacts(self, local_dir: str | Path, artifact_path: str, *, move: bool = False) -> None:
        """Upload a folder, kept in the sweep folder first (moved when ``move``)."""
        self.upload({"run": self.run_id}, local_dir, artifact_path, move=move)

    def register_model(self, name: str, artifact_path: str, description: str | None = None,
                       tags: dict[str, str] | None = None) -> str | None:
        """Register the model as a version of ``name``; None when MLflow did not answer within 15 s."""
        self.put({"op": "register", "run": self.run_id, "name": name, "path": artifact_path,
                  "description": description, "tags": tags or {}})
        self.flush(15.0)
        return self.registered.get(name)

    def tag_trial(self, trial_id: str, tags: dict[str, str], parent_run_id: str | None = None) -> None:
        self.put({"op": "tags", "parent": parent_run_id or self.run_id, "trial": trial_id, "tags": tags})

    def upload_to_trial(self, trial_id: str, local_dir: str | Path, artifact_path: str,
                        parent_run_id: str | None = None) -> None:
        self.upload({"parent": parent_run_id or self.run_id, "trial": trial_id}, local_dir, artifact_path,
                    kept_as=f"trials/{trial_id}/{artifact_path}")

    def close(self, state: vocab.SweepState, reason: str | None = None) -> None:
        self.set_tags({vocab.STATUS_TAG: state})
        self.put({"op": "status", "run": self.run_id, "status": vocab.RUN_STATUS[state],
                  "reason": reason[:5000] if reason else None, "clear_reason": not reason})  # not "resumed"

    def previous_max(self, key: str) -> float:
        """The largest value of metric ``key`` earlier sessions logged (0 when MLflow does not answer)."""
        with contextlib.suppress(Exception):  # best-effort: tracking may be down
            if store_answers(self.tracking_uri):
                return max((m.value for m in self.client.get_metric_history(self.run_id, key)), default=0.0)
        return 0.0
