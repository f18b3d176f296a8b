"""Per-trial overhead of a sentsweep sweep against the same trials run bare, one after the other.

Same run, same trials: a sweep of ``--trials`` CoSENT trials (FIFO, ``--concurrency`` at a time, Optuna
over the ``cosent`` space, MLflow sqlite tracking, Ray checkpoints) runs first; then each trial's exact
config is trained again in this process without Ray or MLflow (``run_trial`` with no reporter and no
logger), with the threads Ray gives a trial (``resources.cpu``). Prints, from the MLflow child runs'
start and end times:

- start-up: from ``Tuner.fit`` to the first trial's run (Ray actor start and imports);
- in-trial overhead: a trial's run time in the sweep minus the same trial run bare (reporting,
  checkpoints to the Ray storage, MLflow logging);
- between trials: from one trial's end to the next one's start (actor reuse, scheduling);
- per trial, end to end: (sweep wall - sum of bare trials) / trials, start-up included (goal <= 1 s
  without start-up);
- wall / compute: the sweep's wall time over the sum of bare trial times.

    python -m bench.sweep_overhead [--trials 4] [--steps 8] [--model minilm|tiny] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import print_table
from sentsweep.platform.config import SweepConfig
from sentsweep.tracking.vocabulary import PARENT_TAG, TRIAL_ID_TAG


def tiny_model(root: Path) -> str:
    """A random 2-layer BERT (hidden 64) on MiniLM's vocabulary: trials of a second or two, so the
    overhead is not lost in the noise of the compute."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentsweep.methods.encoders import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    tokenizer.save_pretrained(root)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128)
    BertModel(config).save_pretrained(root, safe_serialization=True)
    return str(root)


def sweep_config(root: Path, args: argparse.Namespace) -> SweepConfig:
    return SweepConfig.model_validate({
        "name": "overhead", "method": "cosent", "search_space": "cosent", "num_samples": args.trials,
        "max_concurrent_trials": args.concurrency, "scheduler": {"type": "fifo"},
        "model": tiny_model(root / "tiny") if args.model == "tiny" else args.model,
        "fixed": {"max_steps": args.steps, "eval_every": max(1, args.steps // 2), "max_length": 48,
                  "max_train_pairs": 256, "max_dev_pairs": 50, "test_tasks": "stsb_test"},
        "storage_path": str(root / "ray_results"), "max_failures": 0, "plots": False, "export": False,
        "final_tasks": "", "startup_trials": args.trials,
        "confirm": {"top_k": 0},  # the search's trials only: a confirmation stage's re-runs are a sweep of their own
        "tracking": {"uri": f"sqlite:///{root / 'mlruns.db'}", "artifact_location": str(root / "mlartifacts"),
                     "experiment": "overhead"},
    })


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--model", default="minilm", help="'minilm', 'tiny' (random 2-layer) or a folder")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args(argv)

    import ray
    import torch
    from mlflow import MlflowClient

    from sentsweep.platform.driver.ray_session import local_ray_settings
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.trainables.registry import get_method

    method = get_method("cosent")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = sweep_config(root, args)
        MlflowClient(tracking_uri=config.tracking.uri).search_experiments()  # create the schema untimed
        session = contextlib.ExitStack()  # the token of the session's Ray, for as long as it runs
        session.enter_context(local_ray_settings())  # loopback addresses and the session's own token
        ray.init(address="local", num_cpus=max(2, args.concurrency), include_dashboard=False,
                 log_to_driver=False, logging_level="WARNING")
        outcome = run_sweep(config, echo=lambda line: None)
        fit_started = outcome.fit_started
        client = MlflowClient(tracking_uri=config.tracking.uri)
        query = f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'"
        runs = sorted(client.search_runs([outcome.experiment_id], query), key=lambda r: r.info.start_time)
        ray.shutdown()
        session.close()

        torch.set_num_threads(int(config.resources.cpu))  # what Ray gives each trial (OMP_NUM_THREADS)
        bare: list[float] = []
        for run in runs:
            trial = next(r for r in outcome.results if r.metrics.get("trial_id") == run.data.tags[TRIAL_ID_TAG])
            raw = {k: v for k, v in trial.config.items() if k != "tracking"}
            start = time.perf_counter()
            method.train_standalone(raw, log=lambda line: None)
            bare.append(time.perf_counter() - start)

    spans = [(r.info.end_time - r.info.start_time) / 1000 for r in runs]
    gaps = [(b.info.start_time - a.info.end_time) / 1000 for a, b in zip(runs, runs[1:], strict=False)]
    startup = runs[0].info.start_time / 1000 - fit_started
    in_trial = [s - b for s, b in zip(spans, bare, strict=True)]
    n = len(runs)
    per_trial = (outcome.wall_seconds - sum(bare)) / n
    steady = statistics.mean(in_trial) + (statistics.mean(gaps) if gaps else 0.0)
    print_table(
        f"Sweep overhead ({n} CoSENT trials on {args.model}, {args.steps} steps, concurrency "
        f"{args.concurrency}, MLflow sqlite)",
        ["measure", "seconds"],
        [["sweep wall (Tuner.fit)", outcome.wall_seconds], ["sum of bare trials", sum(bare)],
         ["start-up (fit to first trial)", startup], ["in-trial overhead, mean", statistics.mean(in_trial)],
         ["between trials, mean", statistics.mean(gaps) if gaps else 0.0],
         ["overhead per trial, steady state", steady], ["overhead per trial, start-up included", per_trial]],
    )
    print(f"\noverhead per trial (steady state) = {steady:.2f} s (goal <= 1 s); "
          f"wall / compute = {outcome.wall_seconds / sum(bare):.2f}")


if __name__ == "__main__":
    main()
