"""The protocol of every evaluation figure: what a number was measured under, kept beside the number.

A figure such as ``stsb_test 82.03`` means little without its protocol: the task and split, how the score
was aggregated (STS12-16 "all" or the mean of subsets; SentEval's nested k-fold), the classifier setting
(SentEval ``test``, ``fast`` or the exact ``lbfgs``), the encoder's max length at evaluation (the SNCSE
32-token cut moved STS-B test by 8 points), pooling and precision (float32, or bf16/fp16 when evaluation
autocasts on a GPU, ``eval_amp``), a hash of the data files, and the code that
computed it. :class:`MetricProtocol` holds these; :func:`attach_protocols` derives them for every metric
of an :class:`~sentsweep.evaluation.results.EvalResult` (``result.info["protocols"]``) from its keys,
its ``info`` and the embedder, and hands them to the active :func:`collect_protocols` block, so that a
caller that only sees the metrics (a trial's final evaluation) can still log each one's protocol.

Two figures are comparable when their protocols' :attr:`MetricProtocol.id` agree: every field but those of
:data:`RECORD_ONLY`, kept for the record. ``code_version`` (the commit) is left out because ``eval_code`` (a
digest of the evaluation and data-loading code) takes its part: figures from two commits with the same
evaluation code compare. ``pooling`` is left out because it is the model's, not the measurement's: how the
embedder turns token states into one vector is what a sweep searching pooling ranks (the CoSENT paper's
pooling study, Tables VIII and IX, compares exactly such figures), whereas a token cut, a classifier setting or other
data change the measurement of one and the same embedder.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from sentsweep.code_version import code_version, eval_code_digest
from sentsweep.data.registry import REGISTRY
from sentsweep.data.source import resolve_data_dir
from sentsweep.evaluation.metric_names import LABELLED_TASKS
from sentsweep.evaluation.results import EvalResult
from sentsweep.evaluation.senteval.tasks import CV_TASKS, SENTEVAL_TASKS, TRANSFER_TASKS

#: ``result.info`` key of the per-metric protocols (metric key -> :meth:`MetricProtocol.to_dict`).
PROTOCOLS_KEY = "protocols"
#: STS tasks scored per year with subsets (the "all" protocol and its companions): the registry's STS years.
STS_YEARS: tuple[str, ...] = tuple(info.name for info in REGISTRY.values() if info.kind == "sts-year")
#: What a SentEval task's figures read: (registry dataset, split or None for every split's files).
TASK_FILES: dict[str, tuple[tuple[str, str | None], ...]] = {
    **{name: ((name, None),) for name in (*CV_TASKS, "trec", "sst2", "mrpc")},
    "sick_relatedness": (("sickr", None),), "sick_entailment": (("sickr", None),),
}
_STS_AGGREGATES = {"all": "all: one Spearman over the concatenated subsets", "mean": "mean of the subsets' Spearman",
                   "wmean": "mean of the subsets' Spearman weighted by size"}
#: SICK-R's protocol (the runner's table also names the epochs the regressor trained, an outcome).
RELATEDNESS = "relatedness regressor on SICK train, selection on SICK trial"
_SENTEVAL_SCORES = {"acc": "accuracy x100", "f1": "F1 x100 of the positive class", "pearson": "Pearson r x100",
                    "spearman": "Spearman rho x100", "mse": "MSE (raw)"}


#: The fields of a :class:`MetricProtocol` kept for the record but not in its id (module docstring).
RECORD_ONLY = ("code_version", "pooling")


@dataclass(frozen=True)
class MetricProtocol:
    """Everything a figure was measured under (see the module docstring); ``max_length`` None: whole
    sentences up to the model's limit, or an embedder without a token limit; ``precision``: what the
    embeddings (or pair scores) were computed in, ``unknown`` for an embedder that does not say and for
    protocols recorded before the field existed."""

    task: str
    split: str
    aggregation: str
    classifier: str = "none (cosine)"
    max_length: int | None = None
    pooling: str = "unknown"
    precision: str = "unknown"
    data_sha256: str = ""
    eval_code: str = ""
    code_version: str = ""

    @property
    def id(self) -> str:
        """10 hex identifying the protocol: equal ids, comparable figures (:data:`RECORD_ONLY` left out)."""
        data = {k: v for k, v in asdict(self).items() if k not in RECORD_ONLY}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()[:10]

    def to_dict(self) -> dict[str, Any]:
        """The fields and the ``id``: what ``protocols.json`` and ``evaluate --out`` hold per metric."""
        return {"id": self.id, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricProtocol:
        """Read back :meth:`to_dict` (unknown keys, such as ``id``, ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def compact(self) -> str:
        """One line for an MLflow tag or a table: ``<id> | task/split | aggregation | classifier | ...``."""
        length = "model limit" if self.max_length is None else f"max_length {self.max_length}"
        return (f"{self.id} | {self.task}/{self.split} | {self.aggregation} | {self.classifier} | {length} | "
                f"pooling {self.pooling} | {self.precision} | data {self.data_sha256[:12]} | "
                f"eval code {self.eval_code} | {self.code_version}")

    def differences(self, other: MetricProtocol) -> dict[str, tuple[Any, Any]]:
        """The fields (of the id) in which ``other`` differs: ``{field: (mine, other's)}``."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if f.name not in RECORD_ONLY and getattr(self, f.name) != getattr(other, f.name)}


def compact_id(text: str) -> str:
    """The id at the front of a :meth:`MetricProtocol.compact` line."""
    return text.split("|", 1)[0].strip()


# -- the embedder and the data -------------------------------------------------------------------------
def embedder_settings(embedder: Any) -> tuple[str, int | None]:
    """(pooling, max length) of an embedder, read from its ``settings`` (or its ``encoder``'s): a transformer
    encoder's pooling and token limit, a multi-view encoder's views; ``("unknown", None)`` otherwise."""
    for holder in (embedder, getattr(embedder, "encoder", None)):
        settings = getattr(holder, "settings", None)
        if settings is None:
            continue
        pooling = getattr(settings, "pooling", None)
        if pooling is not None:
            return str(pooling), getattr(settings, "max_length", None)
        views = getattr(settings, "views", None)
        if views is not None:
            return f"views {views}", None
    return ("pair scorer" if embedder is None else "unknown"), None


def embedder_precision(embedder: Any, info: Mapping[str, Any]) -> str:
    """What an embedder's evaluation computes in: its (or its ``encoder``'s) ``eval_precision`` (``float32``,
    or ``bfloat16``/``float16`` under ``eval_amp`` on a GPU), else ``info["eval_precision"]`` (a pair scorer's,
    :meth:`~sentsweep.evaluation.sts.StsEvaluator.score_pairs`), else ``unknown``."""
    for holder in (embedder, getattr(embedder, "encoder", None)):
        precision = getattr(holder, "eval_precision", None)
        if isinstance(precision, str):
            return precision
    return str(info.get("eval_precision", "unknown"))


#: What a figure read: (registry dataset, split or None for every split's files).
FileSpec = tuple[str, str | None]


def _registry_files(specs: list[FileSpec]) -> list[str]:
    """The registry files of ``specs`` (names relative to a data root), in order, each once."""
    files = []
    for name, split in specs:
        info = REGISTRY.get(name)
        if info is None:
            continue
        for wanted in ([split] if split else list(info.files)):
            files.extend(info.files.get(wanted, ()))
    return list(dict.fromkeys(files))


def data_sha256(specs: list[FileSpec], data_root: str | Path | None) -> str:
    """SHA-256 over the registry files of ``specs`` (names relative to the root, and contents), in order;
    files absent under the root are left out (their task did not run)."""
    source = resolve_data_dir(data_root)
    digest = hashlib.sha256()
    for relative in _registry_files(specs):
        path = source.path(relative)
        if path.is_file():
            digest.update(relative.encode("utf-8") + b"\0" + file_sha256(path).encode())
    return digest.hexdigest()


def metric_data_sha256(key: str, data_root: str | Path | None) -> str | None:
    """:func:`data_sha256` of the files an STS-style metric ``key`` reads (``stsb_dev``: STS-B dev) under
    ``data_root`` as :func:`~sentsweep.data.source.resolve_data_dir` resolves it now; None for another metric, and
    when none of its files is there (unknown, not the digest of nothing)."""
    sts = _sts_protocol(key, {})
    if sts is None:
        return None
    source = resolve_data_dir(data_root)
    if not any(source.path(relative).is_file() for relative in _registry_files(sts[1])):
        return None
    return data_sha256(sts[1], source)


def file_sha256(path: Path) -> str:
    """A file's SHA-256 (hex), computed once per path, size and modification time."""
    stat = path.stat()
    return _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """A file's SHA-256, cached by path, size and modification time (dev evaluation runs every N steps)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- protocols of a result -----------------------------------------------------------------------------
def _sts_protocol(key: str, info: Mapping[str, Any]) -> tuple[str, list[FileSpec], str, str] | None:
    """(task, files read, split, aggregation) of an STS metric key; None when ``key`` is not one."""
    scoring = str(info.get("sts_protocol", "cosine, spearman"))
    similarity = "pair scores" if "pair scores" in scoring else "cosine"
    limit = (f", {info['sts_max_pairs']} pairs sampled (seed {info.get('sts_sample_seed')})"
             if info.get("sts_max_pairs") else "")
    if key == "sts_avg7":
        files = [*((year, None) for year in STS_YEARS), ("stsb", "test"), ("sickr", "test")]
        return "sts", files, "test", f"mean of the seven (STS12-16 all, STS-B test, SICK-R test), {similarity}"
    task, _, subset = key.partition("_")
    if task in STS_YEARS and subset:
        aggregation = _STS_AGGREGATES.get(subset, f"subset {subset}: Spearman")
        return task, [(task, None)], "test", f"{aggregation} x100 of {similarity}{limit}"
    if task in ("stsb", "sickr") and subset in ("train", "dev", "test", "trial"):
        return task, [(task, subset)], subset, f"Spearman x100 of {similarity}{limit}"
    if task in LABELLED_TASKS and subset in REGISTRY[LABELLED_TASKS[task]].files:
        against = "against the label (contradiction 0, neutral 1, entailment 2)"
        return task, [(LABELLED_TASKS[task], subset)], subset, f"Spearman x100 of {similarity} {against}{limit}"
    return None


def _senteval_protocol(key: str, info: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]],
                       metrics: Mapping[str, float]) -> tuple[str, list[FileSpec], str, str, str] | None:
    """(task, files read, split, aggregation, classifier) of a SentEval metric key; None when not one."""
    if key == "senteval_avg":
        ran = [t for t in TRANSFER_TASKS if f"{t}_acc" in metrics]
        files = [spec for t in ran for spec in TASK_FILES[t]]
        return "senteval", files, "test", f"mean accuracy x100 of {', '.join(ran)}", _classifier(info, "")
    task = next((t for t in SENTEVAL_TASKS if key.startswith(f"{t}_")), None)
    if task is None:
        return None
    score = _SENTEVAL_SCORES.get(key.removeprefix(f"{task}_"), key)
    row = rows.get(task, {})
    split = "all (cross-validated)" if task in CV_TASKS else "test"
    how = RELATEDNESS if task == "sick_relatedness" else row.get("protocol", "SentEval protocol")
    return task, list(TASK_FILES[task]), split, f"{score}; {how}", _classifier(info, task)


def _classifier(info: Mapping[str, Any], task: str) -> str:
    if task == "sick_relatedness":
        return f"SentEval relatedness regressor, seed {info.get('senteval_seed')}"
    text = (f"{info.get('senteval_classifier', info.get('senteval_setting'))}; kfold {info.get('senteval_kfold')}, "
            f"inner {info.get('senteval_inner_kfold')}, seed {info.get('senteval_seed')}, "
            f"L2 grid {info.get('senteval_regs')}")
    if task == "mrpc":
        text += f", features {info.get('senteval_mrpc_features')}"
    return text


def protocols_of(result: EvalResult, embedder: Any) -> dict[str, MetricProtocol]:
    """The protocol of every metric of ``result`` that an evaluator of this package produced."""
    info = result.info
    pooling, max_length = embedder_settings(embedder)
    rows: dict[str, Any] = {}
    if not result.table.empty and "task" in result.table and "protocol" in result.table:
        rows = {str(r["task"]): r for r in result.table.to_dict(orient="records")}
    common = {"max_length": max_length, "pooling": pooling, "precision": embedder_precision(embedder, info),
              "eval_code": eval_code_digest(),
              "code_version": code_version()}
    found: dict[str, MetricProtocol] = {}
    for key in result.metrics:
        sts = _sts_protocol(key, info)
        if sts is not None:
            task, files, split, aggregation = sts
            classifier = MetricProtocol.classifier
        else:
            senteval = _senteval_protocol(key, info, rows, result.metrics)
            if senteval is None:
                continue
            task, files, split, aggregation, classifier = senteval
        found[key] = MetricProtocol(task, split, aggregation, classifier,
                                    data_sha256=data_sha256(files, info.get("data_root")), **common)
    return found


def attach_protocols(result: EvalResult, embedder: Any) -> EvalResult:
    """``result`` with ``info["protocols"]`` filled for its metrics (kept where already there), also handed
    to the active :func:`collect_protocols` block; returns ``result``."""
    protocols = protocols_of(result, embedder)
    known = dict(result.info.get(PROTOCOLS_KEY, {}))
    result.info[PROTOCOLS_KEY] = {**{k: p.to_dict() for k, p in protocols.items()}, **known}
    record_protocols({k: MetricProtocol.from_dict(v) for k, v in result.info[PROTOCOLS_KEY].items()})
    return result


def result_protocols(result: EvalResult) -> dict[str, MetricProtocol]:
    """The protocols an evaluated result carries (``info["protocols"]``), by metric key."""
    return {k: MetricProtocol.from_dict(v) for k, v in result.info.get(PROTOCOLS_KEY, {}).items()}


# -- collecting them where only metrics travel ----------------------------------------------------------
_ACTIVE: contextvars.ContextVar[dict[str, MetricProtocol] | None] = contextvars.ContextVar(
    "sentsweep_protocols", default=None)


@contextlib.contextmanager
def collect_protocols() -> Iterator[dict[str, MetricProtocol]]:
    """Collect the protocols of every metric evaluated inside the block (metric key -> protocol).

    A key keeps the protocol of the evaluation that produced it first in the block: a trial's selection
    metric is the dev evaluator's (the loop's best value is what the trial logs under that key), not that
    of a later test-suite evaluation that also reports the dev split. Blocks nest; each sees its own.
    """
    found: dict[str, MetricProtocol] = {}
    token = _ACTIVE.set(found)
    try:
        yield found
    finally:
        _ACTIVE.reset(token)


def record_protocols(protocols: Mapping[str, MetricProtocol]) -> None:
    """Hand ``protocols`` to the active :func:`collect_protocols` block (nothing outside one)."""
    found = _ACTIVE.get()
    if found is not None:
        for key, protocol in protocols.items():
            found.setdefault(key, protocol)
