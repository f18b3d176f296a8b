"""What one MLflow tracking server sustains: N concurrent trial loggers against a real ``mlflow server`` on
PostgreSQL with basic auth (:mod:`tools.harness.mlflow_server`, shaped like ``k8s/base/mlflow.yaml``), at 1 and
4 workers. Not a test (minutes, and the figures depend on the machine).

Each logger is a separate process with its own :class:`mlflow.MlflowClient`, logged in as a non-admin user
with EDIT on the experiment (as the sweeps are on Kubernetes), and does what the driver does for one trial
(:mod:`sentsweep.platform.tracking.trial_runs`): create its run, log its params in one batch, log a batch of metrics
at every report, set the run terminated. Requests per second count every request of every logger between
the first start and the last end; latencies are per request.

    python -m bench.tracking_load                           # 16 loggers x 40 reports, workers 1 and 4
    python -m bench.tracking_load --loggers 32 --workers 4 --interval 0.5
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import secrets
import statistics
import time
from dataclasses import dataclass

from bench.common import print_table

SWEEPS_USER = "sweeps"


@dataclass(frozen=True)
class LoadShape:
    loggers: int
    reports: int
    params: int
    metrics: int
    interval: float  # seconds between a logger's reports (0: as fast as the server answers)


def _trial(uri: str, password: str, experiment_id: str, shape: LoadShape, index: int,
           start: mp.synchronize.Barrier, out: mp.Queue) -> None:
    """One trial's logging; puts (first start, last end, [latency per request], failed requests) on ``out``."""
    os.environ.update(MLFLOW_TRACKING_USERNAME=SWEEPS_USER, MLFLOW_TRACKING_PASSWORD=password)
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=uri)
    latencies: list[float] = []
    failed = 0

    def timed(call, *args, **kwargs):
        nonlocal failed
        begin = time.perf_counter()
        try:
            result = call(*args, **kwargs)
        except MlflowException:  # e.g. the server's connection pool timing out: counted, not timed
            failed += 1
            return None
        latencies.append(time.perf_counter() - begin)
        return result

    start.wait()
    began = time.perf_counter()
    run = None
    while run is None and failed < 5:
        run = timed(client.create_run, experiment_id, run_name=f"trial-{index}")
    if run is None:
        out.put((began, time.perf_counter(), latencies, failed))
        return
    run_id = run.info.run_id
    timed(client.log_batch, run_id, params=[Param(f"p{i}", str(i * 0.1)) for i in range(shape.params)])
    for step in range(shape.reports):
        now = int(time.time() * 1000)
        timed(client.log_batch, run_id, metrics=[Metric(f"m{i}", step * 0.01 + i, now, step)
                                                 for i in range(shape.metrics)])
        if shape.interval:
            time.sleep(shape.interval)
    timed(client.set_terminated, run_id, "FINISHED")
    out.put((began, time.perf_counter(), latencies, failed))


def _grant_sweeps_user(uri: str, admin_env: dict[str, str], experiment: str) -> tuple[str, str]:
    """A non-admin user with EDIT on a new experiment (what the bootstrap Job sets up); (experiment id, password)."""
    os.environ.update(admin_env)
    from mlflow import MlflowClient
    from mlflow.server import get_app_client

    experiment_id = MlflowClient(tracking_uri=uri).create_experiment(experiment)
    password = secrets.token_hex(12)
    auth = get_app_client("basic-auth", tracking_uri=uri)
    auth.create_user(SWEEPS_USER, password)
    auth.grant_user_permission(SWEEPS_USER, "experiment", experiment_id, "EDIT")
    return experiment_id, password


def measure(workers: int, shape: LoadShape, pool: tuple[int, int]) -> dict[str, float]:
    """Start a server with ``workers`` and ``pool`` (size, overflow), run the loggers, stop it (and them);
    requests/s, latency percentiles and failed requests."""
    from tools.harness.mlflow_server import mlflow_server

    started = time.perf_counter()
    with mlflow_server(workers=workers, pool_size=pool[0], max_overflow=pool[1]) as server:
        ready = time.perf_counter() - started
        experiment_id, password = _grant_sweeps_user(server.uri, server.client_env(), f"load-w{workers}")
        context = mp.get_context("spawn")
        barrier, out = context.Barrier(shape.loggers), context.Queue()
        procs = [context.Process(target=_trial, args=(server.uri, password, experiment_id, shape, i, barrier, out))
                 for i in range(shape.loggers)]
        try:
            for proc in procs:
                proc.start()
            results = [out.get(timeout=1800) for _ in procs]
        finally:
            for proc in procs:
                proc.join(timeout=30)
                if proc.is_alive():
                    proc.terminate()
    begin, end = min(r[0] for r in results), max(r[1] for r in results)
    latencies = sorted(x for r in results for x in r[2])
    quantiles = statistics.quantiles(latencies, n=100)
    return {"workers": workers, "server_start_s": ready, "requests": len(latencies),
            "failed": sum(r[3] for r in results), "seconds": end - begin,
            "rps": len(latencies) / (end - begin), "p50_ms": quantiles[49] * 1000, "p95_ms": quantiles[94] * 1000,
            "max_ms": latencies[-1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loggers", type=int, default=16, help="concurrent trial loggers (processes)")
    parser.add_argument("--reports", type=int, default=40, help="metric batches per trial")
    parser.add_argument("--params", type=int, default=20, help="params per trial (one batch)")
    parser.add_argument("--metrics", type=int, default=4, help="metrics per report")
    parser.add_argument("--interval", type=float, default=0.0, help="seconds between a trial's reports")
    parser.add_argument("--workers", default="1,4", help="server worker counts to measure, comma-separated")
    parser.add_argument("--pool", default="3,2", help="MLFLOW_SQLALCHEMYSTORE_POOL_SIZE,MAX_OVERFLOW "
                        "(default: the k8s overlays')")
    args = parser.parse_args()
    shape = LoadShape(args.loggers, args.reports, args.params, args.metrics, args.interval)
    size, overflow = (int(x) for x in args.pool.split(","))
    rows = []
    for workers in (int(w) for w in args.workers.split(",")):
        figures = measure(workers, shape, (size, overflow))
        print(f"workers={workers}: {figures}", flush=True)
        rows.append([workers, f"{size}+{overflow}", shape.loggers, figures["requests"], figures["failed"],
                     figures["seconds"], figures["rps"], figures["p50_ms"], figures["p95_ms"], figures["max_ms"]])
    print_table(f"MLflow server on PostgreSQL, basic auth (cache on): {shape.loggers} trial loggers x "
                f"{shape.reports} reports of {shape.metrics} metrics, interval {shape.interval:g} s, "
                f"{os.cpu_count()} CPUs",
                ["workers", "pool", "loggers", "requests ok", "failed", "seconds", "requests/s", "p50 ms", "p95 ms",
                 "max ms"], rows)


if __name__ == "__main__":
    main()
