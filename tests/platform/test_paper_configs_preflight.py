"""Every paper config (configs/paper-*.yaml) passes the checks a sweep runs before Ray starts
(:func:`~sentsweep.platform.driver.preflight.check_sweep`), once its model and data are staged: the model and the
hub datasets as files in a Hugging Face cache laid out as the hub delivers them (offline), prepared with
``sentsweep data prepare``, and the shared evaluation data as $SENTSWEEP_DATA. Only the deployment settings are
local here (storage and tracking: the configs name a MinIO and an MLflow server of a cluster)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sentsweep.data.prepare import prepare
from sentsweep.errors import DataError
from sentsweep.platform.config import load_sweep_config
from sentsweep.platform.driver.preflight import check_only
from tests.data.hub_cache import hf_cache_file, nli_parquet

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("paper-*.yaml"))
SENTENCES = ["The cat sat on the mat.", "It was raining in the city.", "She has never been there."]


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> dict[str, Path]:
    """The hub's files in a cache folder, and the prepared sets every paper config names."""
    root = tmp_path_factory.mktemp("staged")
    cache = root / "hf"
    for name in ("config.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_bert_dir / name).is_file():
            model_file = hf_cache_file(cache, "bert-base-uncased", name, kind="models")
            model_file.write_bytes((tiny_bert_dir / name).read_bytes())
    hf_cache_file(cache, "princeton-nlp/datasets-for-simcse", "wiki1m_for_simcse.txt").write_text(
        "\n".join(SENTENCES) + "\n")
    parquet = "refs/convert/parquet"
    nli_parquet(hf_cache_file(cache, "stanfordnlp/snli", "plain_text/train/0000.parquet", ref=parquet),
                [0, 1, 2], hub_features=True)
    nli_parquet(hf_cache_file(cache, "nyu-mll/multi_nli", "default/train/0000.parquet", ref=parquet),
                [2, 0], hub_features=False)
    pq.write_table(pa.table({"text": SENTENCES}),
                   hf_cache_file(cache, "bookcorpus/bookcorpus", "plain_text/train/0000.parquet", ref=parquet))
    with zipfile.ZipFile(hf_cache_file(cache, "stanfordnlp/glove", "glove.840B.300d.zip", kind="models"), "w") as z:
        z.writestr("glove.840B.300d.txt", "the 0.1 0.2 0.3\ncat 1 2 3\n")
    prepared = root / "prepared"
    for name in ("wiki1m", "nli-train", "bookcorpus", "glove-840b"):
        prepare(name, to=str(prepared), hub_cache=cache, log=lambda _: None)
    return {"cache": cache, "prepared": prepared, "root": root}


@pytest.fixture
def offline_hub(staged: dict[str, Path], shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The staged cache as the Hugging Face cache, the hub offline, the prepared root and the shared data set."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(staged["cache"]))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(staged["cache"]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTSWEEP_PREPARED", str(staged["prepared"]))
    monkeypatch.setenv("SENTSWEEP_DATA", str(shared_data))
    return staged


def _preflight(path: Path, tmp_path: Path) -> None:
    """What ``sentsweep sweep CONFIG --check`` runs (the checks ``run_sweep`` makes before Ray starts), on the config
    with local storage and tracking."""
    config = load_sweep_config(path).model_copy(update={
        "storage_path": str(tmp_path / "ray_results"), "storage_endpoint_url": None})
    config.tracking = config.tracking.model_copy(update={"uri": f"sqlite:///{tmp_path / 'mlruns.db'}",
                                                         "artifact_location": str(tmp_path / "artifacts")})
    lines: list[str] = []
    check_only(config, str(path), lines.append)
    assert lines[-1].startswith("checks passed"), lines


def test_every_paper_config_is_checked():
    assert len(CONFIGS) == 6, [p.name for p in CONFIGS]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_a_paper_config_passes_the_pre_start_checks_once_staged(path: Path, offline_hub, tmp_path: Path) -> None:
    config = load_sweep_config(path)
    assert config.data_dir is None, "no config points outside the repository: $SENTSWEEP_DATA governs"
    assert config.reference is not None and config.reference.figures, "the paper's setting runs as the reference"
    _preflight(path, tmp_path)


def test_a_paper_config_without_its_prepared_data_is_refused(offline_hub, tmp_path: Path, monkeypatch) -> None:
    """The check can fail: the SNCSE config with nothing prepared names the missing corpus."""
    monkeypatch.setenv("SENTSWEEP_PREPARED", str(tmp_path / "empty"))
    with pytest.raises(DataError, match="wiki1m"):
        _preflight(next(p for p in CONFIGS if "sncse" in p.name), tmp_path)
