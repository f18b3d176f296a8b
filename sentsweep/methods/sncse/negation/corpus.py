"""A whole corpus negated once: per-rule statistics and an on-disk cache shared by every trial of a sweep.

:func:`negate_corpus` caches a corpus's negations (:func:`sentsweep.data.cache.get_or_build`: locked, written
atomically), keyed by the corpus content hash, the spaCy model name and version and the rule set with its version
(:attr:`~sentsweep.methods.sncse.negation.rule_sets.RuleSet.cache_tag`: ``rules<v>`` for ``project``,
``reference-rules<v>`` for ``reference``), so a sweep negates a corpus once, not once per trial, and one rule set's
negations never serve another's rows (the file's header names the rule set too, and a header naming another is a
miss). A version is read from its rules module at call time (never copied here), so the key follows it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sentsweep.data.cache import content_hash, get_or_build
from sentsweep.methods.sncse.negation.negator import Negator
from sentsweep.methods.sncse.negation.rule_sets import DEFAULT_RULE_SET, RULE_SETS, RuleSet, rule_set
from sentsweep.methods.sncse.negation.rules import Negation


@dataclass
class NegationStats:
    """What negating a corpus did: sentences per rule of its rule set (``rules``), the fallback share, time and
    cache use."""

    total: int
    counts: dict[str, int]
    model: str
    rules_version: str = RULE_SETS[DEFAULT_RULE_SET].version
    rules: str = DEFAULT_RULE_SET
    seconds: float = 0.0
    cache_hit: bool = False
    cache_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rule_set(self) -> RuleSet:
        return rule_set(self.rules)

    @property
    def fallback(self) -> int:
        return sum(self.counts.get(rule, 0) for rule in self.rule_set.fallback)

    @property
    def fallback_share(self) -> float:
        return self.fallback / self.total if self.total else 0.0

    def as_metrics(self, prefix: str = "negation_") -> dict[str, float]:
        """Flat numeric metrics (for MLflow): the count of every rule of the rule set, the fallback share, seconds
        (the rule set's name is the run's ``negation_rules`` param)."""
        metrics = {f"{prefix}{rule.replace('-', '_')}": float(self.counts.get(rule, 0))
                   for rule in self.rule_set.rules}
        metrics.update(
            {
                f"{prefix}total": float(self.total),
                f"{prefix}fallback_share": self.fallback_share,
                f"{prefix}seconds": self.seconds,
                f"{prefix}cache_hit": float(self.cache_hit),
            }
        )
        return metrics

    def table(self) -> str:
        """The per-rule counts as a small text table."""
        lines = [f"{'rule':<20} {'sentences':>10} {'share':>7}"]
        for rule in self.rule_set.rules:
            n = self.counts.get(rule, 0)
            if n:
                lines.append(f"{rule:<20} {n:>10} {n / max(1, self.total):>7.1%}")
        lines.append(f"{'total':<20} {self.total:>10}   fallback {self.fallback_share:.1%}")
        source = "cache hit" if self.cache_hit else f"parsed in {self.seconds:.1f}s"
        lines.append(f"model {self.model}, {self.rules} rules v{self.rules_version}, {source}")
        return "\n".join(lines)


def cache_file(
    sentences: Sequence[str], model_id: str, cache_root: Path, rules: str = DEFAULT_RULE_SET
) -> Path:
    """Where the negations of ``sentences`` by ``model_id`` under the rule set ``rules`` are cached.

    The key is the SHA-256 of the sentences in order (one per line), the model id and the rule set's
    :attr:`~sentsweep.methods.sncse.negation.rule_sets.RuleSet.cache_tag` (its name and version).
    """
    safe_model = "".join(c if c.isalnum() or c in "._-" else "_" for c in model_id)
    digest = content_hash(sentence + "\n" for sentence in sentences)
    return cache_root / "negations" / f"{digest[:32]}-{safe_model}-{rule_set(rules).cache_tag}.jsonl"


def _read_cache(path: Path, n: int, rules_used: RuleSet) -> list[Negation] | None:
    """The cached negations, or None when the file is unreadable or made for other sentences or rules (a header
    without a rule set is the default's: files written before there was a choice)."""
    try:
        with path.open(encoding="utf-8") as handle:
            header = json.loads(handle.readline())
            if (header.get("n") != n or header.get("rules_version") != rules_used.version
                    or header.get("rules", DEFAULT_RULE_SET) != rules_used.name):
                return None
            rows = [json.loads(line) for line in handle]
    except (OSError, ValueError):
        return None
    if len(rows) != n:
        return None
    return [Negation(text, rule) for text, rule in rows]


def _write_cache(
    negations: Sequence[Negation], model_id: str, rules_used: RuleSet, handle: IO[bytes]
) -> None:
    """A JSON header line (count, model, rule set and its version), then one ``[text, rule]`` line per sentence."""
    header = {"n": len(negations), "model": model_id, "rules": rules_used.name, "rules_version": rules_used.version}
    lines = [json.dumps(header)] + [json.dumps([n.text, n.rule], ensure_ascii=False) for n in negations]
    handle.write(("\n".join(lines) + "\n").encode("utf-8"))


def negate_corpus(
    sentences: Sequence[str],
    *,
    model: str | None = None,
    negator: Negator | None = None,
    cache: bool = True,
    cache_root: str | Path | None = None,
    batch_size: int = 256,
    n_process: int = 1,
    progress: Callable[[int], Any] | None = None,
    rules: str = DEFAULT_RULE_SET,
) -> tuple[list[str], NegationStats]:
    """The negation of every sentence (in order) and the statistics of the rules used.

    The rule set is ``negator``'s (``rules`` builds one when no negator is given). With ``cache`` the result is
    read from / written to ``cache_root`` (default :func:`sentsweep.config.cache_dir`), keyed by the corpus
    content hash, the spaCy model name and version and the rule set with its version; a hit parses nothing
    (``stats.cache_hit``).
    """
    started = time.perf_counter()
    negator = negator or Negator(model, batch_size=batch_size, n_process=n_process, rules=rules)
    used = negator.rule_set
    if not cache:
        result = negator.negate(sentences, progress)
        return _finish(result, negator.model_id, used, started, False, None)
    if cache_root is None:
        from sentsweep.config import cache_dir

        cache_root = cache_dir()
    path = cache_file(sentences, negator.model_id, Path(cache_root), used.name)
    result, hit = get_or_build(  # concurrent trials negate a corpus once, the others wait and read
        path,
        read=lambda p: _read_cache(p, len(sentences), used),
        build=lambda: negator.negate(sentences, progress),
        write=lambda value, handle: _write_cache(value, negator.model_id, used, handle),
    )
    if hit and progress is not None:
        progress(len(sentences))
    return _finish(result, negator.model_id, used, started, hit, path)


def _finish(
    result: list[Negation], model_id: str, used: RuleSet, started: float, hit: bool, path: Path | None
) -> tuple[list[str], NegationStats]:
    stats = NegationStats(
        total=len(result),
        counts=dict(Counter(n.rule for n in result)),
        model=model_id,
        seconds=time.perf_counter() - started,
        cache_hit=hit,
        cache_path=str(path) if path is not None else None,
        rules_version=used.version,
        rules=used.name,
    )
    return [n.text for n in result], stats


def write_pairs(path: str | Path, sentences: Sequence[str], negations: Sequence[str]) -> Path:
    """A TSV of ``sentence<TAB>negation`` lines (tabs and newlines inside a sentence become spaces)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def clean(text: str) -> str:
        return " ".join(text.replace("\t", " ").splitlines())

    with path.open("w", encoding="utf-8") as handle:
        for sentence, negation in zip(sentences, negations, strict=True):
            handle.write(f"{clean(sentence)}\t{clean(negation)}\n")
    return path
