"""Trials packed on one device: one MiniLM CoSENT trial holding it alone against ``--packed`` trials sharing it
(a fractional ``resources.gpu`` of 1 / packed), each a real sweep (Ray Tune, MLflow sqlite, checkpoints).

Prints each sweep's wall seconds (``Tuner.fit``), trials per minute and the throughput of the packed sweep over the
single one: above 1 when packing pays. Without CUDA the same sweeps run on the CPU (``gpu: 0``), which only checks
that the path works.

    python -m bench.gpu_packing [--packed 4] [--steps 40] [--model minilm|tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path

from bench.common import print_table
from bench.sweep_overhead import sweep_config


def packed_sweep(root: Path, trials: int, steps: int, model: str, gpus: int) -> float:
    """Wall seconds of a sweep of ``trials`` trials at once, sharing ``gpus`` GPUs (0: the CPU)."""
    from sentsweep.platform.config import ResourcesConfig
    from sentsweep.platform.driver.sweep import run_sweep

    args = argparse.Namespace(trials=trials, concurrency=trials, steps=steps, model=model)
    config = sweep_config(root, args)
    gpu = gpus / trials if gpus else 0.0
    config = config.model_copy(update={"resources": ResourcesConfig(cpu=1.0, gpu=gpu), "name": f"packed{trials}"})
    outcome = run_sweep(config, echo=lambda line: None, preflight=False)
    if outcome.counts.get("finished") != trials:
        raise SystemExit(f"the sweep of {trials} trials ended {outcome.counts}")
    return outcome.wall_seconds


def main(argv: list[str] | None = None) -> None:
    import ray
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packed", type=int, default=4)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--model", default="minilm", help="'minilm', 'tiny' (random 2-layer) or a folder")
    args = parser.parse_args(argv)

    from sentsweep.platform.driver.ray_session import local_ray_settings

    gpus = 1 if torch.cuda.is_available() else 0
    device = torch.cuda.get_device_name() if gpus else "cpu"
    rows = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as session:
        session.enter_context(local_ray_settings())  # loopback addresses and the session's own token
        ray.init(address="local", num_cpus=max(2, args.packed), num_gpus=gpus, include_dashboard=False,
                 log_to_driver=False, logging_level="WARNING")
        try:
            for trials in (1, args.packed):
                wall = packed_sweep(Path(tmp) / f"n{trials}", trials, args.steps, args.model, gpus)
                rows.append([trials, f"{gpus / trials if gpus else 0:g}", wall, 60 * trials / wall])
        finally:
            ray.shutdown()
    print_table(f"Trials packed on one device ({device}; CoSENT on {args.model}, {args.steps} steps each)",
                ["trials at once", "gpu per trial", "sweep wall s", "trials/min"], rows)
    print(f"\npacked throughput / single = {rows[1][3] / rows[0][3]:.2f}x")


if __name__ == "__main__":
    main()
