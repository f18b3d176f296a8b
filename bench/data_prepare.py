"""``sentsweep data prepare`` at paper scale: 1M sentences in wiki1m's format, prepared, then read back.

Generates ``--sentences`` lines like SimCSE's ``wiki1m_for_simcse.txt`` (one sentence a line, ~120 bytes,
deterministic words), then runs each phase in its own Python process so that every peak RSS is that
phase's alone (``VmHWM``; the process's RSS after its imports is printed beside it):

- ``prepare``: ``sentsweep.data.prepare.prepare("wiki1m", from_path=FILE)`` (streamed into the columns);
- ``iterate``: ``corpus("prepared:...")`` and every sentence read in order (what a pass over the corpus costs);
- ``shuffled``: every sentence read once in a random order (how SNCSE batches index it); the pages it maps
  are the file's, shared by every trial on the machine through the page cache;
- reference ``python list``: the file read into a list of ``str`` (``read_text().splitlines()``), the named
  reference: what holding the corpus in Python objects costs;
- reference ``corpus(file)``: the existing small-file loader on the same file (documents of ``str`` tuples).

    python -m bench.data_prepare --sentences 1000000
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import print_table

_WORDS = (
    "the of and in to a was is for on as by with he at from that his it an were are which this be also has or "
    "had first one their its new after who they have her she two been other when there all during into school "
    "time may years more most only over city some world would where later up such used many can state about "
    "national out known university united then made state de south american under however team series century"
).split()


def generate(path: Path, sentences: int, seed: int = 0) -> None:
    """``sentences`` wiki1m-style lines (5-40 words, capitalised, a full stop), written as they are made."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, sentences, 10_000):
            n = min(10_000, sentences - start)
            lengths = rng.integers(5, 40, size=n)
            words = rng.integers(0, len(_WORDS), size=int(lengths.sum())).tolist()
            at = 0
            for length in lengths.tolist():
                text = " ".join(_WORDS[w] for w in words[at : at + length])
                at += length
                out.write(text[:1].upper() + text[1:] + ".\n")


def _status(field: str) -> float:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    return int(match.group(1)) / 1024 if match else float("nan")


def run_phase(phase: str, file: Path, root: Path) -> dict:
    """One phase in this process; its figures."""
    from sentsweep.data import corpus
    from sentsweep.data.prepare import prepare

    base = _status("VmRSS")
    start = time.perf_counter()
    rows = nbytes = 0
    if phase == "prepare":
        result = prepare("wiki1m", to=str(root), from_path=file, force=True, log=lambda _: None)
        rows, nbytes = result.manifest["rows"], result.manifest["bytes"]
    elif phase in ("iterate", "shuffled"):
        (doc,) = corpus(f"prepared:{root / 'wiki1m'}")
        sentences = doc.sentences
        if phase == "iterate":
            for text in sentences:
                rows += 1
                nbytes += len(text)
        else:
            import numpy as np

            for index in np.random.default_rng(0).permutation(len(sentences)).tolist():
                rows += 1
                nbytes += len(sentences[index])
    elif phase == "python-list":
        lines = file.read_text(encoding="utf-8").splitlines()
        rows, nbytes = len(lines), sum(len(s) for s in lines)
    elif phase == "corpus-file":
        docs = corpus(file)
        rows, nbytes = sum(len(d.sentences) for d in docs), sum(len(s) for d in docs for s in d.sentences)
    seconds = time.perf_counter() - start
    return {"phase": phase, "rows": rows, "chars_or_bytes": nbytes, "seconds": seconds, "base_mib": base,
            "peak_mib": _status("VmHWM"), "rss_file_mib": _status("RssFile"), "rss_anon_mib": _status("RssAnon")}


def _child(phase: str, file: Path, root: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.data_prepare", "--phase", phase, "--file", str(file),
                          "--root", str(root)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--root", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, Path(args.file), Path(args.root))))
        return
    with tempfile.TemporaryDirectory(prefix="sentsweep-bench-data-") as tmp:
        file, root = Path(tmp) / "wiki1m_for_simcse.txt", Path(tmp) / "prepared"
        start = time.perf_counter()
        generate(file, args.sentences)
        size = file.stat().st_size
        print(f"generated {args.sentences:,} sentences, {size / 2**20:.1f} MiB in {time.perf_counter() - start:.1f} s")
        results = [_child(phase, file, root) for phase in
                   ("prepare", "iterate", "shuffled", "python-list", "corpus-file")]
    rows = [[r["phase"], f"{r['rows']:,}", f"{r['seconds']:.1f}", f"{r['base_mib']:.0f}", f"{r['peak_mib']:.0f}",
             f"{r['peak_mib'] - r['base_mib']:.0f}", f"{r['rss_anon_mib']:.0f}", f"{r['rss_file_mib']:.0f}"]
            for r in results]
    print_table(f"data prepare, {args.sentences:,} sentences, file {size / 2**20:.1f} MiB",
                ["phase", "rows", "s", "RSS after imports MiB", "peak RSS MiB", "peak - imports MiB",
                 "anon RSS at end MiB", "file-backed RSS at end MiB"], rows)
    by = {r["phase"]: r for r in results}
    growth = {k: max(v["peak_mib"] - v["base_mib"], 1.0) for k, v in by.items()}
    print(f"\nprepared bytes: {by['prepare']['chars_or_bytes']:,} (source file {size:,})")
    print(f"peak growth, python list / prepare: {growth['python-list'] / growth['prepare']:.1f}x; "
          f"python list / iterate: {growth['python-list'] / growth['iterate']:.1f}x; "
          f"python list / file size: {growth['python-list'] / (size / 2**20):.1f}x")


if __name__ == "__main__":
    main()
