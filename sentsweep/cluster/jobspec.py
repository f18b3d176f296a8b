"""The Ray job that runs a sweep or resumes one: its entrypoint (an ordinary ``sentsweep`` command), runtime
environment, where its driver may run (a custom resource only workers offer keeps it off the head), metadata, and
a summary safe to print."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sentsweep.cluster.credentials import masked, refuse_credentials
from sentsweep.cluster.prepare import (
    PreparedConfig,
    StagedDir,
    is_relative_path,
    pinned_requirements,
    stage_working_dir,
)
from sentsweep.credentials import mask_uri
from sentsweep.errors import ConfigError
from sentsweep.platform.config import is_server_uri

Ship = Literal["project", "installed"]

#: ``--driver-resources`` without a value: the custom resource that only the ``cpu`` worker group of
#: ``k8s/base/raycluster.yaml`` offers (``rayStartParams.resources``). A cluster that offers it nowhere (a plain
#: ``ray start --head``) never starts such a job, hence no default.
DRIVER_RESOURCES: dict[str, float] = {"sweep_driver": 1}
#: The driver's CPUs when ``--driver-resources`` is given without ``--entrypoint-num-cpus``.
DRIVER_NUM_CPUS = 1.0


def parse_driver_resources(text: str) -> dict[str, float]:
    """``--driver-resources '{"NAME": AMOUNT, ...}'``: positive amounts of custom resources."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON ({exc.msg}): give an object such as '{json.dumps(DRIVER_RESOURCES)}'",
                          field="--driver-resources") from None
    if not isinstance(value, dict) or not value:
        raise ConfigError("give a JSON object of resource names and amounts", field="--driver-resources")
    for name, amount in value.items():
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
            raise ConfigError(f"resource '{name}' needs a positive amount, not {amount!r}", field="--driver-resources")
        if name in ("CPU", "GPU", "memory"):
            raise ConfigError(f"'{name}' is not a custom resource: use --entrypoint-num-cpus/--entrypoint-num-gpus",
                              field="--driver-resources")
    return {str(name): float(amount) for name, amount in value.items()}


@dataclass(frozen=True)
class JobOptions:
    """How a job is packaged and run (the submit command's flags)."""

    ship: Ship = "project"
    installer: Literal["pip", "uv"] | None = None
    python: str = "python"
    finalize: bool = True
    verbose: bool = False
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # values are secret
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: Mapping[str, float] | None = None  # custom resources: which nodes may run the driver

    @property
    def driver_line(self) -> str:
        """What the driver asks for and which nodes that admits, for the summary."""
        cpus, gpus, resources = self.entrypoint_num_cpus, self.entrypoint_num_gpus, self.entrypoint_resources
        asks = [f"{cpus:g} CPU" if cpus else "", f"{gpus:g} GPU" if gpus else "",
                json.dumps(dict(resources)) if resources else ""]
        asked = " + ".join(a for a in asks if a) or "nothing"
        if resources:
            return f"{asked}: a node that offers {', '.join(sorted(resources))} (not the head)"
        return f"{asked}: any node, the head included (--driver-resources puts it on a worker)"

    def entrypoint(self, command: str, *args: str) -> str:
        """``python -m sentsweep.cli COMMAND ARGS [--no-finalize] [--verbose]``, shell-quoted (not the ``sentsweep``
        console script, which a working-dir copy does not install)."""
        argv = [self.python, "-m", "sentsweep.cli", command, *args]
        argv += (["--no-finalize"] if not self.finalize else []) + (["--verbose"] if self.verbose else [])
        return shlex.join(argv)

    def placement(self) -> tuple[float | None, float | None, dict[str, float] | None]:
        """``entrypoint_num_cpus``, ``_num_gpus`` and ``_resources`` of ``submit_job``."""
        resources = dict(self.entrypoint_resources) if self.entrypoint_resources else None
        return self.entrypoint_num_cpus, self.entrypoint_num_gpus, resources


@dataclass
class JobSpec:
    """Everything ``submit_job`` gets; :attr:`summary` is safe to print, :attr:`runtime_env` is not."""

    entrypoint: str
    runtime_env: dict[str, Any] = field(repr=False)
    metadata: dict[str, str]
    summary: list[str]
    warnings: list[str]
    staged: StagedDir | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None


def _job(options: JobOptions, staged: StagedDir | None, env_vars: dict[str, str], command: str, args: list[str],
         head: str, details: list[str], metadata: dict[str, str], warnings: list[str]) -> JobSpec:
    """The job that runs ``sentsweep COMMAND ARGS``, with its summary (``head``, then ``details`` among the rest)."""
    import sentsweep

    runtime_env: dict[str, Any] = {"working_dir": str(staged.path)} if staged is not None else {}
    if options.ship == "installed":
        code = "the cluster's installed sentsweep (working_dir: the config only)"
    else:
        assert staged is not None
        code = f"staged project: {len(staged.files)} files, {staged.size / 2**20:.1f} MiB (working_dir)"
    if options.installer:
        packages = pinned_requirements()
        key = "pip_check" if options.installer == "pip" else "uv_check"
        runtime_env[options.installer] = {"packages": packages, key: False}
        code += f"; {options.installer} installs {len(packages)} pinned requirements"
    if env_vars:
        runtime_env["env_vars"] = env_vars
    entrypoint = options.entrypoint(command, *args)
    summary = [head, f"  code:        {code}", f"  entrypoint:  {entrypoint}", *details,
               f"  environment: {masked(env_vars)}", f"  driver:      {options.driver_line}"]
    metadata = {"sentsweep": sentsweep.__version__, **metadata, "ship": options.ship}
    return JobSpec(entrypoint, runtime_env, metadata, summary, warnings, staged, *options.placement())


def build_sweep_job(prepared: PreparedConfig, options: JobOptions, workdir: Path) -> JobSpec:
    """The job that runs ``prepared`` (staging its working dir, if any, in ``workdir``)."""
    config = prepared.config
    env_vars = dict(options.env)  # what --forward-env and --env name; prepare_config refused URI credentials
    if is_server_uri(config.tracking.uri):
        env_vars.setdefault("MLFLOW_TRACKING_URI", config.tracking.uri)
    staged = stage_working_dir(workdir, config=prepared, include_code=options.ship == "project")
    assert staged.config_path is not None
    storage = config.storage_path + (f" (endpoint {config.storage_endpoint_url})"
                                     if config.storage_endpoint_url else "")
    return _job(options, staged, env_vars, "sweep", [staged.config_path],
                f"sweep {config.name}: {config.num_samples} trials of {config.method} from {prepared.source}",
                [f"  storage:     {storage}",
                 f"  tracking:    {mask_uri(config.tracking.uri)} (experiment {config.tracking.experiment})"],
                {"kind": "sweep", "sweep": config.name, "config": prepared.filename, "method": config.method},
                list(prepared.warnings))


def build_resume_job(sweep_dir: str, options: JobOptions, workdir: Path, *,
                     storage_endpoint_url: str | None = None, tracking_uri: str | None = None) -> JobSpec:
    """The job that continues the sweep in ``sweep_dir`` (a folder every node reaches, e.g. on S3), tracked at
    ``tracking_uri`` (the job's ``$MLFLOW_TRACKING_URI``; else the cluster's). Credentials in any of them are refused:
    they would be in the entrypoint."""
    refuse_credentials(sweep_dir, "storage", "--resume")
    refuse_credentials(storage_endpoint_url, "storage", "--storage-endpoint-url")
    if is_relative_path(sweep_dir):
        raise ConfigError("give the sweep folder as an s3:// URI or an absolute path on a shared volume",
                          field="--resume")
    refuse_credentials(tracking_uri, "tracking", "--tracking-uri")
    args = [sweep_dir] + (["--storage-endpoint-url", storage_endpoint_url] if storage_endpoint_url else [])
    env_vars = dict(options.env)
    if tracking_uri:
        env_vars["MLFLOW_TRACKING_URI"] = tracking_uri
    staged = stage_working_dir(workdir, include_code=True) if options.ship == "project" else None
    return _job(options, staged, env_vars, "resume", args, f"resume {sweep_dir}", [],
                {"kind": "resume", "sweep": sweep_dir.rstrip("/").rsplit("/")[-1]}, [])
