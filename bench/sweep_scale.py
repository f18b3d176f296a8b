"""The platform at scale: a sweep of ``--trials`` trivial trials, ``--concurrent`` at a time, on the local cluster
of ``make test-cluster`` (:mod:`tools.harness.local_stack`: a Ray head and two worker nodes on 127.0.0.1, a real
``mlflow server`` on PostgreSQL with its artifacts proxied to the S3 endpoint, Tune's storage on that S3 endpoint
(moto) or, with ``--storage local``, a local folder), against a reference sweep of ``--reference`` trials run the
same way in the same session. Not a test: minutes, and the seconds depend on the machine.

Each sweep is the platform's real path (:func:`sentsweep.platform.driver.sweep.run_sweep` in a driver process of its
own,
:mod:`bench._scale_driver`: seeded multivariate TPE with constant liar over the CoSENT space, ASHA, the MLflow
parent and child runs, checkpoints and Tune's state on the storage), with a trial that has no
model (a weight and ``--steps`` reports), so what a trial costs is what the platform costs. Every MLflow request goes
through a counting reverse proxy on loopback (:mod:`tools.harness.counting_proxy`): real requests, counted and
timed at the server's front door. Printed, for both sweeps and as a ratio of this sweep to the reference:

- the driver's peak RSS and CPU seconds per trial;
- the experiment state: bytes of ``experiment_state-*.json`` and of the searcher's state (``searcher-state-*.pkl``,
  ``optuna_study.json``), and of the whole sweep folder (checkpoints included);
- wall seconds per trial (``Tuner.fit`` wall / trials: the platform's overhead, the trivial trial's own compute
  being the "bare trial" row), a trial's span (its MLflow run, first and last fifth of the trials) and the start-up;
- MLflow requests per trial (by endpoint below) and the server's p50 / p95 latency;
- the searcher's ``suggest`` time: its random start-up, its first and last ten model-made suggestions;
- TPE's start-up under concurrency: suggestions made before any trial finished, and how many of them TPE's model
  made (:func:`sentsweep.platform.search.samplers.build_sampler` documents the choice).

    python -m bench.sweep_scale --trials 500 --concurrent 16                  # reference: 100 trials
    python -m bench.sweep_scale --trials 500 --concurrent 16 --max-minutes 35 # else 250 trials, said so
    python -m bench.sweep_scale --trials 40 --concurrent 4 --reference 10    # a quick check
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.common import exit_on_sigterm, load_note, print_table
from tools.harness.counting_proxy import CountingProxy, Request, counting_proxy
from tools.harness.local_stack import LocalStack, local_stack
from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[1]
WORKERS, GPUS_PER_WORKER = 2, 2
#: A CPU per trial (Ray's scheduling unit here: two logical GPUs per worker place the trials on the workers).
TRIAL_CPU = 0.5


def resources(concurrent: int) -> tuple[dict[str, float], int]:
    """A trial's resources (a fraction of a logical GPU, so that ``concurrent`` trials fill the workers' GPUs and
    none goes to the head) and the CPUs each worker node offers."""
    gpu = math.floor(WORKERS * GPUS_PER_WORKER / concurrent * 10_000) / 10_000
    cpus = max(4, math.ceil(concurrent * TRIAL_CPU / WORKERS))
    return {"cpu": TRIAL_CPU, "gpu": min(gpu, 1.0)}, cpus


def sweep_yaml(folder: Path, stack: LocalStack, proxy: CountingProxy, args: argparse.Namespace, trials: int,
               storage: str) -> Path:
    """The sweep's config: the trivial method over the CoSENT space, ASHA, Optuna's default start-up."""
    name = f"scale-{trials}"
    raw = {
        "name": name, "method": "scale-trivial", "search_space": "scale-trivial", "num_samples": trials,
        "max_concurrent_trials": args.concurrent, "seed": 0, "resources": resources(args.concurrent)[0],
        "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 2, "max_t": args.steps},
        "fixed": {"max_steps": args.steps, "eval_every": 1, "test_tasks": "stsb_test"},
        "storage_path": storage, "tracking": {"uri": proxy.uri, "experiment": f"{name}-{int(time.time())}"},
        "storage_endpoint_url": stack.s3.endpoint_url if stack.s3 else None,
        "final_tasks": "stsb_test", "plots": False, "export": False, "confirm": {"top_k": 0},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def run_driver(config: Path, stack: LocalStack, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """``python -m bench._scale_driver`` to its end; its result file."""
    result, log = config.with_suffix(".result.json"), config.with_suffix(".log")
    with log.open("w") as sink:
        process = subprocess.Popen([sys.executable, "-m", "bench._scale_driver", str(config), str(result),
                                    "--address", stack.ray.address], stdout=sink, stderr=subprocess.STDOUT,
                                   cwd=config.parent, env=env, start_new_session=True)
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = -9
        finally:  # a timeout, Ctrl+C or SIGTERM: the driver's process group goes too
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    if status != 0 or not result.exists():
        raise SystemExit(f"the driver of {config.name} ended with {status}:\n{log.read_text()[-4000:]}")
    return json.loads(result.read_text())


def folder_bytes(uri: str, endpoint_url: str | None) -> dict[str, int]:
    """Bytes of the sweep folder's own files (Tune's and the searcher's state) by name, and ``"*"``: all of it."""
    import pyarrow.fs

    from sentsweep.platform.location import locate

    location = locate(uri, endpoint_url)
    fs, path = (location.filesystem, location.fs_path) if location.filesystem else \
        pyarrow.fs.FileSystem.from_uri(location.uri)
    sizes: dict[str, int] = {"*": 0}
    for info in fs.get_file_info(pyarrow.fs.FileSelector(path, recursive=True)):
        if info.type == pyarrow.fs.FileType.File:
            sizes["*"] += info.size
            relative = info.path[len(path.rstrip("/")) + 1:]
            if "/" not in relative:
                sizes[relative] = info.size
    return sizes


def state_bytes(sizes: dict[str, int]) -> tuple[int, int]:
    """(experiment_state-*.json, searcher state: searcher-state-*.pkl and the study's journal) in bytes."""
    from sentsweep.platform.search.study_store import JOURNAL_FILE

    experiment = sum(v for k, v in sizes.items() if k.startswith("experiment_state") and k.endswith(".json"))
    searcher = sum(v for k, v in sizes.items() if k.startswith("searcher-state") or k == JOURNAL_FILE)
    return experiment, searcher


def endpoint(request: Request) -> str:
    """``METHOD /api/2.0/mlflow/runs/log-batch``; artifact paths cut after the route (``.../artifacts/…``)."""
    parts = request.path.split("/")
    if "mlflow-artifacts" in parts:
        parts = parts[: parts.index("mlflow-artifacts") + 2] + ["…"]
    return f"{request.method} {'/'.join(parts)}"


def trial_spans(stack: LocalStack, experiment_id: str, parent: str) -> list[tuple[float, float]]:
    """(start, seconds) of every trial's MLflow run, by start, read from the server (not through the proxy)."""
    from mlflow import MlflowClient

    from sentsweep.tracking.vocabulary import PARENT_TAG

    runs = MlflowClient(tracking_uri=stack.mlflow.uri).search_runs(
        [experiment_id], f"tags.`{PARENT_TAG}` = '{parent}'", max_results=50_000)
    return sorted((r.info.start_time / 1000, (r.info.end_time - r.info.start_time) / 1000) for r in runs
                  if r.info.end_time)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def figures(trials: int, result: dict[str, Any], requests: list[Request], spans: list[tuple[float, float]],
            sizes: dict[str, int]) -> dict[str, Any]:
    """What the tables print, for one sweep."""
    latencies = sorted(r.seconds for r in requests)
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    calls = result["suggestions"]
    model = [c["seconds"] for c in calls if c["kind"] == "tpe"]
    fifth = max(1, len(spans) // 5)
    experiment, searcher = state_bytes(sizes)
    before_finish = [c for c in calls if c["finished"] == 0 and c["kind"] != "fixed"]
    first_model = next((i for i, c in enumerate(c for c in calls if c["kind"] != "fixed") if c["kind"] == "tpe"),
                       None)
    return {
        "trials": trials, "counts": result["counts"], "wall_s": result["wall_s"],
        "rss_mib": result["peak_rss_mib"], "rss_first_mib": result["at_first_suggestion"]["rss_mib"],
        "cpu_per_trial": (result["cpu_s"] - result["at_first_suggestion"]["cpu_s"]) / trials,
        "cpu_before_s": result["at_first_suggestion"]["cpu_s"],
        "experiment_state": experiment, "searcher_state": searcher, "folder": sizes["*"],
        "wall_per_trial": result["wall_s"] / trials,
        "steady_per_trial": (result["wall_s"] - (spans[0][0] - result["fit_started"])) / trials if spans else math.nan,
        "bare_trial_s": result["bare_trial_s"],
        "span": _median([s for _, s in spans]), "span_first": _median([s for _, s in spans[:fifth]]),
        "span_last": _median([s for _, s in spans[-fifth:]]),
        "startup_s": spans[0][0] - result["fit_started"] if spans else float("nan"),
        "requests": len(requests), "requests_per_trial": len(requests) / trials,
        "failed_requests": sum(r.status >= 500 for r in requests),
        "p50_ms": quantiles[49] * 1000, "p95_ms": quantiles[94] * 1000,
        "by_endpoint": collections.Counter(endpoint(r) for r in requests),
        "suggest_random_ms": _median([c["seconds"] for c in calls if c["kind"] == "random"]) * 1000,
        "suggest_first_ms": _median(model[:10]) * 1000, "suggest_last_ms": _median(model[-10:]) * 1000,
        "study_at_first": next((c["trials"] for c in calls if c["kind"] == "tpe"), 0),
        "study_at_last": calls[-1]["trials"] if calls else 0,
        "before_finish": len(before_finish), "model_before_finish": sum(c["kind"] == "tpe" for c in before_finish),
        "first_model": first_model,
        "finished_at_first_model": next((c["finished"] for c in calls if c["kind"] == "tpe"), None),
    }


def run_sweeps(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The reference sweep, then this one, on one stack (started here, stopped by PID at the end)."""
    with tempfile.TemporaryDirectory(prefix="sweep-scale-") as tmp:
        root = Path(tmp)
        pythonpath = repo_pythonpath()
        node_env = {"PYTHONPATH": pythonpath, "SENTSWEEP_CACHE": str(root / "node-cache"), "HF_HUB_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        cpus = resources(args.concurrent)[1]
        with local_stack(s3=args.storage == "s3", workers=WORKERS, gpus_per_worker=GPUS_PER_WORKER,
                         cpus_per_worker=cpus, node_env=node_env, mlflow_workers=args.mlflow_workers) as stack, \
                counting_proxy(stack.mlflow.uri) as proxy:
            os.environ.update({k: v for k, v in stack.mlflow.client_env().items() if k != "MLFLOW_TRACKING_URI"})
            env = {**os.environ, **stack.client_env(), **node_env}
            storage = stack.s3.uri("scale") if stack.s3 else str(root / "ray_results")
            print(f"stack up: Ray {stack.ray.address} (head + {WORKERS} workers x {cpus} CPUs, {GPUS_PER_WORKER} "
                  f"logical GPUs), MLflow {stack.mlflow.uri} on PostgreSQL ({args.mlflow_workers} workers) through "
                  f"{proxy.uri}, storage {storage}", flush=True)
            out: list[dict[str, Any]] = []
            for trials in (args.reference, args.trials):
                projected = out[0]["startup_s"] + out[0]["steady_per_trial"] * trials if out else 0.0
                if args.max_minutes and projected > args.max_minutes * 60:
                    print(f"{trials} trials would take ~{projected / 60:.0f} min (the reference's start-up and "
                          f"{out[0]['steady_per_trial']:.2f} s per trial after it), over --max-minutes "
                          f"{args.max_minutes:g}: measuring {args.fallback} trials instead", flush=True)
                    trials = args.fallback
                config = sweep_yaml(root, stack, proxy, args, trials, storage)
                started = time.time()
                result = run_driver(config, stack, env, args.timeout)
                requests = proxy.requests(since=started)
                spans = trial_spans(stack, result["experiment_id"], result["parent_run_id"])
                sizes = folder_bytes(result["sweep_uri"], stack.s3.endpoint_url if stack.s3 else None)
                row = figures(trials, result, requests, spans, sizes)
                print(f"{trials} trials done in {row['wall_s']:.0f} s: {row['counts']}; {load_note()}\n"
                      f"{json.dumps(row, default=float)}", flush=True)  # kept should a later sweep not end
                out.append(row)
            return out


def _ratio(this: float, reference: float) -> str:
    return f"{this / reference:.2f}x" if reference and math.isfinite(reference) and math.isfinite(this) else "-"


def report(reference: dict[str, Any], this: dict[str, Any], args: argparse.Namespace) -> None:
    n, r = this["trials"], reference["trials"]
    rows = [
        ["driver peak RSS (MiB)", reference["rss_mib"], this["rss_mib"]],
        ["  RSS at the first suggestion (MiB)", reference["rss_first_mib"], this["rss_first_mib"]],
        ["  growth per trial after it (KiB)", (reference["rss_mib"] - reference["rss_first_mib"]) * 1024 / r,
         (this["rss_mib"] - this["rss_first_mib"]) * 1024 / n],
        ["driver CPU seconds per trial, from the first suggestion on", reference["cpu_per_trial"],
         this["cpu_per_trial"]],
        ["  before it (start-up: imports, MLflow parent run, Ray)", reference["cpu_before_s"], this["cpu_before_s"]],
        ["experiment_state-*.json (bytes)", reference["experiment_state"], this["experiment_state"]],
        ["  per trial", reference["experiment_state"] / r, this["experiment_state"] / n],
        ["searcher state: searcher-state-*.pkl + optuna_study.json (bytes)", reference["searcher_state"],
         this["searcher_state"]],
        ["sweep folder, checkpoints included (bytes per trial)", reference["folder"] / r, this["folder"] / n],
        ["wall seconds per trial (Tuner.fit wall / trials)", reference["wall_per_trial"], this["wall_per_trial"]],
        ["  without the start-up ((wall - start-up) / trials)", reference["steady_per_trial"],
         this["steady_per_trial"]],
        ["  the trivial trial bare (s, its own compute)", reference["bare_trial_s"], this["bare_trial_s"]],
        ["trial span, median (s: its MLflow run)", reference["span"], this["span"]],
        ["  first fifth of the trials", reference["span_first"], this["span_first"]],
        ["  last fifth of the trials", reference["span_last"], this["span_last"]],
        ["start-up: fit to the first trial's run (s)", reference["startup_s"], this["startup_s"]],
        ["MLflow requests per trial", reference["requests_per_trial"], this["requests_per_trial"]],
        ["  requests that failed (5xx)", reference["failed_requests"], this["failed_requests"]],
        ["MLflow server latency p50 (ms)", reference["p50_ms"], this["p50_ms"]],
        ["MLflow server latency p95 (ms)", reference["p95_ms"], this["p95_ms"]],
        ["suggest, random start-up, median (ms)", reference["suggest_random_ms"], this["suggest_random_ms"]],
        [f"suggest, first 10 by TPE's model, median (ms; study of {this['study_at_first']})",
         reference["suggest_first_ms"], this["suggest_first_ms"]],
        [f"suggest, last 10 by TPE's model, median (ms; study of {this['study_at_last']})",
         reference["suggest_last_ms"], this["suggest_last_ms"]],
    ]
    print_table(f"Sweep at scale: {n} trivial trials ({args.steps} reports each), {args.concurrent} concurrent, "
                f"against {r} (same stack, same session); storage {args.storage}",
                ["measure", f"{r} trials", f"{n} trials", f"{n} / {r}"],
                [[name, a, b, _ratio(b, a)] for name, a, b in rows])
    print(f"\nsuggest time, last 10 vs first 10 model-made suggestions of the {n}-trial sweep: "
          f"{_ratio(this['suggest_last_ms'], this['suggest_first_ms'])} (study of {this['study_at_last']} vs "
          f"{this['study_at_first']} trials); the random start-up: {this['suggest_random_ms']:.1f} ms")
    endpoints = sorted(set(reference["by_endpoint"]) | set(this["by_endpoint"]),
                       key=lambda e: -this["by_endpoint"][e])
    print_table("MLflow requests per trial, by endpoint", ["request", f"{r} trials", f"{n} trials"],
                [[e, reference["by_endpoint"][e] / r, this["by_endpoint"][e] / n] for e in endpoints])
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.search.samplers import random_suggestions

    fewest, most = random_suggestions(SweepConfig(name="s", method="m", num_samples=n,
                                                  max_concurrent_trials=args.concurrent))
    first = "none was made by the model" if this["first_model"] is None else \
        f"the first model-made one was searched suggestion #{this['first_model'] + 1}, with " \
        f"{this['finished_at_first_model']} trials finished"
    print(f"\nTPE start-up with {args.concurrent} concurrent trials and constant liar ({n}-trial sweep): "
          f"{this['before_finish']} searched suggestions (the space's first point aside) were made before any trial "
          f"finished, {this['model_before_finish']} of them by TPE's model; {first} (random_suggestions: "
          f"{fewest} to {most} random)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--reference", type=int, default=None, help="trials of the reference sweep (trials / 5)")
    parser.add_argument("--steps", type=int, default=4, help="reports per trial")
    parser.add_argument("--storage", choices=("s3", "local"), default="s3")
    parser.add_argument("--mlflow-workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per sweep")
    parser.add_argument("--max-minutes", type=float, default=None, help="when --trials would take longer (at the "
                        "reference's wall per trial), measure --fallback trials instead, and say so")
    parser.add_argument("--fallback", type=int, default=250)
    args = parser.parse_args()
    args.reference = args.reference or max(1, args.trials // 5)
    exit_on_sigterm()  # the stack (Ray nodes, servers) and the driver are then stopped by their PIDs
    reference, this = run_sweeps(args)
    report(reference, this, args)


if __name__ == "__main__":
    main()
