"""Does the search pay? A tabular benchmark of the platform's searcher and scheduler on real CoSENT trials.

``record`` trains every point of a grid (scale x learning rate x pooling x batch size) once and stores each dev
curve with its seconds in ``bench/data/cosent_grid.csv`` (:mod:`bench.search_record`; resumable). ``replay`` runs
the sweep's own TPE (:func:`sentsweep.platform.search.searcher.build_searcher`'s sampler, paper defaults first) with
Ray's
ASHA rungs, TPE alone, random search with and without ASHA, and grid search against the table, 30 seeds each
(:mod:`bench.search_replay`), and prints the trial-seconds each needed to come within 0.2 of the table's best
and its regret after a fixed budget, with the ratio to random search measured in the same run.

    python -m bench.search_table record [--limit N]   # resumes the table in the repository with its settings
    python -m bench.search_table record-multiview --table T.csv [--part 1/2]   # the multi-view grid
    python -m bench.search_table merge PART.csv PART.csv --table OUT.csv   # parts recorded side by side
    python -m bench.search_table replay [--only pooling=mean] [--repeats 30] [--concurrency 1,16] [--grace-period 2]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from bench.common import exit_on_sigterm
from bench.search_grid import COSTS, DEFAULT_TABLE


def _this_command() -> str:
    """The command line that made a table, for its provenance."""
    return "python -m bench.search_table " + shlex.join(sys.argv[1:])


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def _strings(text: str) -> tuple[str, ...]:
    return tuple(text.split(","))


def _add_record(sub: argparse._SubParsersAction) -> None:
    from bench.search_record import Grid, RecordSettings

    p = sub.add_parser("record", help="train the grid's trials (skips those the table holds)")
    s, g = RecordSettings(), Grid()
    p.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    p.add_argument("--steps", type=int, default=s.steps)
    p.add_argument("--reports", type=int, default=s.reports, help="dev evaluations per trial")
    p.add_argument("--train-pairs", type=int, default=s.train_pairs)
    p.add_argument("--dev-pairs", type=int, default=s.dev_pairs)
    p.add_argument("--max-length", type=int, default=s.max_length)
    p.add_argument("--data-dir", default=None, help="default: $SENTSWEEP_DATA, else the bundled sample")
    p.add_argument("--scale", type=_floats, default=g.scale, help="comma-separated grid values")
    p.add_argument("--lr", type=_floats, default=g.lr)
    p.add_argument("--pooling", type=_strings, default=g.pooling)
    p.add_argument("--batch-size", type=_ints, default=g.batch_size)
    p.add_argument("--limit", type=int, default=None, help="record at most this many grid points")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a loaded 2-core machine)")
    p.set_defaults(handler=_cmd_record)


def _cmd_record(args: argparse.Namespace) -> None:
    import torch

    from bench.search_record import Grid, RecordSettings, record

    torch.set_num_threads(args.threads)
    settings = RecordSettings(steps=args.steps, reports=args.reports, train_pairs=args.train_pairs,
                              dev_pairs=args.dev_pairs, max_length=args.max_length, data_dir=args.data_dir)
    grid = Grid(scale=args.scale, lr=args.lr, pooling=args.pooling, batch_size=args.batch_size)
    record(args.table, settings, grid, _this_command(), log=lambda m: print(m, flush=True), limit=args.limit)


def _add_record_multiview(sub: argparse._SubParsersAction) -> None:
    from bench.search_record_multiview import MultiviewGrid, MultiviewSettings

    p = sub.add_parser("record-multiview", help="train the multi-view grid's trials, some with several seeds")
    s, g = MultiviewSettings(), MultiviewGrid()
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--steps", type=int, default=s.steps)
    p.add_argument("--reports", type=int, default=s.reports, help="dev evaluations per trial")
    p.add_argument("--sentences", type=int, default=s.sentences, help="the corpus's first N sentences")
    p.add_argument("--views", type=_strings, default=g.views)
    p.add_argument("--hidden-size", type=_ints, default=g.hidden_size)
    p.add_argument("--lr", type=_floats, default=g.lr)
    p.add_argument("--part", default="1/1", help="K/N: record every N-th trial from the K-th (N processes side by "
                   "side, each into its own --table; merge them after)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--data-dir", default=None)
    p.set_defaults(handler=_cmd_record_multiview)


def _cmd_record_multiview(args: argparse.Namespace) -> None:
    import torch

    from bench.search_record_multiview import MultiviewGrid, MultiviewSettings, record_multiview

    torch.set_num_threads(1)
    index, _, parts = args.part.partition("/")
    settings = MultiviewSettings(steps=args.steps, reports=args.reports, sentences=args.sentences,
                                 data_dir=args.data_dir)
    grid = MultiviewGrid(views=args.views, hidden_size=args.hidden_size, lr=args.lr)
    record_multiview(args.table, settings, grid, _this_command(), log=lambda m: print(m, flush=True),
                     part=(int(index), int(parts)), limit=args.limit)


def _add_merge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge", help="join tables recorded side by side (one record process per core) into one")
    p.add_argument("parts", type=Path, nargs="+", help="the recorded tables (disjoint grid points, same report steps)")
    p.add_argument("--table", type=Path, required=True, help="the merged table (a new file)")
    p.set_defaults(handler=_cmd_merge)


def _cmd_merge(args: argparse.Namespace) -> None:
    from bench.search_grid import merge_tables

    try:
        count = merge_tables(args.parts, args.table, _this_command())
    except ValueError as error:
        raise SystemExit(f"merge: {error}") from None
    print(f"{count} configurations from {len(args.parts)} tables in {args.table}")


def _add_replay(sub: argparse._SubParsersAction) -> None:
    from bench.search_replay import SearchSettings

    p = sub.add_parser("replay", help="replay the searchers and schedulers against the table")
    d = SearchSettings()
    p.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    p.add_argument("--repeats", type=int, default=30, help="seeds per strategy")
    p.add_argument("--cost", choices=COSTS, default=COSTS[0], help="the column a trial's cost is read from "
                   "(default: CPU seconds, which the load of a shared machine disturbs far less than wall seconds)")
    p.add_argument("--concurrency", type=lambda t: [int(v) for v in t.split(",")], default=[1, 16])
    p.add_argument("--tolerance", type=float, default=0.2, help="the target: the table's best minus this")
    p.add_argument("--budget", type=float, default=0.1,
                   help="the regret's budget as a share of the full grid's trial-seconds")
    p.add_argument("--cap", type=float, default=2.0, help="each replay stops after this share of the full grid's "
                   "trial-seconds (grid search: once the grid is done)")
    p.add_argument("--startup-trials", type=int, default=d.startup_trials,
                   help="TPE's random trials first (default: the sweep's default; Optuna's 10 when unset)")
    p.add_argument("--grace-period", type=int, default=d.grace_period)
    p.add_argument("--reduction-factor", type=float, default=d.reduction_factor)
    p.add_argument("--tpe-gamma", choices=("hyperopt", "optuna"), default=d.tpe_gamma,
                   help="TPE's good-group size (the sweep's tpe_gamma)")
    p.add_argument("--strategies", default=None, help="comma-separated names (default: all)")
    p.add_argument("--only", action="append", default=[], metavar="SETTING=V1,V2",
                   help="replay on the sub-grid where SETTING takes these values (repeatable), e.g. batch_size=16")
    p.set_defaults(handler=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> None:
    import optuna

    from bench.common import print_table
    from bench.search_grid import read_table
    from bench.search_replay import STRATEGIES, ReplaySpace, SearchSettings
    from bench.search_summary import HEADER, run_all, table_rows

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table = read_table(args.table, args.cost)
    for only in args.only:
        name, _, values = only.partition("=")
        table = table.restricted(name, values.split(","))
    if not table.is_complete():
        raise SystemExit(f"{args.table}: the grid is incomplete ({len(table.curves)} points): record the rest first")
    try:
        ReplaySpace.for_table(table)
    except ValueError as error:
        raise SystemExit(f"{args.table}: {error}") from None
    full = sum(c.seconds[-1] for c in table.curves.values())
    settings = SearchSettings(startup_trials=args.startup_trials, grace_period=args.grace_period,
                              reduction_factor=args.reduction_factor, tpe_gamma=args.tpe_gamma)
    wanted = set(args.strategies.split(",")) if args.strategies else None
    strategies = [s for s in STRATEGIES if wanted is None or s.name in wanted or s.sampler in wanted]
    summaries = run_all(table, strategies, repeats=args.repeats, concurrencies=args.concurrency, cap_s=args.cap * full,
                        budget_s=args.budget * full, tolerance=args.tolerance, settings=settings,
                        log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"table {args.table} (cost: {args.cost}): {len(table.curves)} configurations x {table.reports} reports, best "
          f"{table.best:.2f}, target {table.best - args.tolerance:.2f}; full grid {full:.0f} trial-s; budget "
          f"{args.budget * full:.0f} trial-s; cap {args.cap * full:.0f} trial-s; {args.repeats} seeds; TPE startup "
          f"{settings.startup_trials or 'Optuna default (10)'}, gamma {settings.tpe_gamma}, ASHA grace "
          f"{settings.grace_period}, reduction "
          f"{settings.reduction_factor:g}")
    print_table("Does the search pay? (trial-seconds to within "
                f"{args.tolerance} of the table's best)", HEADER, table_rows(summaries))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_record(sub)
    _add_record_multiview(sub)
    _add_merge(sub)
    _add_replay(sub)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    args.handler(args)


if __name__ == "__main__":
    main()
