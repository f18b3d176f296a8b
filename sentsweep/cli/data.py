"""``sentsweep data prepare`` (stage a paper-scale dataset once) and ``sentsweep data list`` (what can be, and is)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sentsweep.errors import DataError


def _add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "data",
        help="stage training data once where every trial reads it (wiki1m, NLI, BookCorpus, GloVe 840B)",
        description="Stage a dataset from the Hugging Face hub (or local files) into the sweep's storage, "
        "memory-mapped; configs then name it prepared:NAME.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    prep = actions.add_parser(
        "prepare",
        help="stage dataset NAME (from the hub unless --from)",
        description="Stage dataset NAME under ROOT/NAME. Known names: wiki1m, snli-train, mnli-train, nli-train, "
        "bookcorpus, glove-840b (sentsweep data list). A dataset of your own needs --kind and --from (or --hub); "
        "scored pairs also --score-range (docs/own-data.md).",
    )
    prep.add_argument("name", help="dataset name, e.g. wiki1m")
    prep.add_argument("--to", default=None, metavar="ROOT",
                      help="storage root: a folder or s3://bucket/prefix (default: $SENTSWEEP_PREPARED, else "
                      "~/.cache/sentsweep/prepared)")
    prep.add_argument("--from", dest="from_path", default=None, metavar="PATH",
                      help="read local files: the file, or a folder laid out as the hub repository")
    prep.add_argument("--kind", default=None, help="scored-pairs, corpus, labelled-pairs or vectors (a dataset "
                      "outside the catalogue)")
    prep.add_argument("--format", dest="fmt", default=None,
                      help="csv, tsv, jsonl, parquet-scored (scored pairs; default from the file's suffix); lines, "
                      "documents, parquet-text (corpus); parquet-nli; glove (default: the catalogue's)")
    prep.add_argument("--hub", default=None, metavar="REPO",
                      help="a hub dataset of your own, read from its parquet conversion (SUBSET/SPLIT/*.parquet)")
    prep.add_argument("--subset", default=None, help="with --hub: the dataset's subset (config) (default: default)")
    prep.add_argument("--split", default=None, help="with --hub: the dataset's split (default: train)")
    prep.add_argument("--columns", default=None, metavar="A,B,SCORE",
                      help="the columns to read: scored pairs SENTENCE1,SENTENCE2,SCORE (default: "
                      "sentence1,sentence2,score); parquet-text TEXT (default: text)")
    prep.add_argument("--score-range", default=None, metavar="LOW,HIGH",
                      help="scored pairs: the scale of the scores, e.g. 0,5; a score outside it is refused")
    prep.add_argument("--hub-cache", default=None, help="Hugging Face cache folder (default: the hub's own)")
    prep.add_argument("--revision", default=None, help="hub revision (default: the catalogue's)")
    prep.add_argument("--force", action="store_true", help="prepare again even when a complete copy exists")
    prep.set_defaults(handler=cmd_prepare)
    listing = actions.add_parser("list", help="the catalogue, and which datasets (the catalogue's and your own) "
                                 "are staged under ROOT")
    listing.add_argument("--to", default=None, metavar="ROOT", help="storage root (as for prepare)")
    listing.set_defaults(handler=cmd_list)


def cmd_prepare(args: argparse.Namespace) -> int:
    from sentsweep.data.catalogue import CustomSource
    from sentsweep.data.prepare import prepare
    from sentsweep.data.scored_files import ScoreRange

    custom = None
    if args.hub is None and (args.subset is not None or args.split is not None):
        raise DataError("--subset and --split pick the files of a hub dataset: give --hub REPO too")
    if args.kind is not None or args.hub is not None:
        if args.kind is None:
            raise DataError("--hub needs --kind (scored-pairs or corpus)")
        score_range = ScoreRange.parse(args.score_range) if args.score_range is not None else None
        custom = CustomSource(
            args.kind, hub=args.hub, subset=args.subset or "default", split=args.split or "train",
            columns=tuple(c.strip() for c in args.columns.split(",")) if args.columns is not None else None,
            score_range=(score_range.low, score_range.high) if score_range is not None else None)
    elif args.columns is not None or args.score_range is not None:
        raise DataError("--columns and --score-range describe a dataset of your own: give --kind too")
    result = prepare(args.name, to=args.to, from_path=args.from_path, fmt=args.fmt, custom=custom,
                     hub_cache=args.hub_cache, revision=args.revision, force=args.force,
                     log=lambda line: print(line, flush=True))
    print(result.summary())
    print(f"configs name it: prepared:{args.name}" + ("" if args.to is None else f"  (with SENTSWEEP_PREPARED="
                                                        f"{args.to}, or prepared:{result.uri})"))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from sentsweep.data.catalogue import CATALOGUE
    from sentsweep.data.prepare import staged, staged_elsewhere

    for name, entry in CATALOGUE.items():
        store, manifest = staged(name, args.to)
        state = f"staged, {manifest['rows']:,} rows" if manifest else "not staged"
        sources = " + ".join(s.repo_id for s in entry.sources)
        print(f"{name:<12} {entry.kind:<15} {state:<24} {sources}  ({store.uri})")
    for store, manifest in staged_elsewhere(args.to):
        state = f"staged, {manifest.get('rows', 0):,} rows"
        print(f"{manifest.get('name', '?'):<12} {manifest.get('kind', '?'):<15} {state:<24} "
              f"{manifest.get('description', 'your own')}  ({store.uri})")
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_data,)
