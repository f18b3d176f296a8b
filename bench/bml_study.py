"""Does BML act at CPU scale? SNCSE trained twice from the same seed, with BML and with its weight at 0.

SNCSE on the offline all-MiniLM-L6-v2 (``minilm``) and the shared Wikipedia
sample, through the project's own pieces: :class:`~sentsweep.trainables.sncse.SncseTask` (prompt views, training
MLP, negations, :func:`~sentsweep.methods.sncse.sncse_objective`) run by
:class:`~sentsweep.trainables.loop.TrainingLoop`. Both runs use ``loss: bml`` with the paper's alpha 0.1, beta 0.3,
tau 0.05, lr 1e-5; the InfoNCE run sets lambda to 0 (eq. 7 with lambda = 0 is eq. 3, and the same code computes the
BML diagnostics), the BML run keeps lambda at the family default (1e-3 for BERT-family MiniLM). Same seed, hence the
same MLP init, batches and dropout masks at step 1.

Per step (``steps.csv``): the loss, ``bml_active`` (share of the batch's pairs with cos_pos - cos_neg outside
[alpha, beta], where BML's gradient is non-zero; for the InfoNCE run: where it would be) and ``cos_gap`` (mean
cos(z1, z2) - cos(z1, z3), after the MLP). At the end: STS-B dev of the final weights and SNCSE's Figure 4 on the
evaluation embeddings (anchor prompt, raw mask state): cos(s, neg s) and cos(s, random) on 5000 sentences of the
seven STS tasks (:func:`~sentsweep.evaluation.analysis.sample_sts_sentences`), saved as ``cosines.csv``.
``compare`` draws both runs' histograms into one PNG, writes the histogram as CSV, the trend per block of steps and
the peaks (the paper: 0.98 without BML, 0.90 with).

    python -m bench.bml_study train --loss infonce --out runs/bml-study/infonce [--steps 1000] [--batch-size 32]
    python -m bench.bml_study train --loss bml --out runs/bml-study/bml
    python -m bench.bml_study untrained --out runs/bml-study           # optional: where both runs start
    python -m bench.bml_study compare runs/bml-study/infonce runs/bml-study/bml --out runs/bml-study
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.common import exit_on_sigterm, print_table
from sentsweep.evaluation.analysis import summary
from sentsweep.methods.sncse import SncseModel
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.optimizer import seed_everything
from sentsweep.trainables.sncse import SNCSE, SncseConfig, SncseTask, run_diagnostics

#: The two runs: the BML weight lambda (None: the family default of eq. 7).
LAMBDAS: dict[str, float | None] = {"infonce": 0.0, "bml": None}
STEP_COLUMNS = ("step", "loss", "infonce", "bml", "bml_active", "cos_pos", "cos_neg", "cos_gap", "seconds")
#: Paper Figure 4 peaks of cos(s, neg s).
PAPER_PEAKS = {"infonce": 0.98, "bml": 0.90}
HIST_BINS = 50


class RecordingTask(SncseTask):
    """An :class:`SncseTask` with a fixed lambda that writes every step's diagnostics to a CSV as it trains."""

    def __init__(self, config: SncseConfig, lam: float | None, steps_csv: Path, stop_file: Path | None = None) -> None:
        super().__init__(config, log=print)
        if lam is not None:
            self.lam = lam
        self.stop_file = stop_file
        self.loop: TrainingLoop | None = None
        self._file = steps_csv.open("w", newline="")
        self._rows = csv.DictWriter(self._file, STEP_COLUMNS, extrasaction="ignore")
        self._rows.writeheader()
        self._start = time.perf_counter()
        self.step = 0

    def loss(self, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        value, diag = super().loss(batch)
        self.step += 1
        self._rows.writerow({**diag, "step": self.step, "loss": float(value.detach()),
                             "seconds": round(time.perf_counter() - self._start, 2)})
        self._file.flush()
        self._maybe_stop()
        return value, diag

    def _maybe_stop(self) -> None:
        """End the run after step N when ``stop_file`` holds N (the learning-rate schedule stays that of
        the full step budget: the run is the first N steps of it)."""
        if self.loop is None or self.stop_file is None or not self.stop_file.exists():
            return
        try:
            last = int(self.stop_file.read_text().strip())
        except ValueError:
            return
        if self.step >= last:
            self.loop.total_steps = self.step

    def close(self) -> None:
        self._file.close()


def study_config(args: argparse.Namespace, out: Path) -> SncseConfig:
    """The trial config of one run: the paper's SNCSE settings at a CPU-sized batch and step budget."""
    raw: dict[str, Any] = {
        "model": args.model, "loss": "bml", "batch_size": args.batch_size, "max_length": args.max_length,
        "lr": args.lr, "seed": args.seed, "corpus": args.corpus, "max_steps": args.steps,
        "eval_every": args.steps, "diagnostic_sentences": args.diagnostic_sentences, "diagnostic_tasks": "",
        "data_dir": args.data_dir, "output_dir": str(out), "device": "cpu", "max_dev_pairs": args.max_dev_pairs,
    }
    return SNCSE.parse(raw)


def write_cosines(path: Path, negation: np.ndarray, random: np.ndarray) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["negation_cos", "random_cos"])
        writer.writerows(zip(negation.round(6), random.round(6), strict=True))


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = study_config(args, out)
    seed_everything(config.seed)  # before the task, as the trainable: the MLP is initialised there
    lam = args.lam if args.lam is not None else LAMBDAS[args.loss]
    task = RecordingTask(config, lam, out / "steps.csv",
                         Path(args.stop_file) if args.stop_file else None)
    if args.baseline:  # the untrained model's Figure 4 (both runs start from it)
        base = run_diagnostics(task.model, config, None, task.negator)
        write_cosines(out / "cosines_untrained.csv", base.negation_cos, base.random_cos)
    loop = task.loop = TrainingLoop(task, config.loop_config(), log=print)
    start = time.perf_counter()
    result = loop.run()
    seconds = time.perf_counter() - start
    loop.cleanup()
    task.close()
    diag = run_diagnostics(task.model, config, None, task.negator)
    write_cosines(out / "cosines.csv", diag.negation_cos, diag.random_cos)
    final = {
        "loss": args.loss, "lambda": task.lam, "steps": result.state.step, "step_budget": args.steps,
        "batch_size": args.batch_size,
        "max_length": args.max_length, "lr": args.lr, "seed": args.seed, "train_seconds": seconds,
        "steps_per_second": result.state.step / seconds, "threads": args.threads,
        "sentences": len(task.sentences), "dev": result.state.history[-1] if result.state.history else {},
        "negation_cos": summary(diag.negation_cos), "random_cos": summary(diag.random_cos),
    }
    (out / "run.json").write_text(json.dumps(final, indent=2) + "\n")
    print(json.dumps({k: final[k] for k in ("loss", "steps", "train_seconds", "steps_per_second")}))


def untrained(args: argparse.Namespace) -> None:
    """The untrained model's Figure 4 (where both runs start), as ``cosines_untrained.csv``."""
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = study_config(args, out)
    seed_everything(config.seed)
    model = SncseModel(config.model, max_length=config.max_length, eval_max_length=config.eval_max_length,
                       device="cpu", eval_amp=False)
    base = run_diagnostics(model, config)
    write_cosines(out / "cosines_untrained.csv", base.negation_cos, base.random_cos)
    print(json.dumps({"negation_cos": summary(base.negation_cos), "random_cos": summary(base.random_cos)}))


def read_steps(path: Path) -> dict[str, np.ndarray]:
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) if r[k] else np.nan for r in rows]) for k in STEP_COLUMNS}


def read_cosines(path: Path) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, 0], data[:, 1]


def kde_peak(values: np.ndarray) -> float:
    """The mode of a Gaussian kernel density estimate (Scott's bandwidth): a histogram peak that does not
    depend on the binning."""
    from scipy.stats import gaussian_kde

    grid = np.linspace(float(values.min()), float(values.max()), 2001)
    return float(grid[np.argmax(gaussian_kde(values)(grid))])


def plot_runs(named: dict[str, np.ndarray], path: Path) -> Path:
    """Two panels of outlined histograms (density): cos(s, neg s) per run with the paper's Figure-4 peaks
    marked, and cos(s, random) per run."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), dpi=120)
    FigureCanvasAgg(fig)
    panels = fig.subplots(1, 2)
    runs = list(dict.fromkeys(label.split(", ", 1)[1] for label in named))
    colours = {run: f"C{i}" for i, run in enumerate(runs)}  # one colour per run in both panels
    for ax, kind in zip(panels, ("negation", "random"), strict=True):
        chosen = {label: v for label, v in named.items() if label.startswith(kind)}
        lo = min(float(v.min()) for v in chosen.values())
        hi = 1.0 if kind == "negation" else max(float(v.max()) for v in chosen.values())
        edges = np.linspace(lo, hi, HIST_BINS + 1)
        for label, v in chosen.items():
            run = label.split(", ", 1)[1]
            ax.hist(v, bins=edges, density=True, histtype="step", linewidth=1.5, color=colours[run],
                    linestyle="--" if run == "bml" else "-",
                    label=f"{label.split(', ', 1)[1]}: peak {kde_peak(v):.3f}, median {np.median(v):.3f}")
        if kind == "negation":
            for run, peak in PAPER_PEAKS.items():
                ax.axvline(peak, color="grey", linestyle=":", linewidth=1)
                ax.annotate(f"paper {run} {peak}", (peak, 0), xytext=(2, 40 if run == "bml" else 60),
                            textcoords="offset points", fontsize=7, color="grey", rotation=90)
        ax.set_xlabel(f"cos(s, {'neg s' if kind == 'negation' else 'random s'})")
        ax.set_ylabel("density")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("SNCSE on MiniLM, same seed: InfoNCE only (lambda 0) vs BML (evaluation embeddings, "
                 f"{len(next(iter(named.values())))} STS sentences)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    return path


def compare(args: argparse.Namespace) -> None:
    """One PNG with both runs' cos(s, neg s) (and cos(s, random)), the histogram CSV, trends and peaks."""
    runs = {"infonce": Path(args.infonce), "bml": Path(args.bml)}
    runs.update(dict(extra.split("=", 1) for extra in args.extra))  # type: ignore[arg-type]
    runs = {name: Path(folder) for name, folder in runs.items()}
    out = Path(args.out)
    cosines = {name: read_cosines(folder / "cosines.csv") for name, folder in runs.items()}
    start = [f for f in (out / "cosines_untrained.csv", runs["infonce"] / "cosines_untrained.csv") if f.exists()]
    named: dict[str, np.ndarray] = {}
    untrained = {"untrained": read_cosines(start[0])} if start else {}
    named.update({f"negation, {name}": neg for name, (neg, _) in {**untrained, **cosines}.items()})
    named.update({f"random, {name}": rnd for name, (_, rnd) in {**untrained, **cosines}.items()})
    png = plot_runs(named, out / "bml_study_hist.png")
    edges = np.linspace(min(float(v.min()) for v in named.values()), 1.0, 2 * HIST_BINS + 1)
    with (out / "bml_study_hist.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["bin_low", "bin_high", *named])
        counts = [np.histogram(v, bins=edges)[0] for v in named.values()]
        writer.writerows([f"{lo:.4f}", f"{hi:.4f}", *(int(c[i]) for c in counts)]
                         for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)))
    steps = {name: read_steps(folder / "steps.csv") for name, folder in runs.items()}
    block = args.block
    n = min(len(s["step"]) for s in steps.values())
    rows = []
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        rows.append([f"{lo + 1}-{hi}"] + [float(np.nanmean(steps[name][key][lo:hi]))
                                          for name in runs for key in ("bml_active", "cos_gap", "loss")])
    print_table(f"per-step diagnostics, mean per block of {block} steps",
                ["steps"] + [f"{name} {key}" for name in runs for key in ("bml_active", "cos_gap", "loss")], rows)
    meta = {name: json.loads((folder / "run.json").read_text()) for name, folder in runs.items()}
    peak_rows = [[label, kde_peak(v), summary(v)["mode"], summary(v)["mean"], summary(v)["median"],
                  PAPER_PEAKS.get(label.split(", ")[1], float("nan")) if label.startswith("negation") else ""]
                 for label, v in named.items()]
    print_table("cos(s, neg s) / cos(s, random) on the Figure-4 sentences",
                ["distribution", "peak (KDE mode)", "peak (fullest of 50 bins)", "mean", "median", "paper peak"],
                peak_rows)
    print_table("runs", ["run", "lambda", "steps", "batch", "train s", "steps/s", "STS-B dev (final)"],
                [[name, m["lambda"], m["steps"], m["batch_size"], m["train_seconds"], m["steps_per_second"],
                  m["dev"].get("stsb_dev", float("nan"))] for name, m in meta.items()])
    print(f"\nhistogram: {png}\nhistogram CSV: {out / 'bml_study_hist.csv'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("train", help="one run (InfoNCE only, or with BML)")
    run.add_argument("--loss", choices=sorted(LAMBDAS), required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--lam", type=float, default=None, help="BML weight instead of the run's (0 / family default)")
    run.add_argument("--steps", type=int, default=1000)
    run.add_argument("--batch-size", type=int, default=32)
    run.add_argument("--max-length", type=int, default=32)
    run.add_argument("--lr", type=float, default=1e-5)
    run.add_argument("--seed", type=int, default=42)
    run.add_argument("--model", default="minilm")
    run.add_argument("--corpus", default="enwiki")
    run.add_argument("--data-dir", default=None)
    run.add_argument("--diagnostic-sentences", type=int, default=5000)
    run.add_argument("--max-dev-pairs", type=int, default=None, help="STS-B dev pairs of the final dev figure")
    run.add_argument("--threads", type=int, default=1)
    run.add_argument("--baseline", action="store_true", help="also the untrained model's Figure 4")
    run.add_argument("--stop-file", default=None,
                     help="a file that may be written during the run with a step N: training ends after step N "
                          "(the schedule stays that of --steps); for a machine too slow for the whole budget")
    base = sub.add_parser("untrained", help="the untrained model's Figure 4 only")
    for action in run._actions:  # the same options as a run (model, data, sentences, threads)
        if action.dest not in ("help", "loss", "baseline", "stop_file", "lam"):
            base._add_action(action)
    both = sub.add_parser("compare", help="the two runs side by side")
    both.add_argument("infonce")
    both.add_argument("bml")
    both.add_argument("--out", required=True)
    both.add_argument("--extra", action="append", default=[], metavar="NAME=DIR", help="more runs to show")
    both.add_argument("--block", type=int, default=100, help="steps per row of the trend table")
    args = parser.parse_args()
    exit_on_sigterm()
    {"train": train, "untrained": untrained, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
