"""A submitted job: the sweep config it ships (options baked in, validated here), the folder Ray uploads as its
``working_dir``, its entrypoint (an ordinary ``sentsweep`` command), runtime environment, where its driver may run
(a custom resource only workers offer keeps it off the head), metadata, and a summary safe to print."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path
from typing import Any, Literal

import yaml

import sentsweep
from sentsweep.cluster.credentials import masked, refuse_credentials
from sentsweep.credentials import mask_uri
from sentsweep.errors import ConfigError
from sentsweep.platform.config import DEFAULT_ARTIFACTS, SweepConfig, is_server_uri, parse_sweep_config
from sentsweep.yaml_io import apply_overrides, read_yaml


@dataclass
class PreparedConfig:
    """A sweep config as it will be shipped: validated, with the submit options baked in."""

    config: SweepConfig
    text: str  # the YAML the job runs
    source: str  # the local file it came from
    filename: str  # its name in the job (configs/<filename>)
    warnings: list[str] = field(default_factory=list)


def prepare_config(path: str | Path, overrides: Sequence[str] = (), *, storage: str | None = None,
                   storage_endpoint_url: str | None = None, tracking_uri: str | None = None,
                   check_trials: bool = True) -> PreparedConfig:
    """Read ``path``, apply ``--set`` overrides and the options, and validate it all here. A credential in a URI is
    refused, naming the field or the option that gave it: every user of the cluster's Jobs API reads the YAML."""
    source = str(path)
    raw = apply_overrides(read_yaml(path), overrides)
    options: dict[str, str] = {}  # the fields an option set, named by the option in an error
    if storage:
        raw["storage_path"], options["storage_path"] = storage, "--storage"
    if storage_endpoint_url is not None:
        raw["storage_endpoint_url"] = storage_endpoint_url or None
        options["storage_endpoint_url"] = "--storage-endpoint-url"
    if tracking_uri:
        tracking = raw.get("tracking")
        raw["tracking"] = {**(tracking if isinstance(tracking, dict) else {}), "uri": tracking_uri}
        options["tracking.uri"] = "--tracking-uri"
    config = parse_sweep_config(raw, source)
    for name, kind, value in config.credential_uris():
        refuse_credentials(value, kind, options.get(name, name), file=None if name in options else source)
    config.refuse_stray_credentials(source)  # what the job's `sentsweep sweep` refuses, before the YAML is uploaded
    warnings = _portability_warnings(config)
    if check_trials:  # the method's trial settings, checked like `sentsweep sweep` does before starting Ray
        try:
            from sentsweep.platform.driver.specs import resolve_specs, validate_trials
        except ImportError as exc:  # a thin client without the training stack
            warnings.append(f"trial settings not checked here ({exc}); the cluster will check them")
        else:
            validate_trials(config, *resolve_specs(config, source), source)
    text = f"# submitted by `sentsweep submit` from {Path(source).name}\n" + yaml.safe_dump(raw, sort_keys=False)
    return PreparedConfig(config, text, source, Path(source).name, warnings)


def is_relative_path(value: str) -> bool:
    """A local path that is not absolute (it would resolve inside the job's temporary folder)."""
    return "://" not in value and not Path(value).expanduser().is_absolute()


def _portability_warnings(config: SweepConfig) -> list[str]:
    """What would silently stay inside the job's temporary working directory on the head."""
    warnings = []
    if is_relative_path(config.storage_path.removeprefix("file://")):
        warnings.append(f"storage_path '{config.storage_path}' is relative: Tune's state would live in the "
                        "job's temporary folder on the head and could not be resumed; pass --storage "
                        "s3://bucket/prefix or a path on a shared volume")
    uri = config.tracking.uri
    if not is_server_uri(uri) and is_relative_path(uri.removeprefix("sqlite:///")):
        warnings.append(f"tracking uri '{uri}' is relative: the runs would be written inside the job's "
                        "temporary folder on the head; pass --tracking-uri http://MLFLOW:5000")
    artifacts = config.tracking.artifact_location
    server_decides = is_server_uri(uri) and artifacts == DEFAULT_ARTIFACTS
    if artifacts and not server_decides and is_relative_path(artifacts.removeprefix("file://")):
        warnings.append(f"tracking.artifact_location '{artifacts}' is relative: artifacts would be written inside "
                        "the job's temporary folder on the head; give an s3:// or shared location (or none, "
                        "with a tracking server)")
    for name in ("model", "data_dir"):
        value = getattr(config, name)
        if value and is_relative_path(value) and Path(value).exists():
            warnings.append(f"{name} '{value}' is a local folder: it is not uploaded; put it where the "
                            "cluster can read it and give that path")
    return warnings


#: Files of the checkout staged beside the package (when present).
PROJECT_FILES = ("pyproject.toml", "constraints.txt", "README.md")
#: Names (glob patterns) never staged: environments, caches, results and local tracking stores.
EXCLUDES = (".venv", "venv", ".git", "runs", "ray_results", "mlruns", "mlruns*", "mlartifacts", "__pycache__", "*.pyc",
            "*.pyo", "*.egg-info", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".ipynb_checkpoints", "*.db",
            "*.db-journal", ".DS_Store")
#: A staged working dir above this is refused (Ray uploads it into the cluster's object store).
MAX_WORKING_DIR_BYTES = 100 * 2**20


@dataclass(frozen=True)
class StagedDir:
    """A folder Ray uploads as the job's ``working_dir``."""

    path: Path
    files: tuple[str, ...]  # relative POSIX paths
    size: int  # bytes
    config_path: str | None  # the config's path inside it


def project_dirs() -> tuple[Path, Path | None]:
    """The ``sentsweep`` package folder and, for a source checkout, the folder with its ``pyproject.toml``."""
    package = Path(sentsweep.__file__).resolve().parent
    root = package.parent
    return package, (root if (root / "pyproject.toml").is_file() else None)


def stage_working_dir(dest: Path, *, config: PreparedConfig | None = None, include_code: bool = True,
                      package_dir: Path | None = None, project_dir: Path | None = None) -> StagedDir:
    """Copy the package and :data:`PROJECT_FILES` (when ``include_code``) and the config into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    if include_code:
        if package_dir is None:
            package_dir, project_dir = project_dirs()
        shutil.copytree(package_dir, dest / package_dir.name, ignore=shutil.ignore_patterns(*EXCLUDES),
                        dirs_exist_ok=True)
        for name in PROJECT_FILES if project_dir is not None else ():
            if (project_dir / name).is_file():
                shutil.copy2(project_dir / name, dest / name)
    config_path = None
    if config is not None:
        config_path = f"configs/{config.filename}"
        (dest / "configs").mkdir(exist_ok=True)
        (dest / config_path).write_text(config.text, encoding="utf-8")
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    sizes = {p.relative_to(dest).as_posix(): p.stat().st_size for p in files}
    total = sum(sizes.values())
    if total > MAX_WORKING_DIR_BYTES:
        biggest = ", ".join(f"{name} ({size / 2**20:.1f} MiB)"
                            for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:3])
        raise ConfigError(f"the staged working dir is {total / 2**20:.0f} MiB (limit "
                          f"{MAX_WORKING_DIR_BYTES / 2**20:.0f} MiB); largest: {biggest}", field="working_dir")
    return StagedDir(dest, tuple(sizes), total, config_path)


def pinned_requirements() -> list[str]:
    """The pinned runtime requirements of ``pyproject.toml`` (else of the installed distribution's metadata)."""
    if (project_dir := project_dirs()[1]) is not None:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
        return list(data.get("project", {}).get("dependencies", []))
    try:
        return [r for r in requires("sentsweep") or [] if "extra ==" not in r]
    except PackageNotFoundError:
        raise ConfigError("no pyproject.toml and no installed sentsweep to read requirements from",
                          field="--pip") from None


@contextlib.contextmanager
def job_workdir() -> Iterator[Path]:
    """A temporary folder to stage a working dir in (removed once Ray has uploaded it)."""
    with tempfile.TemporaryDirectory(prefix="sentsweep-submit-", ignore_cleanup_errors=True) as folder:
        yield Path(folder) / "job"


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

    ship: Literal["project", "installed"] = "project"
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


@dataclass
class JobSpec:
    """Everything ``submit_job`` gets; :attr:`summary` is safe to print, :attr:`runtime_env` is not."""

    entrypoint: str
    runtime_env: dict[str, Any] = field(repr=False)
    metadata: dict[str, str]
    summary: list[str]
    warnings: list[str]
    placement: dict[str, Any] = field(default_factory=dict)  # where the driver may run: submit_job's entrypoint_*


def _job(options: JobOptions, staged: StagedDir | None, env_vars: dict[str, str], command: str, args: list[str],
         head: str, details: list[str], metadata: dict[str, str], warnings: list[str]) -> JobSpec:
    """The job that runs ``sentsweep COMMAND ARGS``, with its summary (``head``, then ``details`` among the rest)."""
    runtime_env: dict[str, Any] = {"working_dir": str(staged.path)} if staged is not None else {}
    if options.ship == "installed":
        code = "the cluster's installed sentsweep (working_dir: the config only)"
    else:
        assert staged is not None
        code = f"staged project: {len(staged.files)} files, {staged.size / 2**20:.1f} MiB (working_dir)"
    if options.installer:
        packages = pinned_requirements()
        runtime_env[options.installer] = {"packages": packages, f"{options.installer}_check": False}
        code += f"; {options.installer} installs {len(packages)} pinned requirements"
    if env_vars:
        runtime_env["env_vars"] = env_vars
    entrypoint = options.entrypoint(command, *args)
    summary = [head, f"  code:        {code}", f"  entrypoint:  {entrypoint}", *details,
               f"  environment: {masked(env_vars)}", f"  driver:      {options.driver_line}"]
    metadata = {"sentsweep": sentsweep.__version__, **metadata, "ship": options.ship}
    resources = dict(options.entrypoint_resources) if options.entrypoint_resources else None
    return JobSpec(entrypoint, runtime_env, metadata, summary, warnings, {
        "entrypoint_num_cpus": options.entrypoint_num_cpus, "entrypoint_num_gpus": options.entrypoint_num_gpus,
        "entrypoint_resources": resources})


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
                f"sweep {config.name}: {config.trials_text} trials of {config.method} from {prepared.source}",
                [f"  storage:     {storage}",
                 f"  tracking:    {mask_uri(config.tracking.uri)} (experiment {config.tracking.experiment})"],
                {"kind": "sweep", "sweep": config.name, "config": prepared.filename, "method": config.method},
                list(prepared.warnings))


def build_resume_job(sweep_dir: str, options: JobOptions, workdir: Path, *,
                     storage_endpoint_url: str | None = None, tracking_uri: str | None = None) -> JobSpec:
    """The job that continues the sweep in ``sweep_dir`` (a folder every node reaches), tracked at ``tracking_uri``
    (else the cluster's ``$MLFLOW_TRACKING_URI``). Credentials are refused: they would be in the entrypoint."""
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
