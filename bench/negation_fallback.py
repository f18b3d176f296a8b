"""How many of a corpus's soft negatives are the negation rules' fallback, by rule set.

SNCSE's claim rests on its soft negatives: a sentence and its explicit negation. Where the rules find no verb to
negate they fall back to prefixing "Not" (the project rules also write "It is not true that ..." for text with a
finite verb they could not reach). This bench negates every sentence of the shared Wikipedia corpus (the bundled
sample without ``--data-dir``) with each rule set, and prints the sentences per rule, the fallback shares and a few
fallback examples. The document titles (the ``# Title`` lines, title-like text such as "YMCA in South Australia")
are counted apart: they are not training sentences of this corpus, but title-like lines are in wiki1m's.

    python -m bench.negation_fallback [--data-dir DATA] [--examples 8] [--rules project,reference]
"""

from __future__ import annotations

import argparse
from collections import Counter

from bench.common import print_table
from sentsweep.data import corpus
from sentsweep.methods.sncse.negation import Negator
from sentsweep.methods.sncse.negation.rule_sets import rule_set


def fallback_counts(negator: Negator, sentences: list[str]) -> tuple[Counter, list[tuple[str, str]]]:
    """Sentences per rule, and the (sentence, negation) pairs that fell to the "Not ..." prefix."""
    counts: Counter = Counter()
    prefixed = []
    for sentence, negation in zip(sentences, negator.negate(sentences), strict=True):
        counts[negation.rule] += 1
        if negation.is_fallback and negation.text.lstrip().startswith("Not "):
            prefixed.append((sentence, negation.text))
    return counts, prefixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--examples", type=int, default=8, help="fallback examples to print per rule set")
    parser.add_argument("--rules", default="project,reference", help="rule sets, comma-separated")
    args = parser.parse_args()

    documents = corpus("enwiki", data_dir=args.data_dir)
    sentences = [s for doc in documents for s in doc.sentences]
    titles = [doc.title for doc in documents if doc.title]
    rows = []
    for name in (r.strip() for r in args.rules.split(",") if r.strip()):
        fallback = rule_set(name).fallback
        negator = Negator(rules=name)
        for label, texts in (("sentences", sentences), ("titles", titles)):
            counts, prefixed = fallback_counts(negator, texts)
            falls = sum(counts[r] for r in fallback)
            rows.append([name, label, len(texts), falls, f"{falls / len(texts):.2%}", len(prefixed),
                         f"{len(prefixed) / len(texts):.2%}",
                         ", ".join(f"{r} {counts[r]}" for r in sorted(fallback))])
            if label == "sentences":
                print(f"\n{name} rules, {negator.model_id}: sentences per rule: "
                      + ", ".join(f"{r} {n}" for r, n in counts.most_common()))
                for sentence, negated in prefixed[: args.examples]:
                    print(f"  {sentence!r} -> {negated!r}")
    print_table("Negation fallback on the Wikipedia corpus",
                ["rules", "text", "rows", "fallback", "share", '"Not ..." prefix', "share", "by rule"], rows)


if __name__ == "__main__":
    main()
