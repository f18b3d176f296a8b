"""What several sub-commands share, written once: options (name, default and help) and the JSON output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

NO_FINALIZE_HELP = "skip the best trial's evaluation, plots, export and registration"


def add_overrides(p: argparse.ArgumentParser, example: str) -> None:
    """``--set KEY=VALUE`` (repeatable) into ``args.overrides``; ``example`` shows typical ones."""
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help=f"override a setting (repeatable), e.g. {example}")


def add_data_dir(p: argparse.ArgumentParser) -> None:
    """``--data-dir``: the data root of corpora and evaluation sets."""
    p.add_argument("--data-dir", default=None, help="data root (default: $SENTSWEEP_DATA, else the sample)")


def add_parser_cache(p: argparse.ArgumentParser) -> None:
    """``--spacy-model`` and ``--no-cache`` (into ``args.cache``) of the commands that run spaCy."""
    p.add_argument("--spacy-model", default=None, help="spaCy package or folder (default: the offline one)")
    p.add_argument("--no-cache", dest="cache", action="store_false", help="neither read nor write the cache")


def add_driver(p: argparse.ArgumentParser) -> None:
    """``--address``, ``--verbose`` and ``--no-finalize`` of a command that drives a sweep here."""
    p.add_argument("--address", default=None, help="Ray cluster address (default: start Ray locally)")
    p.add_argument("--verbose", action="store_true", help="show the trials' own output")
    p.add_argument("--no-finalize", dest="finalize", action="store_false", help=NO_FINALIZE_HELP)
    p.add_argument("--forward-credentials", action="store_true",
                   help="with --address (or $RAY_ADDRESS): send the credentials taken off the config's URIs to the "
                   "cluster's workers in the job's runtime_env, which anyone who can reach the cluster's dashboard "
                   "can read (default: refused; give the nodes their own)")


def add_allow_change(p: argparse.ArgumentParser) -> None:
    """``--allow-change FIELD,...`` (into ``args.allow_change``): config fields a resume may change."""
    p.add_argument("--allow-change", default=[], type=lambda text: [n.strip() for n in text.split(",") if n.strip()],
                   metavar="FIELD,...", help="let a resume change these fields of the sweep's stored config "
                   "(time_budget_s, num_samples, budget, stop_grace_s and notify can; Ray Tune keeps "
                   "max_concurrent_trials)")


def write_error_log(exc: BaseException, argv: list[str]) -> Path:
    """The full (chained) traceback of an unexpected error in ``<cache>/logs/sentsweep-<time>-<pid>.log``."""
    import os
    import time
    import traceback

    from sentsweep.config import cache_dir
    from sentsweep.credentials import mask_text, secret_values

    folder = cache_dir() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"sentsweep-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = "sentsweep " + " ".join(argv) + "\n\n" + "".join(traceback.format_exception(exc))
    path.write_text(mask_text(text, secret_values(os.environ)))  # no credential on disk
    return path


def write_json(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys in ``path`` (its folder created), then ``wrote PATH``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


def add_sweep_folder(p: argparse.ArgumentParser) -> None:
    """The positional sweep folder and the S3 endpoint it may need (``resume``, ``sync``, ``dashboard``)."""
    p.add_argument("sweep_dir", help="the sweep folder printed by `sentsweep sweep` (local or s3://...)")
    p.add_argument("--storage-endpoint-url", default=None, help="S3 endpoint (MinIO) for an s3:// folder")


def add_trust_storage(p: argparse.ArgumentParser) -> None:
    """``--trust-storage`` of a command that restores a sweep's pickled state (``resume``, ``sweep
    --resume-interrupted``: :func:`~sentsweep.platform.folder.trust.refuse_untrusted_state`)."""
    p.add_argument("--trust-storage", action="store_true",
                   help="resume an s3:// sweep folder outside the cluster: its Tune and searcher state are pickles, "
                   "run on load, so only when no job you do not trust can write that storage (inside a Kubernetes "
                   "pod this is not needed)")


def add_tracking_declaration(p: argparse.ArgumentParser) -> None:
    """``--tracking-uri`` of a command that starts from a stored sweep folder (``resume``, ``sync``): the server the
    user trusts with their MLflow login (:mod:`~sentsweep.platform.folder.trust`)."""
    p.add_argument("--tracking-uri", default=None, metavar="URI",
                   help="the MLflow server the sweep was tracked at, as you know it; must equal the folder's "
                   "(required for an s3:// folder unless $MLFLOW_TRACKING_URI names it: a folder in shared storage "
                   "is not trusted with your login)")
