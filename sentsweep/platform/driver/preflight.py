"""Checks before Ray starts (:func:`check_sweep`): storage, tracking, model, spaCy and data, each failure one line
naming the field or file. ``sentsweep sweep CONFIG --check`` runs them alone (:func:`check_only`)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sentsweep.credentials import mask_uri, refused_status
from sentsweep.errors import ConfigError, DataError
from sentsweep.platform.config import SweepConfig, is_server_uri
from sentsweep.platform.driver import specs
from sentsweep.platform.tracking.reachability import first_line, probe

#: Lines of a corpus read to check that it parses (corpora run to millions of lines).
CORPUS_HEAD_LINES = 200
#: Seconds to wait for the MLflow server's answer.
TRACKING_TIMEOUT_S = 10.0


def check_sweep(config: SweepConfig, trials: Iterable[Any], source: str | None = None) -> None:
    """Every check on a resolved ``config`` and its validated trial configs."""
    from sentsweep.data.spacy_models import resolve_spacy_model

    check_data_source(config, source)
    check_storage(config, source)
    check_tracking(config.tracking.uri, source)
    for trial in {t.model_dump_json(exclude={"tracking"}): t for t in trials}.values():  # each distinct one once
        check_model(trial.model, specs.settings_field(config, "model"), source)
        for name in (n for n in ("negation_model", "spacy_model") if hasattr(trial, n)):  # spaCy pipelines
            try:
                resolve_spacy_model(getattr(trial, name), field=specs.settings_field(config, name))
            except ConfigError as exc:
                raise ConfigError(str(exc).split(": ", 1)[-1], field=exc.field, file=source) from None
        check_data(trial, lambda name: specs.settings_field(config, name), source)
    if config.final_tasks:  # empty: no test evaluation after the sweep (finalize skips it)
        _check_sts(config.final_tasks, config.data_dir, field="final_tasks", source=source)


def check_data_source(config: SweepConfig, source: str | None = None) -> bool:
    """Whether the sweep's data resolve to the bundled sample, said in a warning; refused with ``full_data`` (the
    paper configs): a paper's sweep on the sample would report sample figures."""
    from sentsweep.data.source import DATA_ENV

    try:
        warning = sample_data_warning(config.data_dir)
    except DataError as exc:  # the config's data_dir (one $SENTSWEEP_DATA names says so itself)
        if config.data_dir is None:
            raise
        raise ConfigError(f"{exc.file}: {exc.message}", field="data_dir", file=source) from None
    if warning is None:
        return False
    if config.full_data:
        raise ConfigError(f"resolves to the bundled data sample, and this config needs the full data (full_data: "
                          f"true): set data_dir, or {DATA_ENV}, to a directory in the SentEval layout (see "
                          "docs/own-data.md)", field="data_dir", file=source)
    logging.getLogger(__name__).warning(warning)
    return True


def sample_data_warning(data_dir: str | None) -> str | None:
    """The warning that ``data_dir`` resolves to the bundled sample; None for real data."""
    from sentsweep.data.source import resolve_data_dir

    return ("data: the bundled sample (data_dir and $SENTSWEEP_DATA unset): a demo's data, figures not comparable to "
            "the papers'") if resolve_data_dir(data_dir).is_sample else None


def check_storage(config: SweepConfig, source: str | None = None) -> None:
    """Write and delete a probe file under ``storage_path``, and the folders it made (nothing is left behind)."""
    import pyarrow
    import pyarrow.fs

    from sentsweep.platform.location import locate

    root = config.storage_path.rstrip("/")
    probe = locate(f"{root}/.sentsweep-probe-{secrets.token_hex(4)}", config.storage_endpoint_url)
    try:
        fs, path = probe.resolve()
        folder = path.rsplit("/", 1)[0]
        made, parent = None, folder.rstrip("/")  # the outermost missing folder on the way to folder
        while parent and fs.get_file_info(parent).type == pyarrow.fs.FileType.NotFound:
            made, parent = parent, parent.rpartition("/")[0]
        fs.create_dir(folder, recursive=True)
        with fs.open_output_stream(path) as out:
            out.write(b"sentsweep storage probe\n")
        fs.delete_file(path)
        if made is not None:
            fs.delete_dir(made)
    except (OSError, pyarrow.ArrowException) as exc:
        message = " ".join(str(exc).split())[:300]
        raise ConfigError(f"cannot write to {mask_uri(root)}: {message}", field="storage_path", file=source) from None


def check_tracking(uri: str, source: str | None = None) -> None:
    """The MLflow store at ``uri`` answers (a server and its store, a database) or can be written (sqlite, a folder)."""
    if urlparse(uri).scheme.split("+", 1)[0] == "postgresql":
        check_database(uri, source)
        return
    if is_server_uri(uri) and not uri.startswith("databricks"):  # databricks: nothing to probe
        try:
            urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=TRACKING_TIMEOUT_S).close()  # noqa: S310
        except urllib.error.HTTPError:
            pass  # it answered (an auth-protected health page still means reachable)
        except (urllib.error.URLError, OSError) as exc:
            raise ConfigError(f"MLflow server {mask_uri(uri)} is not reachable ({getattr(exc, 'reason', exc)}); start "
                              "it or fix the URI", field="tracking.uri", file=source) from None
        status, reason = probe(uri)
        if reason is not None:  # /health answers while the server's database is down
            raise ConfigError(f"MLflow server {mask_uri(uri)} answers, but its store does not ({reason})",
                              field="tracking.uri", file=source)
        if (refused := refused_status(status, uri)) is not None:  # no login or a wrong one: the sweep's own line
            raise ConfigError(refused.message, field="tracking.uri", file=source)
        return
    folder = Path(uri.removeprefix("sqlite:///")).parent if uri.startswith("sqlite:///") else (
        Path(urlparse(uri).path) if uri.startswith("file://") else None)
    if folder is None:
        return
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK):
        raise ConfigError(f"cannot write the MLflow store under {folder}", field="tracking.uri", file=source)


def check_database(uri: str, source: str | None = None) -> None:
    """A tracking database at ``uri`` takes a connection within :data:`TRACKING_TIMEOUT_S` (libpq reads the
    password from ``PGPASSWORD``, where the config's URI put it)."""
    import sqlalchemy

    engine = None
    try:
        engine = sqlalchemy.create_engine(uri, connect_args={"connect_timeout": int(TRACKING_TIMEOUT_S)})
        engine.connect().close()
    except ImportError as exc:
        raise ConfigError(f"the database driver {exc.name} of {mask_uri(uri)} is not installed (pip install "
                          f"{exc.name})", field="tracking.uri", file=source) from None
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise ConfigError(f"MLflow database {mask_uri(uri)} does not answer ({first_line(getattr(exc, 'orig', exc))}); "
                          "start it or fix the URI", field="tracking.uri", file=source) from None
    finally:
        if engine is not None:
            engine.dispose()


def check_model(name: str, field: str = "model", source: str | None = None) -> None:
    """``name`` resolves without downloading: a local folder, an installed alias, or a cached hub id."""
    from huggingface_hub import constants, try_to_load_from_cache

    from sentsweep.methods.encoders import resolve_model_path

    try:
        path = resolve_model_path(name)
    except ConfigError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], field=field, file=source) from None
    folder = Path(path).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ConfigError(f"'{path}' is a folder without a config.json (not a transformers model)",
                              field=field, file=source)
        return
    if "://" in path or path.startswith(("/", ".", "~")):
        raise ConfigError(f"no model folder at '{path}'", field=field, file=source)
    if isinstance(try_to_load_from_cache(path, "config.json"), str) or not constants.HF_HUB_OFFLINE:
        return
    raise ConfigError(f"model '{path}' is neither a local folder nor in the Hugging Face cache, and the hub is "
                      "offline (HF_HUB_OFFLINE)", field=field, file=source)


def check_data(trial: Any, field_of: Callable[[str], str] = str, source: str | None = None) -> None:
    """The training data of ``trial`` parse (corpora: their first lines), and its dev and STS test sets;
    ``field_of`` spells a trial field where the user set it (``fixed.dev_data``), in the config file ``source``."""
    from sentsweep import data as datasets
    from sentsweep.data.registry import REGISTRY
    from sentsweep.data.registry import locate as locate_dataset
    from sentsweep.evaluation.sts import load_sts_sets
    from sentsweep.trainables.trial_config import DEV_SETS

    train = getattr(trial, "train_data", None)
    if train is not None:
        kind = REGISTRY[train].kind if train in REGISTRY else "scored-pairs"
        loader = datasets.labelled_pairs if kind == "labelled-pairs" else datasets.scored_pairs
        split = getattr(trial, "train_split", "train")
        with _naming_field(field_of("train_data"), source=source):
            rows = loader(train, split, data_dir=trial.data_dir)
        if not rows:
            try:
                _, paths = locate_dataset(train, kind, split, trial.data_dir)
            except DataError:
                paths = []
            raise DataError(f"{_field(field_of('train_data'), source)} ({train}, split '{split}'): the training set "
                            "has no rows", file=", ".join(str(p) for p in paths) or None)
    for name in (n.strip() for n in (getattr(trial, "corpus", None) or "").split(",") if n.strip()):
        with _naming_field(field_of("corpus"), source=source):
            _check_corpus_head(name, trial.data_dir)
    for field, name in [("dev_data", trial.dev_data), *(("extra_dev_data", n) for n in trial.extra_dev_data)]:
        with _naming_field(field_of(field), name, source):  # a missing or malformed file: with its line, the field
            load_sts_sets([DEV_SETS[name]], trial.data_dir)
    _check_sts(trial.test_tasks, trial.data_dir, field=field_of("test_tasks"), source=source)


@contextlib.contextmanager
def _naming_field(field: str, name: str | None = None, source: str | None = None) -> Iterator[None]:
    """A DataError names the field, the config file ``source`` that sets it (and the set ``name``); one that names
    a file is kept as it is without ``name``."""
    try:
        yield
    except DataError as exc:
        if exc.file is not None and name is None:
            raise
        raise DataError(f"{_field(field, source)}{f' ({name})' if name else ''}: {exc.message}", file=exc.file,
                        line=exc.line) from None


def _field(field: str, source: str | None) -> str:
    """``field 'fixed.dev_data' of sweep.yaml``: where a data error's setting is written."""
    return f"field '{field}'" + (f" of {source}" if source else "")


def _check_sts(tasks: str | list[str], data_dir: str | None, field: str, source: str | None = None) -> None:
    from sentsweep.evaluation import split_tasks
    from sentsweep.evaluation.sts import load_sts_sets

    try:
        sts, _, _ = split_tasks(tasks)
    except ValueError as exc:
        raise ConfigError(str(exc), field=field, file=source) from None
    if sts:
        load_sts_sets(sts, data_dir)


def _check_corpus_head(name: str, data_dir: str | None) -> None:
    from sentsweep import data as datasets
    from sentsweep.data.corpora import parse_documents
    from sentsweep.data.registry import PREPARED_PREFIX, REGISTRY
    from sentsweep.data.registry import locate as locate_dataset

    if name.startswith(PREPARED_PREFIX):  # staged by `sentsweep data prepare`: its manifest and columns open
        if not any(len(doc.sentences) for doc in datasets.corpus(name, data_dir=data_dir)):
            raise DataError(f"prepared corpus {name!r} holds no sentence")
        return
    if name in REGISTRY:
        _, (path,) = locate_dataset(name, "corpus", None, data_dir)
    else:
        given = Path(name).expanduser()
        path = given if given.is_file() else datasets.resolve_data_dir(data_dir).path(given)
        if not path.is_file():  # no file to name: the error names the value, and the field names where it is set
            known = ", ".join(info.name for info in REGISTRY.values() if info.kind == "corpus")
            raise DataError(f"'{name}' is neither a registered corpus ({known}), nor {PREPARED_PREFIX}NAME, nor a "
                            "text file (a relative path is read from the working directory, then the data directory)")
    try:
        with path.open(encoding="utf-8") as handle:
            lines = list(itertools.islice(handle, CORPUS_HEAD_LINES))
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc.reason}) in its first {CORPUS_HEAD_LINES} lines", file=path) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=path) from None
    if not any(doc.sentences for doc in parse_documents(lines, default_title=name)):
        raise DataError(f"no sentence in its first {len(lines)} lines", file=path)


def after_the_search(config: SweepConfig) -> str:
    """What a sweep runs once its search ended, in one line."""
    top_k, seeds = config.confirm.top_k, config.confirm.seeds
    best = "the best configuration" if top_k == 1 else f"the {top_k} best configurations"
    trials = f"up to {top_k * seeds} trial{'s' * (top_k * seeds > 1)}"
    steps = [f"confirmation of {best} x {seeds} further seed{'s' * (seeds > 1)} ({trials})" if top_k
             else "no confirmation stage",
             f"test suite '{config.final_tasks}' on the winner" if config.final_tasks else "no test evaluation"]
    steps += ["export of the winner's model"] if config.export else []
    steps += [f"registered as '{config.register_model}'"] if config.register_model else []
    return "; ".join(steps)


def budget_text(config: SweepConfig) -> str:
    """The sweep's limits in words: ``budget``'s hours and ``time_budget_s``."""
    limits = [f"{name} {hours:g}" for name, hours in config.budget.model_dump().items()
              if hours is not None]
    limits += [f"time_budget_s {config.time_budget_s:g} (stops every trial at once)"] if config.time_budget_s else []
    return ", ".join(limits) or "none (the search runs its trials)"


def check_only(config: SweepConfig, source: str | None = None, echo: Callable[[str], None] = print) -> None:
    """``sentsweep sweep CONFIG --check``: a sweep's checks and warm start, and what it would run, printed; nothing is
    started, locked or left written. A failure raises the same one-line error a sweep would."""
    from sentsweep.data.source import DATA_ENV, resolve_data_dir

    resolved = config.resolved(source=source)
    trainable, space = specs.resolve_specs(resolved, source)
    trials = specs.validate_trials(resolved, trainable, space, source)
    check_sweep(resolved, trials, source)
    points = specs.space_points(space)
    lines = [f"sweep {resolved.name}{f' ({source})' if source else ''}: method {resolved.method}, "
             f"search space '{space.name}'", "search space:", *(f"  {line}" for line in space.describe())]
    if shared := {**resolved.fixed, **space.fixed}:
        lines.append(f"fixed in every trial: {specs.describe_settings(shared, 4)}")
    lines.append(f"first point: {specs.describe_settings(points[0], 4) or '(all sampled)'}")
    lines += [f"then: {specs.describe_settings(p, 4)}" for p in points[1:]]
    if resolved.stop_when == "converged" and resolved.convergence.min_trials >= resolved.num_samples:
        lines.append(f"note: convergence.min_trials ({resolved.convergence.min_trials}) is not below num_samples "
                     f"({resolved.num_samples}): the check never ends the search early")
    if len(points) > resolved.num_samples:
        lines.append(f"note: {len(points)} points are evaluated first, and num_samples is {resolved.num_samples}: "
                     f"the last {len(points) - resolved.num_samples} will not run")
    artifacts = resolved.tracking.artifact_location
    data_dir = trials[0].data_dir if trials else resolved.data_dir
    data = resolve_data_dir(data_dir)
    origin = "the bundled sample" if data.is_sample else "data_dir" if data_dir else f"${DATA_ENV}"
    lines.append(f"data: {data.root} ({origin})")  # where the trials read their data, and what chose it
    lines += [f"trials: {resolved.trials_text}, {resolved.max_concurrent_trials or 'as many as fit'} at a "
              f"time; metric {resolved.metric} ({resolved.mode})", f"search: {resolved.search_text()}",
              f"resources per trial: {resolved.resources.cpu:g} CPU, {resolved.resources.gpu:g} GPU",
              f"budget: {budget_text(resolved)}", f"after the search: {after_the_search(resolved)}",
              f"sweep folder: under {mask_uri(resolved.storage_path)} (made when the sweep starts)",
              f"tracking: {mask_uri(resolved.tracking.uri)}, experiment '{resolved.tracking.experiment}'"
              + (f", artifacts {mask_uri(artifacts)}" if artifacts else "")]
    if resolved.warm_start:  # read before anything is printed: a failure is the one line a sweep would say
        from sentsweep.platform.search.warm_start import load_history

        history = load_history(resolved.warm_start, space.define_by_run, resolved.storage_endpoint_url, resolved,
                               source)
        lines.append(f"warm start: {len(history)} trials of {mask_uri(resolved.warm_start)}")
    for line in [*lines, "checks passed: config, search space, data, model, storage, tracking (Ray was not started)"]:
        echo(line)
