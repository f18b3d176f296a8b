"""The sub-commands that prepare or inspect a method's inputs: ``negate``, ``parse`` and ``neighbours``.

``negate`` and ``parse`` fill the same caches the trainables read (keyed by corpus content, model and
rules version), so running them once before a sweep means no trial parses anything.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from sentsweep.cli.common import add_data_dir, add_parser_cache, write_json


def _add_negate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("negate", help="negate a corpus with the SNCSE spaCy rules (fills the cache)",
                       description="Write sentence<TAB>negation pairs and the per-rule counts; trials "
                       "of an SNCSE sweep on the same corpus then hit the cache.")
    p.add_argument("corpus", help="a corpus name (e.g. enwiki, bookcorpus) or a text file, one sentence per line")
    p.add_argument("--out", default=None, help="TSV of sentence<TAB>negation (default: print the first 10)")
    add_data_dir(p)
    p.add_argument("--max-sentences", type=int, default=None, help="only the first N sentences")
    p.add_argument("--batch-size", type=int, default=256, help="sentences per nlp.pipe batch")
    p.add_argument("--processes", type=int, default=1, help="nlp.pipe worker processes")
    p.add_argument("--rules", default=None, help="negation rule set (an SNCSE trial's negation_rules): project, the "
                   "default, or reference (the SNCSE repository's rules, bug-compatible)")
    add_parser_cache(p)
    p.set_defaults(handler=cmd_negate)


def cmd_negate(args: argparse.Namespace) -> int:
    from sentsweep.methods.sncse.negation import DEFAULT_RULE_SET, negate_corpus, write_pairs
    from sentsweep.trainables.sncse import corpus_sentences

    sentences = corpus_sentences(args.corpus, args.data_dir, args.max_sentences)
    negations, stats = negate_corpus(sentences, model=args.spacy_model, cache=args.cache,
                                     batch_size=args.batch_size, n_process=args.processes,
                                     rules=args.rules or DEFAULT_RULE_SET)
    print(stats.table())
    if args.out:
        print(f"wrote {write_pairs(args.out, sentences, negations)} ({len(sentences)} pairs)")
    else:
        for sentence, negation in list(zip(sentences, negations, strict=True))[:10]:
            print(f"  {sentence}\n  -> {negation}")
    return 0


def _add_parse(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("parse", help="parse a corpus for the tree views (fills the cache) or score a treebank",
                       description="Dependency + constituency parses of a corpus, cached for multi-view "
                       "trials; with --treebank, bracket F1 of the constituency backend on gold PTB trees.")
    p.add_argument("corpus", nargs="?", default=None, help="a corpus name (e.g. enwiki) or a text file")
    p.add_argument("--treebank", default=None, help="PTB .mrg file or folder: score the backend instead")
    p.add_argument("--limit", type=int, default=None, help="at most this many treebank trees")
    p.add_argument("--constituency", default="derived", help="derived, benepar or stanza (default: derived)")
    p.add_argument("--max-sentences", type=int, default=None, help="only the first N sentences: a trial's "
                   "max_sentences, so that the cache holds what the trial parses")
    add_parser_cache(p)
    add_data_dir(p)
    p.add_argument("--out", default=None, help="write the statistics / scores as JSON")
    p.set_defaults(handler=cmd_parse)


def cmd_parse(args: argparse.Namespace) -> int:
    from sentsweep import data as datasets
    from sentsweep.data.parsing import Parser, corpus_stats, evaluate_on_treebank, parse_corpus
    from sentsweep.errors import ConfigError

    if (args.corpus is None) == (args.treebank is None):
        raise ConfigError("give a corpus or --treebank FILE (one of them)", field="corpus")
    parser = Parser(args.constituency, args.spacy_model, cache=args.cache)
    if args.treebank:
        result = evaluate_on_treebank(args.treebank, parser, args.limit)
    else:
        corpus = parse_corpus(datasets.training_documents(args.corpus, args.data_dir, args.max_sentences), parser)
        result = corpus_stats(corpus)
        source = "cache" if corpus.from_cache else f"parsed in {corpus.seconds:.1f}s"
        print(f"{corpus.backend_id}: {source}" + (f", {corpus.path}" if corpus.path else ""))
    for key, value in result.items():
        print(f"  {key:<22} {value:.2f}")
    if args.out:
        write_json(args.out, result)
    return 0


def _add_neighbours(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("neighbours", help="nearest sentences by cosine distance (the multi-view paper's Table 2)",
                       description="Embed a pool of sentences with a trained model and print each query's "
                       "nearest neighbours.")
    p.add_argument("model", help="a trained model folder (any method's best/), 'minilm' or a hub id")
    p.add_argument("queries", nargs="+", help="query sentences")
    p.add_argument("--pool", default="enwiki", help="corpus name or text file to search (default: enwiki)")
    add_data_dir(p)
    p.add_argument("--max-sentences", type=int, default=20000, help="pool size limit (default 20000)")
    p.add_argument("-k", type=int, default=2, help="neighbours per query (default 2)")
    p.set_defaults(handler=cmd_neighbours)


def cmd_neighbours(args: argparse.Namespace) -> int:
    from sentsweep.methods.multiview.encoder import nearest_neighbours
    from sentsweep.trainables.registry import load_encoder
    from sentsweep.trainables.sncse import corpus_sentences

    pool = corpus_sentences(args.pool, args.data_dir, args.max_sentences)
    encoder = load_encoder(args.model)
    for query, found in zip(args.queries, nearest_neighbours(encoder, args.queries, pool, args.k), strict=True):
        print(f"query: {query}")
        for sentence, distance in found:
            print(f"  {distance:.3f}  {sentence}")
    sys.stdout.flush()
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_negate, _add_parse, _add_neighbours,
)
