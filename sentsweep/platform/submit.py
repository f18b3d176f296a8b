"""Run sweeps on a remote Ray cluster through the Ray Jobs API, then follow, list and stop them.

Usage (the dashboard address defaults to ``$RAY_API_SERVER_ADDRESS``, else ``$RAY_ADDRESS``, else
``http://127.0.0.1:8265``; on Kubernetes, ``kubectl port-forward svc/<cluster>-head-svc 8265:8265``)::

    sentsweep submit configs/demo.yaml --address http://HEAD:8265 \\
        --storage s3://sweeps/demo --storage-endpoint-url http://minio:9000 \\
        --tracking-uri http://mlflow:5000 --set num_samples=32 --follow
    sentsweep submit configs/demo.yaml --dry-run          # validate, stage and show the job; submit nothing
    sentsweep jobs list
    sentsweep jobs status JOB_ID
    sentsweep jobs logs JOB_ID --follow                   # exits 0 when the job SUCCEEDED, 1 otherwise
    sentsweep jobs stop JOB_ID
    sentsweep submit --resume s3://sweeps/demo/demo-cosent-20250101-120000-ab12 \\
        --storage-endpoint-url http://minio:9000          # continue a sweep after a head restart

What travels with a job:

* **The config**, with ``--set``, ``--storage``, ``--storage-endpoint-url`` and ``--tracking-uri`` baked in.
  It is validated here first (:func:`~sentsweep.platform.config.parse_sweep_config`, then the trial
  settings against the method), so a typo fails on this machine with the field named, before any upload.
* **The code**, one of three ways:

  - default: ``working_dir`` is a staged copy of this checkout: ``sentsweep/`` (sources and the bundled
    sample data), ``pyproject.toml``, ``constraints.txt``, ``README.md``, and the config as
    ``configs/<file>``. Virtual environments, caches, ``runs``, ``ray_results``, ``mlruns*``,
    ``mlartifacts``, databases and ``*.egg-info`` stay behind (:data:`EXCLUDES`). Ray zips it into the
    cluster's object store and unpacks it as the job's working directory, which is also on every trial
    worker's ``PYTHONPATH``: the cluster runs this checkout's code on its own Python. With ``--pip`` (or
    ``--uv``), the job first installs the pinned requirements of ``pyproject.toml`` into its own
    environment (slow; for clusters whose image lacks them).
  - ``--installed``: the cluster's image already has sentsweep (``docker/Dockerfile`` on the KubeRay
    cluster of ``k8s/``); ``working_dir`` holds only the config.
  - ``--image IMAGE``: Ray's ``image_uri`` runtime environment (the job and its workers run in that
    container; the nodes need podman). ``image_uri`` admits no ``working_dir``, so the config travels in the
    job's environment (:data:`CONFIG_ENV`) and ``python -m sentsweep.platform.submit`` writes it to a file
    before it runs the sweep.

* **The entrypoint**: ``python -m sentsweep.cli sweep configs/<file>``, not the ``sentsweep`` console script,
  which a working-dir copy does not install (``--python`` names another interpreter).
* **The environment**: credentials and endpoints copied from this machine's environment when set
  (:data:`FORWARDED_ENV`: MLflow user, password and token, AWS keys, S3 endpoints, the Hugging Face token),
  ``MLFLOW_TRACKING_URI`` for a tracking server, and ``--env NAME[=VALUE]``. Values are never printed or
  logged; summaries name the variables, masked. Anyone who can read the cluster's job API can read a job's
  runtime environment, so on a shared cluster prefer Kubernetes secrets in the pods and ``--no-forward-env``.
* **The storage**: ``--storage`` (``s3://bucket/prefix`` with ``--storage-endpoint-url`` for MinIO, or a path
  on a volume every node mounts) replaces ``storage_path``, so Tune's experiment state outlives the head.
  The job's log names the sweep folder; ``sentsweep submit --resume FOLDER`` continues the sweep in a new job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import yaml

from sentsweep.errors import ConfigError, SentsweepError
from sentsweep.platform.config import DEFAULT_ARTIFACTS, SweepConfig, is_server_uri, parse_sweep_config

if TYPE_CHECKING:
    from ray.job_submission import JobDetails, JobSubmissionClient

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
"""The Ray dashboard of a head on this machine (or a port-forwarded one)."""

ADDRESS_ENV = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
"""Where the default address comes from, in order (the ``ray job`` CLI reads the same two)."""

FORWARDED_ENV: tuple[str, ...] = (
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_S3_ENDPOINT_URL",
    "MLFLOW_S3_IGNORE_TLS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "HF_TOKEN",
)
"""Variables copied from the submitting environment into the job's when they are set (values never shown)."""

CONFIG_ENV = "SENTSWEEP_SWEEP_CONFIG"
"""With ``--image``: the job's variable that carries the config YAML."""
CONFIG_NAME_ENV = "SENTSWEEP_SWEEP_CONFIG_NAME"

PROJECT_FILES = ("pyproject.toml", "constraints.txt", "README.md")
"""Files of the checkout staged beside the package (when present)."""

EXCLUDES = (
    ".venv", "venv", ".git", "runs", "ray_results", "mlruns", "mlruns*", "mlartifacts", "__pycache__",
    "*.pyc", "*.pyo", "*.egg-info", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".ipynb_checkpoints",
    "*.db", "*.db-journal", ".DS_Store",
)
"""Names (glob patterns) never staged: environments, caches, results and local tracking stores."""

MAX_WORKING_DIR_BYTES = 100 * 2**20
"""A staged working dir above this is refused (Ray uploads it into the cluster's object store)."""

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
MASK = "***"

Ship = Literal["project", "installed", "image"]


class ClusterError(SentsweepError):
    """The Ray cluster cannot be reached, refused a request, or has no such job (one line, no traceback)."""


# -- addresses, environment, masking -----------------------------------------------------------------------


def resolve_address(explicit: str | None, environ: Mapping[str, str]) -> str:
    """``--address``, else ``$RAY_API_SERVER_ADDRESS``, else ``$RAY_ADDRESS``, else :data:`DEFAULT_ADDRESS`."""
    if explicit:
        return explicit
    for name in ADDRESS_ENV:
        value = environ.get(name, "").strip()
        if value:
            return value
    return DEFAULT_ADDRESS


def forwarded_env(environ: Mapping[str, str], extra: Sequence[str] = (), *,
                  forward_defaults: bool = True) -> dict[str, str]:
    """The variables a job gets from ``environ``: :data:`FORWARDED_ENV` that are set (and not empty), then
    each ``--env`` entry, ``NAME`` (copied, an error when unset) or ``NAME=VALUE``."""
    selected = {name: environ[name] for name in FORWARDED_ENV if forward_defaults and environ.get(name)}
    for entry in extra:
        name, sep, value = entry.partition("=")
        name = name.strip()
        if not name or not name.replace("_", "").isalnum() or name[0].isdigit():
            raise ConfigError(f"'{name or entry}' is not a variable name (use NAME or NAME=VALUE)", field="--env")
        if sep:
            selected[name] = value
        elif environ.get(name):
            selected[name] = environ[name]
        else:
            raise ConfigError(f"{name} is not set in this environment (use NAME=VALUE to give a value)",
                              field="--env")
    return selected


def masked(env: Mapping[str, str]) -> str:
    """``NAME=***`` for each variable, sorted: what a summary may show of a job's environment."""
    return ", ".join(f"{name}={MASK}" for name in sorted(env)) or "(none)"


def mask_uri(uri: str) -> str:
    """``uri`` with any password in its user-info part masked (``http://user:***@host``)."""
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{MASK}@{host}"))


def split_credentials(uri: str) -> tuple[str, dict[str, str]]:
    """``http://user:pass@host`` as ``http://host`` plus ``MLFLOW_TRACKING_USERNAME``/``PASSWORD``, so a
    password never lands in the shipped config or in what the sweep prints about its tracking URI (a
    database URI such as ``postgresql://user:pass@db/mlflow`` keeps its credentials: they are its own)."""
    if not uri.startswith(("http://", "https://")):
        return uri, {}
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri, {}
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    credentials = {"MLFLOW_TRACKING_USERNAME": unquote(parts.username or "")}
    if parts.password is not None:
        credentials["MLFLOW_TRACKING_PASSWORD"] = unquote(parts.password)
    return urlunsplit(parts._replace(netloc=host)), {k: v for k, v in credentials.items() if v}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ characters) replaced by :data:`MASK`."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


# -- the config ----------------------------------------------------------------------------------------------


@dataclass
class PreparedConfig:
    """A sweep config as it will be shipped: validated, with the submit options baked in."""

    config: SweepConfig
    text: str  # the YAML the job runs
    source: str  # the local file it came from
    filename: str  # its name in the job (configs/<filename>)
    warnings: list[str] = field(default_factory=list)
    credentials: dict[str, str] = field(default_factory=dict, repr=False)  # taken out of the tracking URI


def prepare_config(path: str | Path, overrides: Sequence[str] = (), *, storage: str | None = None,
                   storage_endpoint_url: str | None = None, tracking_uri: str | None = None,
                   check_trials: bool = True) -> PreparedConfig:
    """Read ``path``, apply ``--set`` overrides and the storage and tracking options, and validate it all
    here (errors name the field and the file) before anything reaches the cluster."""
    from sentsweep.yaml_io import apply_overrides, read_yaml

    source = str(path)
    raw = apply_overrides(read_yaml(path), overrides)
    if storage:
        raw["storage_path"] = storage
    if storage_endpoint_url is not None:
        raw["storage_endpoint_url"] = storage_endpoint_url or None
    tracking = raw.get("tracking")
    uri = tracking_uri or (tracking.get("uri") if isinstance(tracking, dict) else None)
    credentials: dict[str, str] = {}
    if isinstance(uri, str):
        uri, credentials = split_credentials(uri)
        if tracking_uri or credentials:
            raw["tracking"] = {**(tracking if isinstance(tracking, dict) else {}), "uri": uri}
    config = parse_sweep_config(raw, source)
    warnings = _portability_warnings(config)
    if check_trials:
        warnings += _check_trials(config, source)
    header = f"# submitted by `sentsweep submit` from {Path(source).name}\n"
    return PreparedConfig(config, header + yaml.safe_dump(raw, sort_keys=False), source, Path(source).name,
                          warnings, credentials)


def _check_trials(config: SweepConfig, source: str) -> list[str]:
    """The method's trial settings checked like ``sentsweep sweep`` does before starting Ray."""
    try:
        from sentsweep.platform.sweep import resolve_specs, validate_trials
    except ImportError as exc:  # a thin client without the training stack
        return [f"trial settings not checked here ({exc}); the cluster will check them"]
    trainable, space = resolve_specs(config, source)
    validate_trials(config, trainable, space, source)
    return []


def _is_relative_path(value: str) -> bool:
    return "://" not in value and not Path(value).expanduser().is_absolute()


def _portability_warnings(config: SweepConfig) -> list[str]:
    """What would silently stay inside the job's temporary working directory on the head."""
    warnings = []
    if not config.is_remote_storage and _is_relative_path(config.storage_path.removeprefix("file://")):
        warnings.append(f"storage_path '{config.storage_path}' is relative: Tune's state would live in the "
                        "job's temporary folder on the head and could not be resumed; pass --storage "
                        "s3://bucket/prefix or a path on a shared volume")
    uri = config.tracking.uri
    local = uri.removeprefix("sqlite:///") if uri.startswith("sqlite:///") else uri
    if not is_server_uri(uri) and ("://" not in uri or uri.startswith("sqlite:///")) and _is_relative_path(local):
        warnings.append(f"tracking uri '{uri}' is relative: the runs would be written inside the job's "
                        "temporary folder on the head; pass --tracking-uri http://MLFLOW:5000")
    artifacts = config.tracking.artifact_location
    server_decides = is_server_uri(uri) and artifacts == DEFAULT_ARTIFACTS
    if artifacts and not server_decides and _is_relative_path(artifacts.removeprefix("file://")):
        warnings.append(f"tracking.artifact_location '{artifacts}' is relative: artifacts would be written inside "
                        "the job's temporary folder on the head; give an s3:// or shared location (or none, "
                        "with a tracking server)")
    for name in ("model", "data_dir"):
        value = getattr(config, name)
        if value and _is_relative_path(value) and Path(value).exists():
            warnings.append(f"{name} '{value}' is a local folder: it is not uploaded; put it where the "
                            "cluster can read it and give that path")
    return warnings


# -- the working dir, requirements, entrypoint ------------------------------------------------------------------


@dataclass(frozen=True)
class StagedDir:
    """A folder Ray uploads as the job's ``working_dir``."""

    path: Path
    files: tuple[str, ...]  # relative POSIX paths
    size: int  # bytes
    config_path: str | None  # the config's path inside it


def project_dirs() -> tuple[Path, Path | None]:
    """The ``sentsweep`` package folder and, for a source checkout, the folder with its ``pyproject.toml``."""
    package = Path(__file__).resolve().parents[1]
    root = package.parent
    return package, (root if (root / "pyproject.toml").is_file() else None)


def stage_working_dir(dest: Path, *, config: PreparedConfig | None = None, include_code: bool = True,
                      package_dir: Path | None = None, project_dir: Path | None = None) -> StagedDir:
    """Copy what a job needs into ``dest``: the package (without :data:`EXCLUDES`) and
    :data:`PROJECT_FILES` when ``include_code``, and the config as ``configs/<file>``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if include_code:
        default_package, default_project = project_dirs()
        package_dir = package_dir or default_package
        project_dir = project_dir if project_dir is not None else default_project
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


def pinned_requirements(project_dir: Path | None = None) -> list[str]:
    """The project's runtime requirements (pinned ``==`` in ``pyproject.toml``; else the installed
    distribution's metadata), as ``--pip``/``--uv`` install them on the cluster."""
    if project_dir is None:
        project_dir = project_dirs()[1]
    if project_dir is not None:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
        return list(data.get("project", {}).get("dependencies", []))
    from importlib.metadata import PackageNotFoundError, requires

    try:
        return [r for r in requires("sentsweep") or [] if "extra ==" not in r]
    except PackageNotFoundError:
        raise ConfigError("no pyproject.toml and no installed sentsweep to read requirements from",
                          field="--pip") from None


def cli_entrypoint(command: str, *args: str, python: str = "python", finalize: bool = True,
                   verbose: bool = False) -> str:
    """``python -m sentsweep.cli COMMAND ARGS [--no-finalize] [--verbose]``, shell-quoted."""
    argv = [python, "-m", "sentsweep.cli", command, *args]
    if not finalize:
        argv.append("--no-finalize")
    if verbose:
        argv.append("--verbose")
    return shlex.join(argv)


# -- the job -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobOptions:
    """How a job is packaged and run (the submit command's flags)."""

    ship: Ship = "project"
    image: str | None = None
    installer: Literal["pip", "uv"] | None = None
    python: str = "python"
    finalize: bool = True
    verbose: bool = False
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # values are secret
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None

    def __post_init__(self) -> None:
        if self.ship == "image" and not self.image:
            raise ConfigError("an image is needed", field="--image")
        if self.ship == "image" and self.installer:
            raise ConfigError(f"--{self.installer} cannot be combined with --image (Ray's image_uri runtime "
                              "environment admits only env_vars); build the requirements into the image",
                              field=f"--{self.installer}")


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


def _runtime_env(options: JobOptions, staged: StagedDir | None, env_vars: dict[str, str]) -> dict[str, Any]:
    runtime_env: dict[str, Any] = {}
    if options.ship == "image":
        runtime_env["image_uri"] = options.image
    elif staged is not None:
        runtime_env["working_dir"] = str(staged.path)
    if options.installer:
        packages = pinned_requirements()
        key = "pip_check" if options.installer == "pip" else "uv_check"
        runtime_env[options.installer] = {"packages": packages, key: False}
    if env_vars:
        runtime_env["env_vars"] = env_vars
    return runtime_env


def _code_line(options: JobOptions, staged: StagedDir | None) -> str:
    if options.ship == "image":
        code = f"image {options.image} (image_uri; config in ${CONFIG_ENV})"
    elif options.ship == "installed":
        code = "the cluster's installed sentsweep (working_dir: the config only)"
    else:
        assert staged is not None
        code = f"staged project: {len(staged.files)} files, {staged.size / 2**20:.1f} MiB (working_dir)"
    if options.installer:
        code += f"; {options.installer} installs {len(pinned_requirements())} pinned requirements"
    return code


def build_sweep_job(prepared: PreparedConfig, options: JobOptions, workdir: Path) -> JobSpec:
    """The job that runs ``prepared`` (staging its working dir, if any, in ``workdir``)."""
    import sentsweep

    config = prepared.config
    env_vars = {**prepared.credentials, **options.env}
    if is_server_uri(config.tracking.uri):
        env_vars.setdefault("MLFLOW_TRACKING_URI", config.tracking.uri)
    staged = None
    if options.ship == "image":
        env_vars[CONFIG_ENV] = prepared.text
        env_vars[CONFIG_NAME_ENV] = prepared.filename
        argv = [options.python, "-m", "sentsweep.platform.submit", "sweep"]
        entrypoint = shlex.join(argv + ["--no-finalize"] * (not options.finalize) + ["--verbose"] * options.verbose)
    else:
        staged = stage_working_dir(workdir, config=prepared, include_code=options.ship == "project")
        assert staged.config_path is not None
        entrypoint = cli_entrypoint("sweep", staged.config_path, python=options.python,
                                    finalize=options.finalize, verbose=options.verbose)
    storage = config.storage_path + (f" (endpoint {config.storage_endpoint_url})"
                                     if config.storage_endpoint_url else "")
    shown_env = {k: v for k, v in env_vars.items() if k not in (CONFIG_ENV, CONFIG_NAME_ENV)}
    summary = [
        f"sweep {config.name}: {config.num_samples} trials of {config.method} from {prepared.source}",
        f"  code:        {_code_line(options, staged)}",
        f"  entrypoint:  {entrypoint}",
        f"  storage:     {storage}",
        f"  tracking:    {mask_uri(config.tracking.uri)} (experiment {config.tracking.experiment})",
        f"  environment: {masked(shown_env)}",
    ]
    metadata = {"sentsweep": sentsweep.__version__, "kind": "sweep", "sweep": config.name,
                "config": prepared.filename, "method": config.method, "ship": options.ship}
    return JobSpec(entrypoint, _runtime_env(options, staged, env_vars), metadata, summary,
                   list(prepared.warnings), staged, options.entrypoint_num_cpus, options.entrypoint_num_gpus)


def build_resume_job(sweep_dir: str, options: JobOptions, workdir: Path, *,
                     storage_endpoint_url: str | None = None) -> JobSpec:
    """The job that continues the sweep in ``sweep_dir`` (a folder every node reaches, e.g. on S3)."""
    import sentsweep

    if _is_relative_path(sweep_dir):
        raise ConfigError("give the sweep folder as an s3:// URI or an absolute path on a shared volume",
                          field="--resume")
    args = [sweep_dir] + (["--storage-endpoint-url", storage_endpoint_url] if storage_endpoint_url else [])
    env_vars = dict(options.env)
    staged = None
    if options.ship == "project":
        staged = stage_working_dir(workdir, include_code=True)
    entrypoint = cli_entrypoint("resume", *args, python=options.python, finalize=options.finalize,
                                verbose=options.verbose)
    summary = [
        f"resume {sweep_dir}",
        f"  code:        {_code_line(options, staged)}",
        f"  entrypoint:  {entrypoint}",
        f"  environment: {masked(env_vars)}",
    ]
    metadata = {"sentsweep": sentsweep.__version__, "kind": "resume", "sweep": sweep_dir.rstrip("/").rsplit("/")[-1],
                "ship": options.ship}
    return JobSpec(entrypoint, _runtime_env(options, staged, env_vars), metadata, summary, [], staged,
                   options.entrypoint_num_cpus, options.entrypoint_num_gpus)


@contextlib.contextmanager
def job_workdir() -> Iterator[Path]:
    """A temporary folder to stage a working dir in (removed once Ray has uploaded it)."""
    folder = Path(tempfile.mkdtemp(prefix="sentsweep-submit-"))
    try:
        yield folder / "job"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the cluster ------------------------------------------------------------------------------------------------


def _client_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError, RuntimeError, ValueError]
    with contextlib.suppress(ImportError):
        import aiohttp

        errors.append(aiohttp.ClientError)
    return tuple(errors)


class ClusterJobs:
    """The jobs of one Ray cluster, through its dashboard's Jobs API; failures are :class:`ClusterError`."""

    def __init__(self, address: str, client: JobSubmissionClient | None = None) -> None:
        self.address = address
        if client is None:
            client = self._connect(address)
        self.client = client

    @staticmethod
    def _connect(address: str) -> JobSubmissionClient:
        from ray.job_submission import JobSubmissionClient

        try:
            return JobSubmissionClient(address)
        except _client_errors() as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ClusterError(f"cannot reach the Ray dashboard at {address} ({reason}); is the head running "
                               "and its port 8265 reachable (e.g. kubectl port-forward)?") from None

    @contextlib.contextmanager
    def _errors(self, job_id: str | None = None) -> Iterator[None]:
        try:
            yield
        except _client_errors() as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if job_id is not None and ("404" in text or "does not exist" in text):
                raise ClusterError(f"no job '{job_id}' on the Ray cluster at {self.address} "
                                   f"(sentsweep jobs list --address {self.address})") from None
            if isinstance(exc, RuntimeError | ValueError):
                raise ClusterError(f"the Ray cluster at {self.address} refused the request: {text}") from None
            raise ClusterError(f"lost the connection to the Ray dashboard at {self.address}: {text}") from None

    def submit(self, spec: JobSpec, submission_id: str | None = None) -> str:
        """Submit ``spec`` (uploading its working dir); returns the job's submission id."""
        with self._errors():
            return self.client.submit_job(entrypoint=spec.entrypoint, runtime_env=spec.runtime_env,
                                          metadata=spec.metadata, submission_id=submission_id,
                                          entrypoint_num_cpus=spec.entrypoint_num_cpus,
                                          entrypoint_num_gpus=spec.entrypoint_num_gpus)

    def info(self, job_id: str) -> JobDetails:
        with self._errors(job_id):
            return self.client.get_job_info(job_id)

    def status(self, job_id: str) -> str:
        with self._errors(job_id):
            return str(self.client.get_job_status(job_id).value)

    def logs(self, job_id: str) -> str:
        with self._errors(job_id):
            return self.client.get_job_logs(job_id)

    def list(self) -> list[JobDetails]:
        with self._errors():
            return self.client.list_jobs()

    def wait(self, job_id: str, *, timeout: float | None = None, poll: float = 1.0,
             until: frozenset[str] = TERMINAL) -> str:
        """Poll until the job's status is in ``until``; returns it (the last one seen after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status(job_id)
            if status in until or (deadline is not None and time.monotonic() > deadline):
                return status
            time.sleep(poll)

    def follow(self, job_id: str, write: Callable[[str], None]) -> str:
        """Stream the job's logs to ``write`` until it ends; returns its final status."""
        self.status(job_id)  # an unknown id fails here, by name

        async def tail() -> None:
            async for chunk in self.client.tail_job_logs(job_id):
                write(chunk)

        with self._errors(job_id):
            asyncio.run(tail())
        return self.wait(job_id, timeout=60, poll=0.5)

    def stop(self, job_id: str, *, wait: float | None = 60.0) -> str:
        """Ask the job to stop (SIGTERM, then SIGKILL); waits up to ``wait`` s and returns its status."""
        status = self.status(job_id)
        if status in TERMINAL:
            return status
        with self._errors(job_id):
            self.client.stop_job(job_id)
        return self.wait(job_id, timeout=wait, poll=0.5) if wait else self.status(job_id)


def exit_status(status: str) -> int:
    """The exit status a command reports for a finished job: 0 when it SUCCEEDED, else 1."""
    return 0 if status == "SUCCEEDED" else 1


# -- showing jobs ---------------------------------------------------------------------------------------------


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms else "-"


def _duration(start: int | None, end: int | None) -> str:
    if not start:
        return "-"
    seconds = int(((end or time.time() * 1000) - start) / 1000)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def job_name(info: JobDetails) -> str:
    return info.submission_id or info.job_id or "?"


def describe_job(info: JobDetails) -> str:
    """A job's status, message, entrypoint, sweep, times and exit code (never its runtime environment)."""
    status = getattr(info.status, "value", info.status)
    metadata = info.metadata or {}
    lines = [f"job {job_name(info)}: {status}"]
    if info.message:
        lines.append(f"  message:    {info.message.strip()}")
    if metadata.get("sweep"):
        lines.append(f"  sweep:      {metadata['sweep']} ({metadata.get('kind', 'sweep')}, "
                     f"config {metadata.get('config', '-')}, code {metadata.get('ship', '-')})")
    lines.append(f"  entrypoint: {info.entrypoint}")
    lines.append(f"  started:    {_when(info.start_time)}   ended: {_when(info.end_time)}   "
                 f"duration: {_duration(info.start_time, info.end_time)}")
    if info.driver_exit_code is not None:
        lines.append(f"  exit code:  {info.driver_exit_code}")
    if info.error_type:
        lines.append(f"  error:      {info.error_type}")
    return "\n".join(lines)


def jobs_table(jobs: Sequence[JobDetails]) -> str:
    """Jobs newest first: id, status, start, duration, sweep, entrypoint."""
    rows = [("JOB", "STATUS", "STARTED", "DURATION", "SWEEP", "ENTRYPOINT")]
    for info in sorted(jobs, key=lambda j: j.start_time or 0, reverse=True):
        entry = info.entrypoint if len(info.entrypoint) <= 60 else info.entrypoint[:57] + "..."
        rows.append((job_name(info), str(getattr(info.status, "value", info.status)), _when(info.start_time),
                     _duration(info.start_time, info.end_time), (info.metadata or {}).get("sweep", "-"), entry))
    if len(rows) == 1:
        return "no jobs"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
                     for row in rows)


# -- inside an --image job ------------------------------------------------------------------------------------


def job_main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """``python -m sentsweep.platform.submit sweep [FLAGS]``: write the config carried in
    :data:`CONFIG_ENV` to a file and run ``sentsweep sweep FILE FLAGS`` on it."""
    from sentsweep.cli import main

    if not argv or argv[0] != "sweep":
        print("usage: python -m sentsweep.platform.submit sweep [sweep flags]", file=sys.stderr)
        return 2
    text = environ.get(CONFIG_ENV)
    if not text:
        print(f"sentsweep: error: ${CONFIG_ENV} is not set (it carries the sweep config)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sentsweep-job-") as folder:
        path = Path(folder) / Path(environ.get(CONFIG_NAME_ENV) or "sweep.yaml").name
        path.write_text(text, encoding="utf-8")
        return main(["sweep", str(path), *argv[1:]])


if __name__ == "__main__":
    sys.exit(job_main(sys.argv[1:], os.environ))
