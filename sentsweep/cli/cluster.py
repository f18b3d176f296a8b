"""The cluster sub-commands: ``submit`` and ``jobs status | logs | stop | list`` (see
:mod:`sentsweep.platform.cluster`).

Handlers return an exit status and let :class:`~sentsweep.errors.SentsweepError` propagate (the CLI prints
it on one line). This module is where the environment is read (the dashboard address, the credentials to
forward); the library takes mappings. Ray is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sentsweep.cli.common import NO_FINALIZE_HELP, add_overrides
from sentsweep.errors import ConfigError

if TYPE_CHECKING:
    from sentsweep.platform.cluster.client import ClusterJobs

ADDRESS_HELP = "Ray dashboard address (default: $RAY_API_SERVER_ADDRESS, else $RAY_ADDRESS, else " \
               "http://127.0.0.1:8265)"


def _add_submit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="run a sweep on a remote Ray cluster (Ray Jobs API)",
                       description="Validate a sweep config here, then submit `sentsweep sweep` as a Ray job "
                       "with the project (or only the config) as its working dir, the storage and tracking "
                       "options baked into the config, and credentials forwarded as masked environment "
                       "variables. --resume continues an interrupted sweep from its folder instead.")
    p.add_argument("config", nargs="?", default=None, help="sweep YAML (see configs/demo.yaml)")
    p.add_argument("--resume", default=None, metavar="SWEEP_DIR",
                   help="continue the sweep in this folder (s3://... or a shared path) instead of a new one")
    p.add_argument("--address", default=None, help=ADDRESS_HELP)
    add_overrides(p, "--set num_samples=64")
    p.add_argument("--storage", default=None, metavar="URI",
                   help="storage_path for Tune's state: s3://bucket/prefix or a path on a volume all nodes "
                   "mount (needed to resume after a head restart)")
    p.add_argument("--storage-endpoint-url", default=None, metavar="URL",
                   help="S3-compatible endpoint for an s3:// storage (MinIO), e.g. http://minio:9000")
    p.add_argument("--tracking-uri", default=None, metavar="URI",
                   help="MLflow tracking URI for the job (default: the config's tracking.uri)")
    code = p.add_mutually_exclusive_group()
    code.add_argument("--installed", action="store_true",
                      help="the cluster's image already has sentsweep: ship only the config")
    code.add_argument("--image", default=None, metavar="IMAGE",
                      help="run the job in this container image (Ray image_uri; needs podman on the nodes)")
    deps = p.add_mutually_exclusive_group()
    deps.add_argument("--pip", dest="installer", action="store_const", const="pip",
                      help="install the pinned requirements (pyproject.toml) into the job's environment")
    deps.add_argument("--uv", dest="installer", action="store_const", const="uv",
                      help="like --pip, with uv")
    p.add_argument("--python", default="python", help="the cluster's interpreter for the entrypoint "
                   "(default: %(default)s)")
    p.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                   help="also forward this variable (repeatable); values are never printed")
    p.add_argument("--no-forward-env", dest="forward_env", action="store_false",
                   help="do not copy the MLflow/AWS/HF credentials from this environment")
    p.add_argument("--job-id", default=None, help="the job's submission id (default: Ray picks one)")
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
        action.add_argument("--address", default=None, help=ADDRESS_HELP)
    p.set_defaults(handler=cmd_jobs)


def _secrets() -> list[str]:
    """Values of this environment's forwardable credentials, to redact from logs shown here."""
    from sentsweep.platform.cluster.credentials import FORWARDED_ENV

    return [os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)]


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _follow(jobs: ClusterJobs, job_id: str) -> int:
    """Stream a job's log (credentials redacted) until it ends; its exit status (0: SUCCEEDED)."""
    from sentsweep.platform.cluster.client import exit_status
    from sentsweep.platform.cluster.credentials import redact

    secrets = _secrets()
    try:
        status = jobs.follow(job_id, lambda chunk: _write(redact(chunk, secrets)))
    except KeyboardInterrupt:
        print(f"\nstopped following; job {job_id} goes on (sentsweep jobs stop {job_id} --address "
              f"{jobs.address} ends it)", file=sys.stderr)
        return 130
    print(f"job {job_id} {status}")
    return exit_status(status)


def cmd_submit(args: argparse.Namespace) -> int:
    from sentsweep.platform.cluster.client import ClusterJobs, resolve_address
    from sentsweep.platform.cluster.credentials import forwarded_env
    from sentsweep.platform.cluster.jobspec import JobOptions, build_resume_job, build_sweep_job
    from sentsweep.platform.cluster.prepare import prepare_config
    from sentsweep.platform.cluster.staging import job_workdir

    if (args.config is None) == (args.resume is None):
        raise ConfigError("give either a sweep config or --resume SWEEP_DIR", field="config")
    if args.resume and (args.overrides or args.storage or args.tracking_uri):
        raise ConfigError("a resumed sweep keeps its own config: drop --set, --storage and --tracking-uri",
                          field="--resume")
    env = forwarded_env(os.environ, args.env, forward_defaults=args.forward_env)
    ship = "image" if args.image else "installed" if args.installed else "project"
    options = JobOptions(ship=ship, image=args.image, installer=args.installer, python=args.python,
                         finalize=args.finalize, verbose=args.verbose, env=env,
                         entrypoint_num_cpus=args.entrypoint_num_cpus, entrypoint_num_gpus=args.entrypoint_num_gpus)
    address = resolve_address(args.address, os.environ)
    with job_workdir() as workdir:
        if args.resume:
            spec = build_resume_job(args.resume, options, workdir, storage_endpoint_url=args.storage_endpoint_url)
        else:
            prepared = prepare_config(args.config, args.overrides, storage=args.storage,
                                      storage_endpoint_url=args.storage_endpoint_url,
                                      tracking_uri=args.tracking_uri)
            spec = build_sweep_job(prepared, options, workdir)
        for warning in spec.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print("\n".join(spec.summary))
        if args.dry_run:
            print(f"dry run: nothing submitted (address {address})")
            return 0
        jobs = ClusterJobs(address)
        job_id = jobs.submit(spec, args.job_id)
    print(f"submitted job {job_id} to {address}")
    where = f"--address {address}"
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
    from sentsweep.platform.cluster.client import ClusterJobs, resolve_address
    from sentsweep.platform.cluster.credentials import redact
    from sentsweep.platform.cluster.job_tables import describe_job, jobs_table

    jobs = ClusterJobs(resolve_address(args.address, os.environ))
    if args.action == "list":
        print(jobs_table(jobs.list()))
        return 0
    if args.action == "status":  # the message may quote the job's last log lines
        print(redact(describe_job(jobs.info(args.job_id)), _secrets()))
        return 0
    if args.action == "stop":
        status = jobs.stop(args.job_id, wait=60.0 if args.wait else None)
        print(f"job {args.job_id}: {status}")
        return 0
    if args.follow:
        return _follow(jobs, args.job_id)
    _write(redact(jobs.logs(args.job_id), _secrets()))
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_submit, _add_jobs)
