"""A constituency backend measured against gold PTB trees (unlabelled bracket F1, evalb-style)."""

from __future__ import annotations

import time
from pathlib import Path

from sentsweep.data.parsing.parser import Parser
from sentsweep.data.parsing.spans import binarize
from sentsweep.data.treebank import (
    bracket_f1,
    branching_spans,
    gold_for_scoring,
    ptb_unescape,
    read_treebank,
)


def evaluate_on_treebank(
    treebank: str | Path, parser: Parser | None = None, limit: int | None = None
) -> dict[str, float]:
    """Unlabelled bracket F1 (x100, evalb-style) of the parser's constituency on gold PTB trees.

    The parser sees the gold words (empty elements removed, PTB escapes undone). Reported: ``f1``,
    ``precision``, ``recall`` of the n-ary trees with the whole-sentence bracket counted (as evalb does);
    ``f1_no_root`` without it; ``f1_binarized`` of the left-markovised binary trees the ``const`` view
    uses; and ``f1_right_branching`` / ``f1_left_branching`` baselines on the same sentences.
    """
    parser = parser or Parser("derived", cache=False)
    gold = [g for g in (gold_for_scoring(t) for t in read_treebank(treebank, limit)) if g is not None]
    gold = [g for g in gold if g.words()]
    words = [[ptb_unescape(w) for w in g.words()] for g in gold]
    start = time.perf_counter()
    parsed = parser.parse_words(words)
    seconds = time.perf_counter() - start
    nary = [p.spans for p in parsed]
    binary = [binarize(p.spans, len(p.tokens)).spans() for p in parsed]
    score = bracket_f1(gold, nary)
    out = {f"{k}": v for k, v in score.as_dict().items()}
    out["f1_no_root"] = bracket_f1(gold, nary, with_root=False).f1
    out["f1_binarized"] = bracket_f1(gold, binary).f1
    out["f1_binarized_no_root"] = bracket_f1(gold, binary, with_root=False).f1
    for direction in ("right", "left"):
        base = [branching_spans(len(g.words()), direction) for g in gold]
        out[f"f1_{direction}_branching"] = bracket_f1(gold, base).f1
        out[f"f1_{direction}_branching_no_root"] = bracket_f1(gold, base, with_root=False).f1
    out["seconds"] = seconds
    return out
