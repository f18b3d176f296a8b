"""Make the bundled data sample from the shared data: ``python -m tools.make_sample SRC_DATA_DIR``.

The sample keeps the source layout and the source bytes of every line it keeps (encodings, CRLF line
ends and byte order marks included), so the loaders read it exactly as they read the full data. Rows
are drawn with a seeded generator per file and written in their original order; corpora keep their
first whole documents. Running it twice gives identical files. The sizes are the constants below,
which the tests read back.
"""

from __future__ import annotations

import argparse
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

from sentsweep.data.corpora import corpus
from sentsweep.data.pairs import labelled_pairs, scored_pairs
from sentsweep.data.registry import REGISTRY, dataset_info, split_files
from sentsweep.data.sentences import labelled_sentences
from sentsweep.data.source import SAMPLE_DIR, DataSource, resolve_data_dir
from sentsweep.data.sts import STS_YEARS, sts_subsets

SEED = 1234

#: Rows kept per (dataset, split) of the row-sampled datasets; SICK's files also serve ``sick-nli``.
ROWS: dict[tuple[str, str], int] = {
    ("stsb", "train"): 500,
    ("stsb", "dev"): 300,
    ("stsb", "test"): 300,
    ("sickr", "train"): 200,
    ("sickr", "trial"): 200,
    ("sickr", "test"): 200,
    ("mrpc", "train"): 200,
    ("mrpc", "test"): 100,
    ("snli", "dev"): 150,
    ("snli", "test"): 150,
    ("trec", "train"): 300,
    ("trec", "test"): 100,
}
#: Sentences kept per class (file) of the two-file sentence tasks.
PER_CLASS: dict[str, int] = {"mr": 100, "cr": 100, "subj": 100, "mpqa": 100}
#: Scored pairs kept per STS subset; unscored lines are kept in the source's proportion to them, at
#: most one per scored pair.
STS_PAIRS_PER_SUBSET = 40
#: Whole Wikipedia articles are kept, in order, until the sample holds at least this many sentences.
ENWIKI_MIN_SENTENCES = 3000
BROWN_DOCUMENTS = 20
PTB_LINES: dict[str, int] = {"ptb-train": 500, "ptb-valid": 100, "ptb-test": 100}

_HEADER_ROWS = {"stsb": 0, "trec": 0, "sickr": 1, "mrpc": 1}
_LICENCE_NAMES = (
    "00-readme.txt",
    "LICENSE.txt",
    "README.txt",
    "readme.txt",
    "STS.input.answers-forums.LICENSE",
)
_MARKER = "<!-- made by python -m tools.make_sample -->"


def _raw_lines(path: Path) -> list[bytes]:
    """The file's lines as bytes, line ends other than ``\\n`` (``\\r``) kept, as wc -l counts them."""
    lines = path.read_bytes().split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def _write(path: Path, lines: Sequence[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def _pick(candidates: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """``n`` of ``candidates`` at random, in their original order (all of them when n is larger)."""
    return list(candidates) if n >= len(candidates) else sorted(rng.sample(list(candidates), n))


def _rng(seed: int, relative: str) -> random.Random:
    return random.Random(f"{seed}:{relative}")


def _sample_rows(src: Path, out: Path, relative: str, n: int, header: int, seed: int) -> None:
    """Keep the header lines and ``n`` random non-blank rows of one file."""
    lines = _raw_lines(src / relative)
    rows = [i for i in range(header, len(lines)) if lines[i].strip()]
    keep = list(range(header)) + _pick(rows, n, _rng(seed, relative))
    _write(out / relative, [lines[i] for i in keep])


def _sample_aligned(src: Path, out: Path, files: Sequence[str], n: int, seed: int) -> None:
    """The same ``n`` random line numbers of line-aligned files (SNLI's s1, s2, labels)."""
    columns = [_raw_lines(src / relative) for relative in files]
    keep = _pick(range(len(columns[0])), n, _rng(seed, files[0]))
    for relative, lines in zip(files, columns, strict=True):
        _write(out / relative, [lines[i] for i in keep])


def _sample_sts_subset(src: Path, out: Path, input_file: str, gold_file: str, seed: int) -> None:
    """STS_PAIRS_PER_SUBSET scored pairs plus unscored lines in the source's proportion, capped at one
    unscored line per scored pair (STS16 has up to 12 per pair; the cap keeps the sample small)."""
    inputs, golds = _raw_lines(src / input_file), _raw_lines(src / gold_file)
    scored = [i for i, gold in enumerate(golds) if gold.strip()]
    unscored = [i for i, gold in enumerate(golds) if not gold.strip()]
    n_scored = min(STS_PAIRS_PER_SUBSET, len(scored))
    n_unscored = min(n_scored, round(n_scored * len(unscored) / len(scored))) if scored else 0
    rng = _rng(seed, gold_file)
    keep = sorted(_pick(scored, n_scored, rng) + _pick(unscored, n_unscored, rng))
    _write(out / input_file, [inputs[i] for i in keep])
    _write(out / gold_file, [golds[i] for i in keep])


def _leading_documents(
    lines: Sequence[bytes], *, max_documents: int | None = None, min_sentences: int | None = None
) -> list[bytes]:
    """The lines of the first whole blank-line-separated documents, stopping before the next document
    once ``max_documents`` are kept or ``min_sentences`` reached (a ``# `` title is not a sentence)."""
    kept: list[bytes] = []
    documents = sentences = 0
    in_document = False
    for line in lines:
        blank = not line.strip()
        if not blank and not in_document:
            enough_documents = max_documents is not None and documents >= max_documents
            enough_sentences = min_sentences is not None and sentences >= min_sentences
            if enough_documents or enough_sentences:
                break
            documents += 1
            in_document = True
            if line.startswith(b"# "):
                kept.append(line)
                continue
        in_document = not blank
        sentences += not blank
        kept.append(line)
    return kept


def _copy_licences(src: Path, out: Path) -> None:
    """The readme and licence files of the STS folders (the datasets' own terms travel with them)."""
    for folder in sorted((src / "senteval" / "STS").iterdir()):
        for name in _LICENCE_NAMES:
            if (folder / name).is_file():
                target = out / folder.relative_to(src) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(folder / name, target)


def write_sample(src: Path, out: Path, seed: int = SEED) -> None:
    """Slice the data directory ``src`` into ``out`` (same layout) and write ``out/README.md``."""
    for name in STS_YEARS:
        files = split_files(dataset_info(name, "sts-year"), None)
        for input_file, gold_file in zip(files[::2], files[1::2], strict=True):
            _sample_sts_subset(src, out, input_file, gold_file, seed)
    for (name, split), n in ROWS.items():
        files = REGISTRY[name].files[split]
        if name == "snli":
            _sample_aligned(src, out, files, n, seed)
        else:
            _sample_rows(src, out, files[0], n, _HEADER_ROWS[name], seed)
    for name, n in PER_CLASS.items():
        for relative in REGISTRY[name].files["all"]:
            _sample_rows(src, out, relative, n, header=0, seed=seed)
    (enwiki,) = REGISTRY["enwiki"].files["all"]
    _write(out / enwiki, _leading_documents(_raw_lines(src / enwiki), min_sentences=ENWIKI_MIN_SENTENCES))
    (brown,) = REGISTRY["brown"].files["all"]
    _write(out / brown, _leading_documents(_raw_lines(src / brown), max_documents=BROWN_DOCUMENTS))
    for name, n in PTB_LINES.items():
        (relative,) = REGISTRY[name].files["all"]
        _write(out / relative, _raw_lines(src / relative)[:n])
    _copy_licences(src, out)
    (out / "README.md").write_text(_readme(src, out, seed), encoding="utf-8")


def _counts(source: DataSource) -> dict[tuple[str, str], str]:
    """What the loaders read from a data directory, per (dataset, split), as table text."""
    counts: dict[tuple[str, str], str] = {}
    for name in STS_YEARS:
        subsets = sts_subsets(name, source)
        counts[name, "test"] = f"{sum(map(len, subsets.values()))} pairs"
    for info in REGISTRY.values():
        for split in info.splits:
            if info.kind == "scored-pairs":
                counts[info.name, split] = f"{len(scored_pairs(info.name, split, source))} pairs"
            elif info.kind == "labelled-pairs":
                counts[info.name, split] = f"{len(labelled_pairs(info.name, split, source))} pairs"
            elif info.kind == "labelled-sentences" and info.name != "sst2":
                counts[info.name, split] = f"{len(labelled_sentences(info.name, split, source))} sentences"
            elif info.kind == "corpus":
                documents = corpus(info.name, source)
                sentences = sum(len(d.sentences) for d in documents)
                counts[info.name, split] = f"{sentences} sentences in {len(documents)} documents"
    return counts


def _readme(src: Path, out: Path, seed: int) -> str:
    sample, full = _counts(resolve_data_dir(out)), _counts(resolve_data_dir(src))
    rows = "\n".join(
        f"| {name} | {split} | {count} | {full[name, split]} | {REGISTRY[name].licence} |"
        for (name, split), count in sample.items()
    )
    return f"""{_MARKER}
# Bundled data sample

A small slice of the full research data (a directory in the SentEval layout, `$SENTSWEEP_DATA`), in the
same layout, so that the demo and the tests run with no data directory configured. Made by

    python -m tools.make_sample DATA_DIR --seed {seed}

which draws rows with a seeded generator per file (same seed, same files) and keeps each kept line's
bytes unchanged. Do not edit these files by hand; change `tools/make_sample.py` and re-run it.

What it keeps: random rows of STS-B, SICK, MRPC, SNLI and TREC (headers kept); {PER_CLASS["mr"]}
sentences per class of MR, CR, SUBJ and MPQA; {STS_PAIRS_PER_SUBSET} scored pairs per STS12-16 subset
plus unscored (empty gold) lines in the source's proportion, at most one per scored pair (the loaders
drop them); the first whole Wikipedia articles up to {ENWIKI_MIN_SENTENCES} sentences; the first
{BROWN_DOCUMENTS} Brown documents; the first {", ".join(map(str, PTB_LINES.values()))} lines of the PTB
train, valid and test splits. No treebank, no SST2 (not in the shared data).

| dataset | split | in this sample | in the source | licence |
|---|---|---|---|---|
{rows}

Sources and licences (from the shared data's MANIFEST): SemEval STS 2012-2016 (each year's
`00-readme.txt` / `LICENSE.txt`, copied alongside); STS Benchmark (scores CC BY-SA 4.0, see
`STSBenchmark/LICENSE.txt`); SICK (CC BY-NC-SA 3.0: non-commercial); MR, CR, SUBJ, MPQA, TREC (research
use); MRPC (Microsoft research licence); SNLI (CC BY-SA 4.0); English Wikipedia text (CC BY-SA); the
Brown corpus (Brown corpus licence); Penn Treebank language-model text (research use).
"""


def _clear(out: Path) -> None:
    """Remove a previous sample (only one this script made) so no stale file survives."""
    readme = out / "README.md"
    if readme.is_file() and readme.read_text(encoding="utf-8").startswith(_MARKER):
        for name in ("senteval", "corpora"):
            shutil.rmtree(out / name, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="the shared data directory (senteval/, corpora/)")
    parser.add_argument("--out", type=Path, default=SAMPLE_DIR, help="where to write (default: the package)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    src = resolve_data_dir(args.src).root
    _clear(args.out)
    write_sample(src, args.out, args.seed)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote the sample to {args.out} ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
