"""The sweep config: a typed, validated YAML file (see ``configs/demo.yaml``); every error names the field and the file.
:meth:`SweepConfig.resolved` makes paths absolute and moves credentials off the URIs into the environment."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from sentsweep.credentials import CredentialSplit, UriKind, mask_uri
from sentsweep.errors import ConfigError, config_error
from sentsweep.evaluation.metric_names import STSB_DEV
from sentsweep.platform.config_sections import (
    DEFAULT_ARTIFACTS,
    BudgetConfig,
    CheckpointSettings,
    ConfigSection,
    ConfirmConfig,
    ConvergenceConfig,
    NotifyConfig,
    ReferenceConfig,
    ResourcesConfig,
    SchedulerConfig,
    TrackingConfig,
)
from sentsweep.yaml_io import read_yaml

if TYPE_CHECKING:
    from sentsweep.platform.objectives import Objective

#: A sweep's name (and a sweep folder's): one folder name, never a path.
SWEEP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")

#: The URI fields that may carry credentials, with the kind of each: :meth:`SweepConfig.resolved` takes them off.
CREDENTIAL_FIELDS: tuple[tuple[str, UriKind], ...] = (
    ("tracking.uri", "tracking"), ("tracking.artifact_location", "storage"), ("storage_path", "storage"),
    ("storage_endpoint_url", "storage"), ("warm_start", "storage"))


class SweepConfig(ConfigSection):
    """One sweep: which method and space, how many trials, how to stop them, where results go."""

    name: str = Field(description="the sweep's name: its folder (with a short suffix) and its MLflow parent run")
    method: str = Field(description="the training method: cosent, sncse or multiview (see Method configs)")
    search_space: str | dict[str, Any] | None = Field(
        None, description="a shipped space's name, or a mapping of the method's config fields to distributions "
        "(see 'Search spaces' below); default: the space named after the method")
    fixed: dict[str, Any] = Field(default_factory=dict, description="trial settings set in every trial")
    num_samples: int = Field(8, ge=1, description="trials the search runs (the first points included)")
    max_concurrent_trials: int | None = Field(None, ge=1, description="trials running at once (null: as many as the "
        "resources allow)")
    time_budget_s: float | None = Field(None, gt=0, description="seconds after which Tune starts no new trial and "
                                                                 "stops the running ones (null: none)")
    stop_grace_s: float = Field(20.0, ge=0, description="on SIGINT/SIGTERM, how long running trials get to "
                                "checkpoint where they are before Tune stops (0: not at all); below Kubernetes' "
                                "default terminationGracePeriodSeconds (30)")
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    metric: str = Field(STSB_DEV, description="the dev metric trials are ranked by (default: the metric of "
                                               "fixed.dev_data)")
    mode: Literal["max", "min"] = Field("max", description="max or min: whether a higher metric is better")
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    storage_path: str = Field("./ray_results", description="where sweep folders go: a local folder, or s3:// for a "
                                                            "cluster")
    storage_endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO) for s3://")
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    seed: int = Field(0, description="seeds the sampler (TPE) and, unless fixed.seed is set, every trial")
    startup_trials: int | None = Field(None, ge=1, description="random trials before TPE (Optuna: 10)")
    tpe_gamma: Literal["hyperopt", "optuna"] = Field(
        "hyperopt", description="how many of n finished trials TPE's 'good' density is built from: hyperopt "
        "ceil(0.25 sqrt(n)) (Bergstra et al.), optuna ceil(0.1 n); at most 25 (platform/search/samplers.py, "
        "build_sampler); one objective only: a multi-objective study keeps Optuna's split")
    searcher: Literal["tpe", "gp", "random", "grid"] = Field("tpe", description="Optuna's sampler: tpe (multivariate, "
        "constant liar), gp (Gaussian process), random, or grid (categorical choices x grid_points values per range)")
    grid_points: int = Field(3, ge=2, description="searcher grid: values per numeric range, ends included")
    stop_when: Literal["num_samples", "converged"] = Field(
        "num_samples", description="converged: end the search once more trials are unlikely to beat the best by "
        "more than the seed noise (convergence section; one objective); num_samples and budget still bound it")
    convergence: ConvergenceConfig = Field(default_factory=ConvergenceConfig)
    data_dir: str | None = Field(None, description="the data directory in the SentEval layout (null: $SENTSWEEP_DATA, "
                                                    "else the bundled sample)")
    full_data: bool = Field(False, description="refuse the bundled data sample (what data_dir null resolves to "
                            "without $SENTSWEEP_DATA): the paper configs' figures need the full sets")
    model: str | None = Field(None, description="the encoder every trial starts from: an alias (minilm), a local "
                                                 "folder or a hub id (null: the method's)")
    max_failures: int = Field(1, ge=-1, description="retries per trial after a crash; -1: unlimited")
    checkpoint: CheckpointSettings = Field(default_factory=CheckpointSettings)
    confirm: ConfirmConfig = Field(default_factory=ConfirmConfig)
    reference: ReferenceConfig | None = Field(None, description="the paper's setting as a protected, labelled "
                                              "reference trial ('paper'); null: none")
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    final_tasks: str = Field("sts", description="test suite for the best trial after the sweep")
    export: bool = Field(True, description="export the best model as a sentence-transformers folder after the sweep "
                         "(SNCSE and multi-view models have no such form: their best weights go to the winning "
                         "trial's MLflow run, under best/)")
    plots: bool = Field(True, description="draw the sweep's plots (history, importances, dev curves) after the sweep")
    register_model: str | None = Field(None, description="model-registry name for the best model")
    optuna_storage: str | None = Field(None, exclude=True, description="not a setting: the study lives in the "
                                       "sweep folder (platform/search/study_store.py); refused when set, null ignored")
    warm_start: str | None = Field(None, description="an earlier sweep folder whose finished trials the searcher "
                                   "starts from; it must be the same method, measured the same way (metric, dev set, "
                                   "data)")
    objectives: list[str] | None = Field(None, description="multi-objective: 'METRIC max|min' entries, the first "
                                         "being metric and mode (platform/objectives.py); null: metric alone")
    #: the variables resolved() set, each with the field whose URI carried it
    _credential_env: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _refuse_misplaced_points(cls, data: Any) -> Any:
        """``first_point`` and ``extra_points`` belong to the search space, not beside it."""
        if isinstance(data, dict) and (misplaced := [k for k in ("first_point", "extra_points") if k in data]):
            raise ConfigError(f"belongs inside search_space (search_space: {{base: NAME, {misplaced[0]}: ...}})",
                              field=misplaced[0])
        return data

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not SWEEP_NAME.fullmatch(value):
            raise ValueError("use letters, digits, '.', '_' and '-' (it names a folder and a run)")
        return value

    @field_validator("register_model")
    @classmethod
    def _check_model_name(cls, value: str | None) -> str | None:
        """MLflow's rules for a model's name, checked before the sweep; no quote: the driver's filter quotes it."""
        if value is not None and (not value.strip() or any(c in value for c in "/:'") or value == "."
                                  or value.startswith("..")):
            raise ValueError("a registered model's name must not be blank, hold '/', ':' or a quote, be '.' or "
                             "begin with '..'")
        return value

    @field_validator("final_tasks", mode="before")
    @classmethod
    def _strip_tasks(cls, value: Any) -> Any:
        """Blank (``final_tasks:`` in YAML, ``--set final_tasks=``): no test evaluation after the sweep."""
        return "" if value is None else value.strip() if isinstance(value, str) else value

    @field_validator("storage_path")
    @classmethod
    def _check_storage(cls, value: str) -> str:
        if "://" in value and not value.startswith(("s3://", "file://")):  # where a sweep's lock can live
            raise ValueError(f"'{mask_uri(value)}': use a local folder or an s3:// URI")
        return value

    @field_validator("optuna_storage")
    @classmethod
    def _refuse_optuna_storage(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError("the sweep's Optuna study lives in its folder (optuna_journal.log), which `sentsweep "
                             "dashboard` serves: remove this field")

    @model_validator(mode="after")
    def _check_endpoint(self) -> SweepConfig:
        if self.storage_endpoint_url and not self.storage_path.startswith("s3://"):
            raise ValueError("storage_endpoint_url needs an s3:// storage_path")
        return self

    @model_validator(mode="after")
    def _check_objectives(self) -> SweepConfig:
        """Without ``metric`` and ``objectives``, the sweep ranks by the metric of ``fixed.dev_data``. The first
        objective is ``metric`` and ``mode``, which the config may repeat but not contradict."""
        if self.objectives is None:
            if "metric" not in self.model_fields_set:
                from sentsweep.trainables.trial_config import DEV_SETS

                self.metric = DEV_SETS.get(str(self.fixed.get("dev_data", "")), self.metric)
            return self
        from sentsweep.platform.objectives import check_objectives, extra_dev_sets

        objectives = check_objectives(self.objectives, str(self.fixed.get("dev_data", "stsb")), self.resources.gpu)
        if self.stop_when == "converged" and len(objectives) > 1:
            raise ConfigError("converged compares one metric's improvement with its noise: use one objective, or "
                              "stop_when: num_samples", field="stop_when")
        first = objectives[0]
        for name in ("metric", "mode"):
            if name in self.model_fields_set and getattr(self, name) != getattr(first, name):
                raise ConfigError(f"'{getattr(self, name)}' contradicts the first objective '{first}' (which is the "
                                  f"sweep's {name}): drop {name} or make it agree", field=name)
        self.objectives = [str(o) for o in objectives]  # one spelling: "METRIC mode"
        self.metric, self.mode = first.metric, first.mode
        if extra := extra_dev_sets(objectives):  # the trials score these dev sets too (beside the selection's dev_data)
            given = list(self.fixed.get("extra_dev_data") or [])
            self.fixed = {**self.fixed, "extra_dev_data": list(dict.fromkeys([*given, *extra]))}
        return self

    @property
    def objective_list(self) -> tuple[Objective, ...]:
        """The sweep's objectives; empty for a single-metric sweep."""
        from sentsweep.platform.objectives import parse_objective

        return tuple(parse_objective(e) for e in self.objectives or ())

    @property
    def modes(self) -> list[str]:
        return [o.mode for o in self.objective_list] or [self.mode]

    @property
    def space_name(self) -> str:
        """The space's name: a shipped one's, ``custom`` for one written here (``BASE+custom`` on top of one)."""
        if isinstance(self.search_space, dict):
            base = self.search_space.get("base")
            return f"{base}+custom" if base else "custom"
        return self.search_space or self.method

    @property
    def trials_text(self) -> str:
        """``num_samples`` as the sweep's lines say it: ``up to N`` when ``converged`` may end the search sooner."""
        return f"up to {self.num_samples}" if self.stop_when == "converged" else str(self.num_samples)

    def search_text(self) -> str:
        """How the sweep searches and when it stops, in words: the sampler, the scheduler and ``stop_when``."""
        start = f"after {self.startup_trials} random trials" if self.startup_trials is not None else \
            "after Optuna's random start-up trials"
        sampler = {"tpe": f"TPE {start}", "gp": f"a Gaussian process {start}", "random": "random sampling",
                   "grid": "a grid"}[self.searcher]
        s = self.scheduler
        stopping = (f"ASHA stops weak trials early (grace {s.grace_period}, reduction {s.reduction_factor:g})"
                    if s.type == "asha" else "every trial runs to its end")
        if self.stop_when != "converged":
            return f"{sampler}; {stopping}"
        c = self.convergence
        noise = f"noise sd {c.noise_sd:g}" if c.noise_sd is not None else \
            f"the noise measured from {c.noise_seeds} further seeds of the first point"
        if c.evaluator == "stagnation":
            return (f"{sampler}; {stopping}; the search ends once the best rose by less than {noise} over the last "
                    f"{c.patience} ended trials (at least {c.min_trials} ended)")
        bound = "regret bound" if c.evaluator == "regret_bound" else "expected minimum model regret"
        return (f"{sampler}; {stopping}; the search ends once Optuna's {bound} over at least {c.min_trials} "
                f"finished trials is below {noise}")

    def resolved(self, base: Path | None = None, environ: MutableMapping[str, str] | None = None,
                 source: str | Path | None = None) -> SweepConfig:
        """A copy with relative local paths made absolute against ``base`` (default: the cwd), and the credentials
        of its URIs moved into ``environ`` (default: this process's, which MLflow, pyarrow and a local Ray read); a
        variable already set there to another value is a :class:`ConfigError` (naming ``source``, the config's
        file). Idempotent."""
        split = CredentialSplit()
        self.refuse_stray_credentials(source)
        try:
            clean = {name: split.take(value, kind, name) for name, kind, value in self.credential_uris()}
            split.export(os.environ if environ is None else environ)
        except ConfigError as exc:
            if exc.file is not None or source is None:
                raise
            raise ConfigError(exc.message, field=exc.field, file=source) from None
        base = (base or Path.cwd()).resolve()
        tracking = self.tracking.model_copy(update={"uri": resolve_tracking_uri(clean["tracking.uri"], base),
                                                    "artifact_location": clean["tracking.artifact_location"]})
        update: dict[str, Any] = {name: value for name, value in clean.items() if not name.startswith("tracking.")}
        if not is_shared_folder(self.storage_path):
            update["storage_path"] = str(_absolute(self.storage_path.removeprefix("file://"), base))
        if self.data_dir and "://" not in self.data_dir:
            update["data_dir"] = str(_absolute(self.data_dir, base))
        if self.model and (base / self.model).exists():
            update["model"] = str(_absolute(self.model, base))
        if update["warm_start"] and "://" not in update["warm_start"]:
            update["warm_start"] = str(_absolute(update["warm_start"], base))
        if tracking.artifact_location and "://" not in tracking.artifact_location:
            tracking.artifact_location = _absolute(tracking.artifact_location, base).as_uri()
        if is_server_uri(tracking.uri) and self.tracking.artifact_location == DEFAULT_ARTIFACTS:
            tracking.artifact_location = None  # a server decides where artifacts go
        update["tracking"] = tracking
        resolved = self.model_copy(update=update)
        resolved._credential_env = {**self._credential_env, **{name: str(split.fields[name]) for name in split.values}}
        return resolved

    def refuse_stray_credentials(self, source: str | Path | None = None) -> None:
        """A :class:`ConfigError` naming the field (never the value) and ``source`` when a string outside
        :data:`CREDENTIAL_FIELDS` carries a login in a URI's user-info (it would reach every trial's params)."""
        split = {name for name, _ in CREDENTIAL_FIELDS}
        for field, value in _strings(self.model_dump(mode="json")):
            if field not in split and mask_uri(value) != value:
                raise ConfigError("carries a login in a URI's user-info, which would be copied into every "
                                  "trial's params and MLflow: give the credentials in the environment (e.g. "
                                  "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and a URI without them", field=field,
                                  file=source)

    def credential_uris(self) -> list[tuple[str, UriKind, str | None]]:
        return [(name, kind, functools.reduce(getattr, name.split("."), self)) for name, kind in CREDENTIAL_FIELDS]

    def worker_credentials(self, ray_address: str | None, forward: bool = False) -> dict[str, str]:
        """The variables :meth:`resolved` took off the URIs (not the tracking server's) for a joined cluster's workers;
        only with ``forward``, since Ray's Jobs API shows a job's ``runtime_env`` to whoever reaches the dashboard."""
        if not joins_ray_cluster(ray_address):
            return {}
        sent = {name: os.environ[name] for name, field in self._credential_env.items()
                if os.environ.get(name) and not field.startswith("tracking.")}  # MLflow is the driver's alone
        if sent and not forward:
            raise ConfigError(
                f"the credentials taken off the config's URIs ({', '.join(sorted(sent))}) would reach the "
                "cluster's workers in the job's runtime_env, which Ray's Jobs API shows to anyone who can reach "
                "the cluster's dashboard: give the cluster's nodes their own (a Kubernetes Secret, or the "
                "environment of `ray start`) and drop them from the URIs, or pass --forward-credentials",
                field=", ".join(sorted({self._credential_env[name] for name in sent})))
        return sent

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def _strings(value: Any, field: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(field, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items()
                for found in _strings(item, f"{field}.{key}" if field else str(key))]
    if isinstance(value, list | tuple):
        return [found for i, item in enumerate(value) for found in _strings(item, f"{field}[{i}]")]
    return []


def _absolute(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base / p).resolve()


def resolve_sweep_folder(sweep_dir: str, endpoint_url: str | None = None,
                         environ: MutableMapping[str, str] | None = None) -> tuple[str, str | None]:
    """A sweep folder and its endpoint as ``resume`` is given them, their credentials moved into ``environ``."""
    split = CredentialSplit()
    clean = split.take(sweep_dir, "storage", "SWEEP_DIR"), split.take(endpoint_url, "storage", "--storage-endpoint-url")
    split.export(os.environ if environ is None else environ)
    return clean[0] or sweep_dir, clean[1]


def joins_ray_cluster(address: str | None) -> bool:
    """Whether ``ray.init(address)`` joins a running cluster (an address, or ``RAY_ADDRESS``)."""
    return address not in (None, "", "local") or bool(os.environ.get("RAY_ADDRESS"))


def is_shared_folder(uri: str) -> bool:
    """Whether a sweep folder lies in storage others may write: an object store's URI, not a local path."""
    return "://" in uri and not uri.startswith("file://")


def is_server_uri(uri: str) -> bool:
    return uri.startswith(("http://", "https://", "databricks"))


def resolve_tracking_uri(uri: str, base: Path | None = None) -> str:
    """``sqlite:///rel.db`` and plain folders made absolute (Ray trials run in their own folders)."""
    base = (base or Path.cwd()).resolve()
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + str(_absolute(uri.removeprefix("sqlite:///"), base))
    if "://" not in uri and not uri.startswith("databricks"):
        return _absolute(uri, base).as_uri()
    return uri


def parse_sweep_config(raw: Any, source: str | Path = "sweep config") -> SweepConfig:
    """Validate a mapping into a :class:`SweepConfig`; the error names the field and ``source``."""
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping of settings, got {type(raw).__name__}", file=source)
    try:
        return SweepConfig.model_validate(raw)
    except ValidationError as exc:
        raise config_error(exc, source, model=SweepConfig) from None


def load_sweep_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep YAML; errors name the file, the field or the YAML line."""
    return parse_sweep_config(read_yaml(path), path)
