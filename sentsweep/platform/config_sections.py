"""The sweep config's nested sections, each a typed part of :class:`~sentsweep.platform.config.SweepConfig`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_TRACKING_URI = "sqlite:///mlruns.db"
DEFAULT_ARTIFACTS = "./mlartifacts"


class ConfigSection(BaseModel):
    """A part of the sweep config: unknown fields are errors, and so are infinite numbers and NaN."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)


class SchedulerConfig(ConfigSection):
    """Early stopping: ASHA on ``training_iteration`` (one per dev evaluation) or none (fifo)."""

    type: Literal["asha", "fifo"] = Field("asha", description="asha stops weak trials at their dev evaluations; fifo "
                                                               "runs every trial to its end")
    #: 2, not 1: in the recorded CoSENT tables (docs/benchmarks.md) the best configurations are behind at their first
    #: dev evaluation and ahead from their second; TPE + ASHA found them in 1 of 30 replays at grace 1, 11 at grace 2.
    grace_period: int = Field(2, ge=1, description="dev evaluations a trial gets before ASHA may stop it")
    reduction_factor: float = Field(2.0, gt=1, description="ASHA keeps the best 1/factor of the trials at each rung")
    max_t: int = Field(10_000, ge=1, description="places the rungs (grace * factor^k below max_t); "
                       "trials still end at their own step budget")
    brackets: int = Field(1, ge=1, description="ASHA brackets (1: one rung ladder)")


class ResourcesConfig(ConfigSection):
    """Per-trial resources; fractions share a device (``gpu: 0.25`` puts four trials on one GPU)."""

    cpu: float = Field(1.0, gt=0, description="CPUs per trial (fractions share a core)")
    gpu: float = Field(0.0, ge=0, description="GPUs per trial (0.25 puts four trials on one GPU)")


class TrackingConfig(ConfigSection):
    """Where the sweep's MLflow runs go (an embedded sqlite store by default, or a server URL)."""

    uri: str = Field(DEFAULT_TRACKING_URI, description="the MLflow store: sqlite:///FILE, a folder, or an http(s) "
                                                        "server (its login: $MLFLOW_TRACKING_USERNAME and "
                                                        "$MLFLOW_TRACKING_PASSWORD)")
    artifact_location: str | None = Field(DEFAULT_ARTIFACTS, description="where a new experiment keeps artifacts "
        "(null: the server's choice)")
    experiment: str = Field("sentsweep", description="the MLflow experiment the sweep's runs go to")
    system_metrics: bool = Field(False, description="system metrics (CPU, memory; GPU memory with CUDA) "
                                 "sampled in every trial and logged on its run")
    system_metrics_interval_s: float = Field(10.0, gt=0, description="seconds between system-metric samples")


class CheckpointSettings(ConfigSection):
    """Checkpoint retention (the cadence is the trial setting ``checkpoint_every``). While a trial runs, Tune keeps
    its ``num_to_keep`` most recent checkpoints (the previous one is the fallback when the latest is corrupt) and its
    ``best/`` weights; ``trim_ended_after_s`` after a trial ended it keeps its ``best/`` weights alone; after the
    sweep, only the ``keep_trials`` best trials keep their ``best/`` weights. ``keep_trials: null`` keeps every
    checkpoint of every trial."""

    num_to_keep: int = Field(2, ge=1, description="checkpoints per running trial (1: no corrupt-checkpoint fallback)")
    keep_trials: int | None = Field(1, ge=0, description="trials whose best weights stay after the sweep "
                                    "(null: keep every checkpoint)")
    trim_ended_after_s: float | None = Field(120.0, ge=0, description="seconds after a trial ended (finished, or "
                                             "stopped by the scheduler) before its checkpoints go and its best "
                                             "weights alone stay (null: kept until the sweep ends)")


class ConfirmConfig(ConfigSection):
    """The confirmation stage after the search: the ``top_k`` best configurations re-run with ``seeds`` further
    seeds; the winner is chosen by ``rule`` over those further seeds (the search's own run is reported apart)."""

    top_k: int = Field(3, ge=0, description="configurations to confirm (0: no confirmation stage)")
    seeds: int = Field(3, ge=1, description="further seeds per configuration (the figures and the rule rest on these; "
        "the search's own run is reported apart); 1 gives no interval, so lower_bound then ranks by the mean")
    rule: Literal["mean", "lower_bound"] = Field(
        "lower_bound", description="the winner: best mean, or best pessimistic end of the 95% interval")


class ReferenceConfig(ConfigSection):
    """The paper's setting as a reference trial: the space's first point runs as a trial that no scheduler stops,
    tagged ``sentsweep.reference`` in MLflow, and the final summary puts the paper's figures, that trial's and the
    tuned winner's side by side. ``reference: paper`` is short for ``reference: {setting: paper}``."""

    setting: Literal["paper"] = "paper"
    source: str = Field("", description="where the paper's figures come from (paper, table, row)")
    figures: dict[str, float] = Field(default_factory=dict, description="the paper's test figures, by this "
                                      "project's metric names (sts_avg7, stsb_test, mr_acc, ...)")
    selection: str = Field("", description="what the paper selected its checkpoint on, shown beside this sweep's "
                           "dev metric")

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, data: Any) -> Any:
        return {"setting": data} if isinstance(data, str) else data


class BudgetConfig(ConfigSection):
    """A sweep's compute budget, counted across resumes, never downtime."""

    gpu_hours: float | None = Field(None, gt=0, description="trial compute to spend: GPU-hours, or wall hours for "
                                                             "CPU-only trials (null: no limit)")
    wall_hours: float | None = Field(None, gt=0, description="the driver's hours to spend, across resumes (null: no "
                                                              "limit)")


class ConvergenceConfig(ConfigSection):
    """When ``stop_when: converged`` ends the search: once the improvement of the ``evaluator`` is below the
    seed-to-seed noise sd, after at least ``min_trials`` trials. The noise is ``noise_sd``, or measured by re-running
    the first point with ``noise_seeds`` further seeds."""

    noise_sd: float | None = Field(None, gt=0, description="the metric's seed-to-seed standard deviation (null: "
                                   "measured in the sweep from the first point's replicas)")
    noise_seeds: int = Field(2, ge=1, le=5, description="further seeds the first point runs with to measure "
                             "the noise (when noise_sd is null); they count among num_samples, ASHA never "
                             "stops them, and TPE's start-up grows by as many")
    #: 20, Optuna's own ``Terminator`` minimum: on the CoSENT table 10 let the regret bound end TPE sweeps on the
    #: plateau around the paper's defaults; 20 kept the fixed budget's share (docs/benchmarks-search.md).
    min_trials: int = Field(20, ge=2, description="search trials before the check starts, never counting the noise "
                            "replicas: finished ones, or for stagnation ended ones with a value (finished or pruned)")
    #: The regret bound by default: EMMR ends sweeps earlier, but fewer end within one noise sd of the best
    #: (docs/benchmarks-search.md).
    evaluator: Literal["regret_bound", "emmr", "stagnation"] = Field("regret_bound", description="the improvement "
        "compared with the noise: Optuna's regret bound; emmr (expected minimum model regret: stops earlier, at some "
        "cost in the best found); or stagnation (how much the best rose over the last `patience` ended trials)")
    #: 20, about two thirds of the multi-view table's 32 settings: at twice its size it saved 42% and kept 93-98%
    #: of the sweeps within the noise of the best (docs/benchmarks-search.md).
    patience: int = Field(20, ge=1, description="stagnation only: the search ends once its last `patience` ended "
                          "trials raised the best by less than the noise sd (so after at least patience + 1); about "
                          "two thirds of the settings the space holds")


class NotifyConfig(ConfigSection):
    """Webhook notifications: a JSON POST, Slack-compatible, on each event of ``on`` (``end``: the sweep finished;
    ``failure``: it failed or crashed; ``budget``: its budget was spent; ``interrupted``: SIGINT/SIGTERM stopped it).
    The URL is a secret (a Slack webhook's path is its key), so the config names the environment variable that holds
    it; the URL itself is written nowhere."""

    webhook_env: str | None = Field(None, description="the environment variable holding the webhook URL "
                                    "(null: no notifications)")
    on: list[Literal["end", "failure", "budget", "interrupted"]] = Field(
        default_factory=lambda: ["end", "failure", "budget"],
        description="the events that send a notification: end, failure, budget, interrupted")
    timeout_s: float = Field(5.0, gt=0, description="seconds per attempt")
    retries: int = Field(2, ge=0, description="further attempts after a connection error, a timeout, HTTP 429 or 5xx")

    @property
    def secret_env(self) -> tuple[str, ...]:
        """The variables holding a secret of the notifications: the driver's alone, never a worker's."""
        return (self.webhook_env,) if self.webhook_env else ()

    @model_validator(mode="before")
    @classmethod
    def _refuse_url(cls, data: Any) -> Any:
        if isinstance(data, dict) and "webhook" in data:
            raise ValueError("a webhook URL is a secret and is not written in the config: put it in an environment "
                             "variable and name that with notify.webhook_env")
        if isinstance(data, dict) and any(key is True for key in data):  # YAML 1.1 reads an unquoted `on:` as true
            data = {"on" if key is True else key: value for key, value in data.items()}
        return data

    @field_validator("webhook_env")
    @classmethod
    def _check_env_name(cls, value: str | None) -> str | None:
        # the message never repeats the value: it may be the URL
        if value is not None and not (value.isascii() and value.isidentifier()):
            raise ValueError("name an environment variable (letters, digits, '_'), e.g. SENTSWEEP_WEBHOOK_URL; "
                             "the URL goes in that variable")
        return value
