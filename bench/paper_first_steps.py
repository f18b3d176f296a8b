"""A paper config's first training steps on one device: does the paper's setting start and train there?

The trial is the config's reference trial (its space's first point on top of its ``fixed`` settings), with the
model replaced by ``--model`` (default ``minilm``, the offline model: the papers' ``bert-base-uncased`` needs the
hub), trained for ``--steps`` steps with AMP on (``--no-amp``: fp32), one dev evaluation at the end and SICK-R
trial (500 pairs) as its test suite. Prints the device, the wall seconds of setup and of training, steps/s and the
peak CUDA memory (on a GPU).

    python -m bench.paper_first_steps [--config configs/paper-cosent-stsb.yaml] [--steps 50] [--device cuda]
"""

from __future__ import annotations

import argparse
import time

from bench.common import print_table
from sentsweep.platform.config import load_sweep_config
from sentsweep.platform.driver.specs import resolve_specs, space_points, trial_param_space
from sentsweep.trainables.registry import get_method


def first_trial(config_path: str, model: str, steps: int, device: str, amp: bool, dev_pairs: int) -> dict:
    """The reference trial's settings of ``config_path``, cut to ``steps`` steps on ``device``."""
    config = load_sweep_config(config_path).model_copy(update={"model": model})
    _, space = resolve_specs(config, config_path)
    return {**trial_param_space(config), **space_points(space)[0], "max_steps": steps, "eval_every": steps,
            "amp": amp, "device": device, "test_tasks": "sickr_trial", "max_dev_pairs": dev_pairs,
            "system_metrics": False}


def main(argv: list[str] | None = None) -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/paper-cosent-stsb.yaml")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--dev-pairs", type=int, default=200, help="dev pairs of the one evaluation")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    raw = first_trial(args.config, args.model, args.steps, args.device, args.amp, args.dev_pairs)
    method = get_method(load_sweep_config(args.config).method)
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    result, _ = method.train_standalone(raw, log=lambda line: None)
    seconds = time.perf_counter() - start
    peak = f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if args.device.startswith("cuda") else "-"
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    steps, trained = result.state.step, result.seconds
    print_table(f"First steps of {args.config} ({args.model}, {name}, amp {'on' if args.amp else 'off'})",
                ["steps", "setup s", "training s (one dev evaluation included)", "steps/s", "peak CUDA memory"],
                [[steps, seconds - trained, trained, steps / trained, peak]])

if __name__ == "__main__":
    main()
