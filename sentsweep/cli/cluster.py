"""The cluster sub-commands: ``submit`` and ``jobs status | logs | stop | list`` (see
:mod:`sentsweep.cluster`).

Handlers return an exit status and let :class:`~sentsweep.errors.SentsweepError` propagate (the CLI prints
it on one line). This module is where the environment is read (the dashboard address, the Ray token, the
variables to forward, the owner); the library takes mappings. Ray is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sentsweep.cli.common import NO_FINALIZE_HELP, add_overrides
from sentsweep.cluster.jobspec import DRIVER_RESOURCES
from sentsweep.credentials import mask_text
from sentsweep.errors import ConfigError

if TYPE_CHECKING:
    from sentsweep.cluster.client import ClusterJobs
    from sentsweep.cluster.jobspec import JobOptions

ADDRESS_HELP = "Ray dashboard address (default: $RAY_API_SERVER_ADDRESS, else $RAY_ADDRESS, else " \
               "http://127.0.0.1:8265)"
TOKEN_HELP = "file holding the cluster's Ray token (default: $RAY_AUTH_TOKEN, else the file $RAY_AUTH_TOKEN_PATH, " \
             "else ~/.ray/auth_token when RAY_AUTH_MODE=token); sent as a header, never shown"


def _add_connection(p: argparse.ArgumentParser) -> None:
    """``--address`` and ``--token-file`` of every command that talks to a cluster."""
    p.add_argument("--address", default=None, help=ADDRESS_HELP)
    p.add_argument("--token-file", default=None, metavar="PATH", help=TOKEN_HELP)


def _add_submit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="run a sweep on a remote Ray cluster (Ray Jobs API)",
                       description="Validate a sweep config here, then submit `sentsweep sweep` as a Ray job "
                       "with the project (or only the config) as its working dir and the storage and tracking "
                       "options baked into the config. No local credential travels with the job unless "
                       "--forward-env names it; a URI with a login in it (user:pass@) is refused. --resume "
                       "continues an interrupted sweep from its folder instead.")
    p.add_argument("config", nargs="?", default=None, help="sweep YAML (see configs/demo.yaml)")
    p.add_argument("--resume", default=None, metavar="SWEEP_DIR",
                   help="continue the sweep in this folder (s3://... or a shared path) instead of a new one")
    _add_connection(p)
    add_overrides(p, "--set num_samples=64")
    p.add_argument("--storage", default=None, metavar="URI",
                   help="storage_path for Tune's state: s3://bucket/prefix or a path on a volume all nodes "
                   "mount (needed to resume after a head restart)")
    p.add_argument("--storage-endpoint-url", default=None, metavar="URL",
                   help="S3-compatible endpoint for an s3:// storage (MinIO), e.g. http://minio:9000")
    p.add_argument("--tracking-uri", default=None, metavar="URI",
                   help="MLflow tracking URI for the job (default: the config's tracking.uri); with --resume, the "
                   "server the sweep was tracked at (default: the cluster's $MLFLOW_TRACKING_URI)")
    p.add_argument("--installed", action="store_true",
                   help="the cluster's image already has sentsweep (docker/Dockerfile): ship only the config")
    deps = p.add_mutually_exclusive_group()
    deps.add_argument("--pip", dest="installer", action="store_const", const="pip",
                      help="install the pinned requirements (pyproject.toml) into the job's environment")
    deps.add_argument("--uv", dest="installer", action="store_const", const="uv",
                      help="like --pip, with uv")
    p.add_argument("--python", default="python", help="the cluster's interpreter for the entrypoint "
                   "(default: %(default)s)")
    p.add_argument("--forward-env", action="append", default=[], metavar="NAME",
                   help="copy this variable of this environment into the job's (repeatable; e.g. "
                   "AWS_SECRET_ACCESS_KEY). Nothing is copied otherwise: on Kubernetes the pods have their own "
                   "credentials. Values are never printed, but anyone who can read the cluster's Jobs API can "
                   "read them in the job's runtime_env. The Ray token is never forwarded")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set this variable in the job's environment (repeatable; not for secrets: the value "
                   "is in your shell history)")
    p.add_argument("--job-id", default=None, help="the job's submission id (default: Ray picks one)")
    p.add_argument("--driver-resources", nargs="?", const=json.dumps(DRIVER_RESOURCES), default=None,
                   metavar="JSON", help="custom resources the driver (and the final evaluation) asks for, so it "
                   f"runs on a worker that offers them, not on the head. Alone: '{json.dumps(DRIVER_RESOURCES)}', "
                   "which the cpu group of k8s/base/raycluster.yaml offers: always give it there. A cluster that "
                   "offers none never starts the job. Implies --entrypoint-num-cpus 1 unless given")
    p.add_argument("--entrypoint-num-cpus", type=float, default=None, help="CPUs reserved for the driver")
    p.add_argument("--entrypoint-num-gpus", type=float, default=None,
                   help="GPUs reserved for the driver (the best trial's final evaluation runs there)")
    p.add_argument("--no-finalize", dest="finalize", action="store_false", help=NO_FINALIZE_HELP)
    p.add_argument("--verbose", action="store_true", help="put the trials' own output in the job log")
    p.add_argument("--follow", action="store_true",
                   help="stream the job's log until it ends; exit 0 if it SUCCEEDED, else 1")
    p.add_argument("--dry-run", action="store_true", help="validate and stage, show the job, submit nothing")
    p.set_defaults(handler=cmd_submit)


def _add_jobs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="status, logs, stop and list of the jobs on a Ray cluster",
                       description="Follow up on `sentsweep submit`: the Ray Jobs API of the cluster's head.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="a job's status, message, times and exit code")
    status.add_argument("job_id")
    logs = actions.add_parser("logs", help="a job's log (--follow: until it ends)")
    logs.add_argument("job_id")
    logs.add_argument("--follow", action="store_true",
                      help="stream until the job ends; exit 0 if it SUCCEEDED, else 1")
    stop = actions.add_parser("stop", help="stop a job (SIGTERM, then SIGKILL) and wait for it")
    stop.add_argument("job_id")
    stop.add_argument("--no-wait", dest="wait", action="store_false", help="return once the stop is asked")
    actions.add_parser("list", help="the cluster's jobs, newest first")
    for action in (status, logs, stop, actions.choices["list"]):
        _add_connection(action)
    p.set_defaults(handler=cmd_jobs)


def _connect(args: argparse.Namespace) -> ClusterJobs:
    """The cluster's jobs at ``--address`` (or the environment's), with the token (:mod:`~.cluster.credentials`)."""
    from sentsweep.cluster.client import ClusterJobs, resolve_address
    from sentsweep.cluster.credentials import find_token, plaintext_token_warning

    token, address = find_token(args.token_file, os.environ), resolve_address(args.address, os.environ)
    if warning := plaintext_token_warning(address, token):
        print(f"warning: {warning}", file=sys.stderr)
    return ClusterJobs(address, token=token)


def _secrets(jobs: ClusterJobs | None = None) -> list[str]:
    """Values of this environment's credentials (and the token in use), to redact from what is shown here."""
    from sentsweep.cluster.credentials import local_secrets

    token = [jobs.token.value] if jobs is not None and jobs.token is not None else []
    return local_secrets(os.environ) + token


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class MaskedLines:
    """Streamed text written out whole lines at a time, each masked (:func:`~sentsweep.credentials.mask_text`: URIs'
    passwords and ``secrets``): a URI or a secret split across two chunks of a stream is masked too. A carriage
    return ends a line as a newline does, so a progress bar that redraws itself with ``\\r`` is shown as it moves,
    not held back until the bar ends."""

    def __init__(self, secrets: list[str], write: Callable[[str], None] = _write) -> None:
        self.secrets, self.write, self.pending = secrets, write, ""

    def __call__(self, chunk: str) -> None:
        text = self.pending + chunk
        end = max(text.rfind("\n"), text.rfind("\r")) + 1
        complete, self.pending = text[:end], text[end:]
        if complete:
            self.write(mask_text(complete, self.secrets))

    def flush(self) -> None:
        if self.pending:
            self.write(mask_text(self.pending, self.secrets))
            self.pending = ""


def _follow(jobs: ClusterJobs, job_id: str) -> int:
    """Stream a job's log (URIs' passwords and credentials masked) until it ends; its exit status (0: SUCCEEDED)."""
    out = MaskedLines(_secrets(jobs))
    try:
        status = jobs.follow(job_id, out, notice=lambda line: print(line, file=sys.stderr))
    except KeyboardInterrupt:
        out.flush()
        print(f"\nstopped following; job {job_id} goes on (sentsweep jobs stop {job_id} --address "
              f"{jobs.address} ends it)", file=sys.stderr)
        return 130
    out.flush()
    print(f"job {job_id} {status}")
    return 0 if status == "SUCCEEDED" else 1


def _job_options(args: argparse.Namespace) -> tuple[JobOptions, list[str]]:
    """The job's options from the flags, and the names of the local credentials it does not get."""
    from sentsweep.cluster.credentials import forwarded_env, held_back
    from sentsweep.cluster.jobspec import DRIVER_NUM_CPUS, JobOptions, parse_driver_resources
    from sentsweep.platform.location import OWNER_ENV, sweep_owner

    env = forwarded_env(os.environ, args.forward_env, args.env)
    env.setdefault(OWNER_ENV, sweep_owner(os.environ))  # who submitted: part of the sweep's identity
    resources = parse_driver_resources(args.driver_resources) if args.driver_resources else None
    num_cpus = args.entrypoint_num_cpus
    if resources and num_cpus is None:
        num_cpus = DRIVER_NUM_CPUS
    options = JobOptions(ship="installed" if args.installed else "project", installer=args.installer,
                         python=args.python, finalize=args.finalize, verbose=args.verbose, env=env,
                         entrypoint_num_cpus=num_cpus, entrypoint_num_gpus=args.entrypoint_num_gpus,
                         entrypoint_resources=resources)
    return options, held_back(os.environ, env)


def cmd_submit(args: argparse.Namespace) -> int:
    from sentsweep.cluster.client import resolve_address
    from sentsweep.cluster.jobspec import build_resume_job, build_sweep_job, job_workdir, prepare_config

    if (args.config is None) == (args.resume is None):
        raise ConfigError("give either a sweep config or --resume SWEEP_DIR", field="config")
    if args.resume and (args.overrides or args.storage):
        raise ConfigError("a resumed sweep keeps its own config: drop --set and --storage", field="--resume")
    options, not_forwarded = _job_options(args)
    address = resolve_address(args.address, os.environ)
    jobs = None if args.dry_run else _connect(args)  # a missing token fails before any staging
    with job_workdir() as workdir:
        if args.resume:
            spec = build_resume_job(args.resume, options, workdir, storage_endpoint_url=args.storage_endpoint_url,
                                    tracking_uri=args.tracking_uri)
        else:
            prepared = prepare_config(args.config, args.overrides, storage=args.storage,
                                      storage_endpoint_url=args.storage_endpoint_url,
                                      tracking_uri=args.tracking_uri)
            spec = build_sweep_job(prepared, options, workdir)
        for warning in spec.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print("\n".join(spec.summary))
        if not_forwarded:
            print(f"  not sent:    {', '.join(not_forwarded)} (set here; --forward-env NAME sends one)")
        if jobs is None:
            print(f"dry run: nothing submitted (address {address})")
            return 0
        job_id = jobs.submit(spec, args.job_id)
    print(f"submitted job {job_id} to {address}")
    where = f"--address {address}" + (f" --token-file {args.token_file}" if args.token_file else "")
    if not args.follow:
        print(f"  follow:  sentsweep jobs logs {job_id} --follow {where}")
        print(f"  status:  sentsweep jobs status {job_id} {where}")
        print(f"  stop:    sentsweep jobs stop {job_id} {where}")
        if not args.resume:
            endpoint = f" --storage-endpoint-url {args.storage_endpoint_url}" if args.storage_endpoint_url else ""
            print(f"  resume after a head restart: sentsweep submit --resume SWEEP_DIR {where}{endpoint}  "
                  "(SWEEP_DIR: the folder named in the job log's first line)")
        return 0
    return _follow(jobs, job_id)


def cmd_jobs(args: argparse.Namespace) -> int:
    from sentsweep.cluster.client import describe_job, jobs_table

    jobs = _connect(args)
    # Every job of the cluster is shown, also those submitted without sentsweep (`ray job submit`): entrypoints,
    # messages and logs may carry a URI with a password, or this environment's secrets.
    if args.action == "list":
        print(jobs_table(jobs.list(), _secrets(jobs)))  # masked before the entrypoints are cut
        return 0
    if args.action == "status":  # the message may quote the job's last log lines
        print(mask_text(describe_job(jobs.info(args.job_id)), _secrets(jobs)))
        return 0
    if args.action == "stop":
        status = jobs.stop(args.job_id, wait=60.0 if args.wait else None)
        print(f"job {args.job_id}: {status}")
        return 0
    if args.follow:
        return _follow(jobs, args.job_id)
    _write(mask_text(jobs.logs(args.job_id), _secrets(jobs)))
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_submit, _add_jobs)
