"""MTEB as an optional STS backend (``pip install 'sentsweep[mteb]'``, mteb 2.26): the same figures, MTEB's code.

Offline, the seven STS sets of this package (STS12-16 "all", STS-B test, SICK-R test) become MTEB custom
tasks the documented way: a subclass of ``mteb.abstasks.AbsTaskSTS`` with its ``TaskMetadata``, whose
``load_data`` builds the ``datasets`` split from the local files through :mod:`sentsweep.data` (no hub
access; the metadata's revision is the SHA-256 of the pairs, so a changed file is a different dataset).
MTEB then encodes, scores cosine similarity and computes its main score, ``cosine_spearman``; the metric
keys are this package's (``stsb_test``, ``sickr_test``, ``sts12_all`` ...), Spearman x100, so the two
backends compare key by key (``tests/evaluation/test_mteb_backend.py``: equal to 0.01 on MiniLM). The names are
the default backend's: ``stsb`` is STS-B dev and test (two tasks, ``STSBenchmarkLocal-dev`` and
``STSBenchmarkLocal``), ``stsb_dev``, ``stsb_test``, ``sickr_test``, ``sickr_trial`` one split each; ``sts`` is
the seven test sets above.

Any other name is looked up among MTEB's registered tasks (``mteb.get_tasks``), which download their data
from the hub: for users with internet. Their key is ``mteb_<TaskName>_<split>`` (main score x100).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE
from sentsweep.evaluation.metric_names import STS_TASK_SPLITS
from sentsweep.evaluation.protocols import Embedder
from sentsweep.evaluation.results import EvalResult
from sentsweep.evaluation.sts import STS_YEARS, StsSet, data_info, load_sts_sets

#: Local sets as custom MTEB tasks: our task name -> (MTEB-style task name, split, score range).
LOCAL_TASKS: dict[str, tuple[str, str, tuple[int, int]]] = {
    **{year: (f"{year.upper()}Local", "all", (0, 5)) for year in STS_YEARS},
    "stsb": ("STSBenchmarkLocal", "test", (0, 5)),
    "sickr": ("SICK-RLocal", "test", (1, 5)),
}
MAIN_SCORE = "cosine_spearman"
#: ``sts`` with this backend: the seven test sets (STS12-16 "all", STS-B test, SICK-R test).
SEVEN_SETS: tuple[str, ...] = (*STS_YEARS, "stsb_test", "sickr_test")


def _require_mteb() -> Any:
    try:
        import mteb
    except ImportError:
        raise ImportError("the MTEB backend needs mteb: pip install 'sentsweep[mteb]' (mteb 2.26.x)") from None
    return mteb


def _digest(st: StsSet) -> str:
    digest = hashlib.sha256()
    for p in st.pairs:
        digest.update(f"{p.s1}\t{p.s2}\t{p.score!r}\n".encode())
    return digest.hexdigest()


def local_task_name(st: StsSet) -> str:
    """The MTEB task name of one loaded set, distinct per split: :data:`LOCAL_TASKS`'s name for its split,
    suffixed with any other split (``STSBenchmarkLocal-dev``, ``SICK-RLocal-trial``)."""
    name, split, _ = LOCAL_TASKS[st.task]
    return name if st.split == split else f"{name}-{st.split}"


def is_local(name: str) -> bool:
    """Whether ``name`` is one of this package's STS names (:data:`STS_TASK_SPLITS`) over local sets."""
    splits = STS_TASK_SPLITS.get(name.lower())
    return splits is not None and all(task in LOCAL_TASKS for task, _ in splits)


def local_task(st: StsSet) -> Any:
    """An ``AbsTaskSTS`` over one loaded set (``load_sts_sets``): MTEB's custom-task route, data kept local."""
    _require_mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.sts import AbsTaskSTS
    from mteb.abstasks.task_metadata import TaskMetadata

    _, _, (low, high) = LOCAL_TASKS[st.task]
    name = local_task_name(st)
    pairs = st.pairs
    split = "test"  # MTEB's split name; STS12-16 "all" is the concatenated test set

    class LocalSTS(AbsTaskSTS):
        min_score, max_score = low, high
        metadata = TaskMetadata(
            name=name,
            dataset={"path": f"sentsweep-local/{st.key}", "revision": _digest(st)},
            description=f"{st.task} {st.split} from the local files (sentsweep.data), {len(pairs)} pairs",
            type="STS",
            category="t2t",
            modalities=["text"],
            eval_splits=[split],
            eval_langs=["eng-Latn"],
            main_score=MAIN_SCORE,
        )

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            """The local pairs as the one ``test`` split (overrides the hub download)."""
            if self.data_loaded:
                return
            self.dataset = DatasetDict({split: Dataset.from_dict({
                "sentence1": [p.s1 for p in pairs], "sentence2": [p.s2 for p in pairs],
                "score": [float(p.score) for p in pairs]})})
            self.data_loaded = True

    return LocalSTS()


class MtebEncoder:
    """An :class:`Embedder` as MTEB's ``EncoderProtocol`` (cosine similarity, no prompts)."""

    mteb_model_meta = None  # MTEB then uses an empty ModelMeta (nothing is cached under a model name)

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def encode(self, inputs: Any, *, task_metadata: Any = None, hf_split: str = "", hf_subset: str = "",
               prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
        rows = [np.asarray(self.embedder.encode(list(batch["text"])), dtype=np.float32) for batch in inputs]
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        from mteb.similarity_functions import cos_sim

        return cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        from mteb.similarity_functions import pairwise_cos_sim

        return pairwise_cos_sim(embeddings1, embeddings2)


def _split_names(tasks: Sequence[str] | str) -> list[str]:
    names = [tasks] if isinstance(tasks, str) else list(tasks)
    out = [n.strip() for t in names for n in t.split(",") if n.strip()]
    return [n for t in out for n in (SEVEN_SETS if t.lower() == "sts" else (t,))]


def evaluate_mteb(embedder: Embedder, tasks: Sequence[str] | str = SEVEN_SETS, data_dir: str | Path | None = None,
                  batch_size: int = DEFAULT_BATCH_SIZE) -> EvalResult:
    """Evaluate ``embedder`` with MTEB: local STS sets by our names (``sts``, ``stsb``, ``stsb_dev``, ``sickr``,
    ``sts12`` ...), any other name as a registered MTEB task (hub data). Spearman x100 under our keys."""
    mteb = _require_mteb()
    names = _split_names(tasks)
    local = [n.lower() for n in names if is_local(n)]
    remote = [n for n in names if not is_local(n)]
    sets = load_sts_sets(local, data_dir) if local else []
    task_objects = [local_task(st) for st in sets]
    keys = {local_task_name(st): st.key for st in sets}
    if remote:
        task_objects += list(mteb.get_tasks(tasks=remote))
    result = mteb.evaluate(MtebEncoder(embedder), task_objects, cache=None, show_progress_bar=False,
                           encode_kwargs={"batch_size": batch_size}, overwrite_strategy="always")
    metrics: dict[str, float] = {}
    for task_result in result.task_results:
        for split, subsets in task_result.scores.items():
            for scores in subsets:
                key = keys.get(task_result.task_name, f"mteb_{task_result.task_name}_{split}")
                metrics[key] = 100.0 * float(scores["main_score"])
    table = pd.DataFrame([{"task": key, "backend": "mteb", "main_score": MAIN_SCORE, "spearman": value}
                          for key, value in metrics.items()])
    return EvalResult(metrics, table, {"backend": f"mteb {mteb.__version__}", **data_info(data_dir)})
