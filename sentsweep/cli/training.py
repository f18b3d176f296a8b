"""``sentsweep evaluate`` (an encoder on STS and SentEval) and ``sentsweep train`` (one training, no Ray)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sentsweep.cli.common import add_overrides


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="evaluate an encoder on STS and SentEval tasks",
        description="Embed, score and print a table of STS Spearman x100 / SentEval accuracy.",
    )
    p.add_argument(
        "--model",
        default="minilm",
        help="'minilm' (offline package), a local folder, or a hub id such as bert-base-uncased",
    )
    p.add_argument(
        "--tasks",
        default="sts",
        help="comma-separated: groups 'sts', 'senteval' or tasks such as stsb,sickr,mr (default: sts)",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="SentEval-layout data root (default: $SENTSWEEP_DATA, else the bundled sample)",
    )
    p.add_argument(
        "--pooling",
        default=None,
        help="cls, mean, max, first_last or prompt_mask (default: mean, or the pooling saved with the model)",
    )
    p.add_argument(
        "--prompt-template",
        default=None,
        help="template with {sentence} and {mask}, for --pooling prompt_mask",
    )
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per sentence (default: a saved model's own, else the model's token limit)")
    p.add_argument("--batch-size", type=int, default=128, help="sentences per encoding batch (default: %(default)s)")
    add_senteval_options(p)
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when present)")
    p.add_argument("--out", default=None, help="write the result as JSON (.json: metrics, each metric's protocol "
                   "under info.protocols, the table) or the table (.csv)")
    p.add_argument("--backend", choices=("sentsweep", "mteb"), default="sentsweep",
                   help="mteb: MTEB's STS evaluation (pip install 'sentsweep[mteb]') on the local STS files as "
                   "custom tasks; other --tasks names are registered MTEB tasks (hub data)")
    p.set_defaults(handler=cmd_evaluate)


def add_senteval_options(p: argparse.ArgumentParser) -> None:
    """``--senteval-setting``, ``--senteval-kfold`` ...: one flag per trial-config ``senteval_*`` field
    (:data:`~sentsweep.evaluation.senteval.SENTEVAL_OPTION_FIELDS`), typed and described as the trial config
    declares it, defaulting to None (the option's own default); ``--kfold`` is kept as ``--senteval-kfold``."""
    import typing

    from sentsweep.evaluation.senteval.settings import (
        CLASSIFIER_SETTINGS,
        MRPC_FEATURES,
        SENTEVAL_OPTION_FIELDS,
        SENTEVAL_OPTION_HELP,
        SentEvalOptions,
    )

    hints = typing.get_type_hints(SentEvalOptions)
    choices = {"setting": tuple(CLASSIFIER_SETTINGS), "mrpc_features": MRPC_FEATURES}
    defaults = SentEvalOptions()
    for field, option in SENTEVAL_OPTION_FIELDS.items():
        kind = next((t for t in typing.get_args(hints[option]) if t is not type(None)), hints[option])
        described = SENTEVAL_OPTION_HELP[option]
        flags = [f"--{field.replace('_', '-')}"] + (["--kfold"] if option == "kfold" else [])
        shown = "" if "default" in described else f" (default: {getattr(defaults, option)})"
        p.add_argument(*flags, dest=field, type=kind, default=None, choices=choices.get(option),
                       help=described + shown)


def senteval_arguments(args: argparse.Namespace) -> dict[str, object]:
    """The SentEval options given on the command line, by their :func:`sentsweep.evaluation.evaluate` name."""
    from sentsweep.evaluation.senteval import SENTEVAL_OPTION_FIELDS

    return {option: getattr(args, field) for field, option in SENTEVAL_OPTION_FIELDS.items()
            if getattr(args, field, None) is not None}


def build_encoder(
    model: str,
    *,
    pooling: str | None = None,
    prompt_template: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
):
    """The embedder of ``--model`` through :func:`sentsweep.trainables.registry.load_encoder` (any run
    folder of any method, a model folder, ``minilm`` or a hub id); the options given override a
    transformer encoder's saved settings."""
    from sentsweep.trainables.registry import load_encoder

    given = {"pooling": pooling, "prompt_template": prompt_template, "max_length": max_length}
    return load_encoder(model, device=device, **{k: v for k, v in given.items() if v is not None})


class _Progress:
    """A tqdm bar driven by the evaluators' ``progress(done, total)`` callback."""

    def __init__(self, desc: str) -> None:
        self.desc = desc
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        from tqdm.auto import tqdm

        if self.bar is None or self.bar.total != total or done < self.bar.n:
            self.close()
            self.bar = tqdm(total=total, desc=self.desc, unit="sent", file=sys.stderr, leave=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def cmd_evaluate(args: argparse.Namespace) -> int:
    from sentsweep.errors import ConfigError
    from sentsweep.evaluation import SentEvalOptions, evaluate
    from sentsweep.evaluation.suite import split_tasks

    if args.backend != "mteb":
        try:
            split_tasks(args.tasks)  # before loading a model: a typo should fail fast
        except ValueError as exc:
            raise ConfigError(str(exc), field="--tasks") from None
    senteval = senteval_arguments(args)
    try:
        SentEvalOptions(**senteval)
    except ValueError as exc:
        raise ConfigError(str(exc), field="--senteval-*") from None
    _warn_if_sample(args.data_dir)
    encoder = build_encoder(
        args.model,
        pooling=args.pooling,
        prompt_template=args.prompt_template,
        max_length=args.max_length,
        device=args.device,
    )
    if args.backend == "mteb":
        from sentsweep.evaluation.mteb_backend import evaluate_mteb

        result = evaluate_mteb(encoder, args.tasks, data_dir=args.data_dir, batch_size=args.batch_size)
        return _show(result, args.out)
    progress = _Progress("encoding")
    try:
        result = evaluate(
            encoder,
            args.tasks,
            data_dir=args.data_dir,
            progress=progress,
            batch_size=args.batch_size,
            **senteval,
        )
    finally:
        progress.close()
    return _show(result, args.out)


def _warn_if_sample(data_dir: str | None) -> None:
    """One line on stderr when the data resolve to the bundled sample."""
    from sentsweep.platform.driver.preflight import sample_data_warning

    warning = sample_data_warning(data_dir)
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)


def _show(result: Any, out_path: str | None) -> int:
    """Print ``result`` and write it to ``--out`` (flat JSON, or the table as .csv)."""
    print(result)
    if out_path:
        out = Path(out_path)
        if out.suffix.lower() == ".csv":
            out.parent.mkdir(parents=True, exist_ok=True)
            result.to_csv(out)
            print(f"wrote {out}")
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            result.to_json(out)
            print(f"wrote {out}")
    return 0


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="run one training without Ray (prints the dev curve and test table)",
                       description="Train one model from a run config (method: cosent|...; the trial "
                       "settings at the top level), e.g. configs/cosent-stsb.yaml.")
    p.add_argument("config", help="YAML run config")
    add_overrides(p, "--set lr=3e-5 --set loss=mse")
    p.add_argument("--output", default=None, help="folder for best weights, history and metrics "
                   "(default: runs/<config name>)")
    p.set_defaults(handler=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from sentsweep.trainables.registry import get_method
    from sentsweep.yaml_io import apply_overrides, read_yaml

    raw = apply_overrides(read_yaml(args.config), args.overrides)
    method = get_method(str(raw.pop("method", "cosent")))
    _warn_if_sample(raw.get("data_dir"))
    output = Path(args.output or Path("runs") / Path(args.config).stem)
    result, final = method.train_standalone(raw, output_dir=output, source=args.config,
                                            log=lambda line: print(line, flush=True))
    print("\ndev curve:")
    for row in result.state.history:
        dev = "  ".join(f"{k} {v:.2f}" for k, v in row.items() if k.endswith(("_dev", "_trial")))
        print(f"  step {int(row['step']):>6}  train_loss {row.get('train_loss', float('nan')):.4f}  {dev}")
    print("\nfinal (best checkpoint):")
    for key, value in sorted(final.items()):
        if key not in ("final", "step"):  # the sweep's marker of a last report; the step is the curve's
            print(f"  {key:<16} {value:.2f}")
    print(f"\nwrote {output}/ (best/, history.jsonl, final_metrics.json)")
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_evaluate, _add_train)
