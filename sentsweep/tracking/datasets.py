"""A trial's training, dev and test data as MLflow dataset inputs: a trial reports the records as plain data
(the dicts of :func:`trial_datasets`' records), the driver logs them (:func:`log_dataset_inputs`)."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep._compat.mlflow import dataset_context_tag
from sentsweep.data.registry import PREPARED_PREFIX, REGISTRY
from sentsweep.data.source import DataSource, resolve_data_dir
from sentsweep.evaluation.metric_names import STS_TASK_SPLITS, task_data_splits
from sentsweep.evaluation.metric_protocols import TASK_FILES, FileSpec, file_sha256
from sentsweep.evaluation.sts import SAMPLE_SEED
from sentsweep.evaluation.suite import split_tasks

if TYPE_CHECKING:
    from mlflow import MlflowClient

#: MLflow's dataset contexts (the values of the input tag ``mlflow.data.context``).
TRAINING, VALIDATION, TEST = "training", "validation", "test"
#: Digest length (hex), as MLflow's own are short.
DIGEST_CHARS = 16


@dataclass(frozen=True)
class DatasetRecord:
    name: str
    digest: str
    source: str
    context: str
    profile: str = ""


def files_record(name: str, files: Sequence[Path], context: str, limit: int | None = None,
                 sample_seed: int | None = None) -> DatasetRecord:
    """The record of ``files`` as one dataset, cut to ``limit`` rows (drawn with ``sample_seed`` when given)."""
    sampled = limit is not None and sample_seed is not None
    digest = hashlib.sha256((f"{limit} seed {sample_seed}" if sampled else f"{limit}").encode())
    for path in files:
        digest.update(path.name.encode("utf-8") + b"\0" + file_sha256(path).encode())
    source = str(files[0]) if len(files) == 1 else os.path.commonpath([str(p) for p in files])
    profile: dict[str, Any] = {"files": [p.name for p in files], "bytes": sum(p.stat().st_size for p in files)}
    return _record(name, digest.hexdigest(), source, context, profile, limit, sample_seed)


def _record(name: str, digest: str, source: str, context: str, profile: dict[str, Any], limit: int | None,
            sample_seed: int | None) -> DatasetRecord:
    """A record named with the rows it keeps (``[100 sampled]``, ``[:100]``), noted in its profile too."""
    if limit is not None and sample_seed is not None:
        profile.update(sampled_rows=limit, sample_seed=sample_seed)
        name = f"{name}[{limit} sampled]"
    elif limit is not None:
        profile["first_rows"] = limit
        name = f"{name}[:{limit}]"
    return DatasetRecord(name, digest[:DIGEST_CHARS], source, context, json.dumps(profile, sort_keys=True))


def _registered(name: str, specs: Sequence[FileSpec], source: DataSource, context: str,
                limit: int | None = None, sample_seed: int | None = None) -> DatasetRecord | None:
    """The record of registry files (a split None: all of them); None when any is absent."""
    files = [source.path(f) for name, split in specs for wanted in ([split] if split else list(REGISTRY[name].files))
             for f in REGISTRY[name].files.get(wanted, ())]
    if not files or not all(p.is_file() for p in files):
        return None
    return files_record(name, files, context, limit, sample_seed)


def prepared_record(ref: str, limit: int | None = None, sample_seed: int | None = None) -> DatasetRecord | None:
    """The training record of a prepared dataset (``prepared:<name>``), None without its manifest."""
    from sentsweep.data.prepared import ref_store
    from sentsweep.data.staging import read_manifest

    store = ref_store(ref)
    if (manifest := read_manifest(store)) is None:
        return None
    sampled = limit is not None and sample_seed is not None
    digest = hashlib.sha256(f"{manifest.get('digest')} {limit} seed {sample_seed if sampled else None}".encode())
    profile: dict[str, Any] = {"kind": manifest.get("kind"), "rows": manifest.get("rows"),
                               "bytes": manifest.get("bytes")}
    return _record(str(manifest.get("name", ref)), digest.hexdigest(), store.uri, TRAINING, profile, limit, sample_seed)


def training_record(config: Any, source: DataSource) -> DatasetRecord | None:
    """The training data a config names: ``train_data`` + ``train_split``, or ``corpus``."""
    train_data = getattr(config, "train_data", None)
    if train_data is not None and train_data.startswith(PREPARED_PREFIX):
        return prepared_record(train_data, getattr(config, "max_train_pairs", None), SAMPLE_SEED)
    if train_data is not None and train_data in REGISTRY:
        split = getattr(config, "train_split", None)
        return _registered(f"{train_data}/{split}" if split else train_data, [(train_data, split)], source,
                           TRAINING, getattr(config, "max_train_pairs", None), SAMPLE_SEED)  # a seeded sample
    if (corpus := getattr(config, "corpus", None)) is None:
        return None
    limit = getattr(config, "max_sentences", None)
    if corpus.startswith(PREPARED_PREFIX) and "," not in corpus:
        return prepared_record(corpus, limit)
    if corpus in REGISTRY:
        return _registered(corpus, [(corpus, None)], source, TRAINING, limit)
    path = Path(corpus).expanduser()
    path = path if path.is_file() else source.path(corpus)
    return files_record(path.name, [path], TRAINING, limit) if path.is_file() else None


def _sts_records(task: str, source: DataSource, context: str, limit: int | None = None,
                 sample_seed: int | None = None) -> list[DatasetRecord | None]:
    return [_registered(name if split == "all" else f"{name}/{split}", [(name, None if split == "all" else split)],
                        source, context, limit, sample_seed) for name, split in task_data_splits(task)]


def trial_datasets(config: Any) -> list[DatasetRecord]:
    """A trial config's training, dev and test datasets whose files are there."""
    source = resolve_data_dir(getattr(config, "data_dir", None))
    records = [training_record(config, source)]
    task = str(getattr(config, "dev_metric", ""))
    if task in STS_TASK_SPLITS:
        records += _sts_records(task, source, VALIDATION, getattr(config, "max_dev_pairs", None), SAMPLE_SEED)
    if getattr(config, "test_tasks", None):
        sts, senteval, _ = split_tasks(config.test_tasks)
        tests = [record for task in sts for record in _sts_records(task, source, TEST)]
        tests += [_registered(task, TASK_FILES[task], source, TEST) for task in senteval]
        records += {r.name: r for r in tests if r is not None}.values()
    return [r for r in records if r is not None]


def log_dataset_inputs(client: MlflowClient, run_id: str, datasets: Sequence[dict[str, Any]]) -> None:
    """One MLflow dataset input per record; logging the same records again adds nothing."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import Dataset, DatasetInput, InputTag

    inputs = []
    for record in datasets:
        with warnings.catch_warnings():  # MLflow registers the local source twice and warns that it is ambiguous
            warnings.simplefilter("ignore")
            found = resolve_dataset_source(record["source"])
        fields = MetaDataset(found, name=record["name"], digest=record["digest"]).to_dict()
        entity = Dataset(fields["name"], fields["digest"], fields["source_type"], fields["source"],
                         fields.get("schema"), record.get("profile") or None)
        inputs.append(DatasetInput(entity, [InputTag(dataset_context_tag(), record["context"])]))
    if inputs:
        client.log_inputs(run_id, datasets=inputs)

