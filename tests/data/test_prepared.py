"""``sentsweep data prepare`` and prepared datasets: small local files, the hub's real download functions on a
Hugging Face cache laid out as the hub delivers it (offline), the registry's ``prepared:`` names, and a
non-local store (uploaded, then copied once to the node cache)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.fs
import pytest

from sentsweep.cli import main
from sentsweep.data import NLI_LABELS, corpus, labelled_pairs
from sentsweep.data.columns import TextColumn, TextColumnWriter
from sentsweep.data.corpora import read_documents
from sentsweep.data.prepare import prepare
from sentsweep.data.prepared import open_prepared
from sentsweep.data.staging import Store, local_folder, publish, read_manifest, work_folder
from sentsweep.errors import DataError
from sentsweep.methods.multiview.vocab import load_word_vectors
from tests.data.hub_cache import hf_cache_file, nli_parquet

WIKI = ["YMCA in South Australia", "", "  Dr. Smith said: café ", "# not a title in the lines format"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches and the default prepared root inside the test's folder; the hub offline."""
    import huggingface_hub.constants

    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SENTSWEEP_PREPARED", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def test_text_column_round_trip(tmp_path: Path) -> None:
    values = ["a", "", "two\nlines", "ünïcode", "last"]
    writer = TextColumnWriter(tmp_path, "col")
    for value in values:
        writer.append(value)
    writer.close()
    column = TextColumn(tmp_path, "col")
    assert list(column) == values and len(column) == 5
    assert column[-1] == "last" and column[2] == "two\nlines"
    assert list(column[1:4]) == values[1:4] and list(column[1:4][1:]) == values[2:4] and len(column[4:2]) == 0
    with pytest.raises(IndexError):
        column[5]
    assert (tmp_path / "col.txt").read_text(encoding="utf-8").startswith("a\n\ntwo\nlines\n")


def test_wiki1m_from_a_local_file(tmp_path: Path) -> None:
    source = tmp_path / "wiki1m_for_simcse.txt"
    source.write_text("\n".join(WIKI) + "\n", encoding="utf-8")
    result = prepare("wiki1m", to=str(tmp_path / "store"), from_path=source, log=lambda _: None)
    assert not result.reused and result.manifest["rows"] == 3 and result.manifest["kind"] == "corpus"
    (doc,) = corpus(f"prepared:{tmp_path / 'store' / 'wiki1m'}")
    assert doc.title == "wiki1m"
    assert list(doc.sentences) == ["YMCA in South Australia", "Dr. Smith said: café", WIKI[3]]
    manifest = json.loads((tmp_path / "store" / "wiki1m" / "manifest.json").read_text())
    assert manifest["bytes"] == sum(p.stat().st_size for p in (tmp_path / "store" / "wiki1m").iterdir()
                                    if p.name != "manifest.json")
    again = prepare("wiki1m", to=str(tmp_path / "store"), from_path=source, log=lambda _: None)
    assert again.reused and again.manifest["digest"] == result.manifest["digest"]
    source.write_text("changed\n", encoding="utf-8")
    forced = prepare("wiki1m", to=str(tmp_path / "store"), from_path=source, force=True, log=lambda _: None)
    assert forced.manifest["rows"] == 1 and list(corpus(f"prepared:{tmp_path / 'store/wiki1m'}")[0].sentences) == [
        "changed"]


def test_titled_documents_read_as_the_small_file_loader(tmp_path: Path) -> None:
    source = tmp_path / "umbc.txt"
    source.write_text("# First\none.\n# two stays a sentence\n\nuntitled a\nuntitled b\n\n# Third\nthree\n")
    prepare("umbc", to=str(tmp_path), from_path=source, kind="corpus", fmt="documents", log=lambda _: None)
    prepared = corpus(f"prepared:{tmp_path / 'umbc'}")
    expected = read_documents(source)
    assert [d.title for d in prepared] == ["First", "umbc:2", "Third"]
    assert [d.title.replace("umbc", "x") for d in prepared] == [d.title.replace("umbc", "x") for d in expected]
    assert [list(d.sentences) for d in prepared] == [list(d.sentences) for d in expected]


def test_hub_paths_offline_from_the_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "hf"
    hf_cache_file(cache, "princeton-nlp/datasets-for-simcse", "wiki1m_for_simcse.txt").write_text("s1\ns2\n")
    parquet = "refs/convert/parquet"
    nli_parquet(hf_cache_file(cache, "stanfordnlp/snli", "plain_text/train/0000.parquet", ref=parquet),
                 [0, 1, 2, -1], hub_features=True)
    nli_parquet(hf_cache_file(cache, "nyu-mll/multi_nli", "default/train/0000.parquet", ref=parquet,
                                commit="beef"), [2, 0], hub_features=False)
    root = tmp_path / "prepared"
    monkeypatch.setenv("SENTSWEEP_PREPARED", str(root))
    prepare("wiki1m", hub_cache=cache, log=lambda _: None)
    assert list(corpus("prepared:wiki1m")[0].sentences) == ["s1", "s2"]
    result = prepare("nli-train", hub_cache=cache, log=lambda _: None)
    assert result.manifest["rows"] == 5  # the -1 row (no gold label) dropped
    pairs = labelled_pairs("snli", "train+mnli")
    assert [(p.s1, NLI_LABELS[p.label]) for p in pairs] == [
        ("p0", "entailment"), ("p1", "neutral"), ("p2", "contradiction"), ("p0", "contradiction"),
        ("p1", "entailment")]
    assert pairs[1:3] == list(pairs)[1:3]
    sources = result.manifest["source"]["sources"]
    assert [s["repo_id"] for s in sources] == ["stanfordnlp/snli", "nyu-mll/multi_nli"]
    with pytest.raises(DataError, match="could not get .*mnli|Offline"):
        prepare("mnli-train", hub_cache=tmp_path / "empty-cache", log=lambda _: None)


def test_registry_names_the_prepare_command(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="sentsweep data prepare snli-train"):
        labelled_pairs("snli", "train")
    with pytest.raises(DataError, match=r"no split 'val'.*prepared: train, train\+mnli"):
        labelled_pairs("snli", "val")
    with pytest.raises(DataError, match=r"not prepared .*run `sentsweep data prepare wiki1m` once"):
        corpus("prepared:wiki1m")  # a catalogue name: no --kind, no --from


def test_wrong_kind_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "w.txt"
    source.write_text("a\n")
    prepare("wiki1m", to=str(tmp_path), from_path=source, log=lambda _: None)
    with pytest.raises(DataError, match="is 'corpus' data, not 'labelled-pairs'"):
        labelled_pairs("snli", f"prepared:{tmp_path / 'wiki1m'}")


def test_glove_zip_to_memory_mapped_vectors(tmp_path: Path) -> None:
    lines = ["the 0.1 0.2 0.3", "The 1 2 3", "at&t x 4 5 6", ". -1 -2 -3"]  # 'at&t x': a word with a space
    archive = tmp_path / "glove.840B.300d.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("glove.840B.300d.txt", "\n".join(lines) + "\n")
    result = prepare("glove-840b", to=str(tmp_path / "store"), from_path=archive, log=lambda _: None)
    assert result.manifest["rows"] == 3 and result.manifest["dim"] == 3 and result.manifest["uncased"] is False
    vectors = load_word_vectors(f"prepared:{tmp_path / 'store' / 'glove-840b'}", 2)
    assert vectors.words == ("the", "The") and not vectors.uncased
    np.testing.assert_array_equal(vectors.matrix, np.array([[0.1, 0.2, 0.3], [1, 2, 3]], dtype=np.float32))
    full = open_prepared(f"prepared:{tmp_path / 'store' / 'glove-840b'}", "vectors")
    assert isinstance(full.matrix, np.memmap) and full.matrix.shape == (3, 3) and list(full.words)[2] == "."


def _remote_wiki(tmp_path: Path) -> tuple[Store, Path]:
    """A small corpus published to a non-local pyarrow filesystem (a SubTree over another folder): the S3 path."""
    remote_root = tmp_path / "bucket"
    remote_root.mkdir()
    fs = pyarrow.fs.SubTreeFileSystem(str(remote_root), pyarrow.fs.LocalFileSystem())
    store = Store(fs, "prepared/wiki1m", "sub://bucket/prepared/wiki1m")
    source = tmp_path / "w.txt"
    source.write_text("alpha\nbeta\n")
    local = prepare("wiki1m", to=str(tmp_path / "local"), from_path=source, log=lambda _: None)
    work = work_folder(store)
    for path in (tmp_path / "local" / "wiki1m").iterdir():
        if path.name != "manifest.json":
            (work / path.name).write_bytes(path.read_bytes())
    publish(work, local.manifest, store)
    assert (remote_root / "prepared" / "wiki1m" / "manifest.json").is_file() and not work.exists()
    return store, remote_root / "prepared" / "wiki1m"


def test_a_store_that_is_not_local_is_uploaded_then_copied_once(tmp_path: Path) -> None:
    store, remote = _remote_wiki(tmp_path)
    manifest = read_manifest(store)
    assert manifest is not None and manifest["digest"] == json.loads((remote / "manifest.json").read_text())["digest"]
    copy = local_folder(store, manifest)
    assert copy != remote and list(TextColumn(copy, "sentences")) == ["alpha", "beta"]
    assert copy == tmp_path / "cache" / "prepared-staged" / manifest["digest"]
    assert local_folder(store, manifest) == copy  # the second trial on the machine reuses the copy


def _outside_the_cache(tmp_path: Path, remote: Path) -> list[Path]:
    """Every file under ``tmp_path`` that is neither the store's, the local preparation's nor under the cache."""
    kept = (tmp_path / "cache", tmp_path / "bucket", tmp_path / "local", tmp_path / "w.txt")
    return [p for p in tmp_path.rglob("*") if p.is_file() and not any(p.is_relative_to(k) for k in kept)]


@pytest.mark.parametrize("field, value", [
    ("name", "../../../escape"),
    ("name", "/abs/escape"),
    ("digest", "/../../../../escape"),
    ("files", {"../../escape": {"bytes": 1, "sha256": "0" * 64}}),
])
def test_a_planted_manifest_writes_nothing_outside_the_cache(tmp_path: Path, field: str, value: object) -> None:
    """Whoever writes the bucket writes its manifests: one naming a path (the copy's folder was built from its
    name and digest: a planted file could land anywhere on the machine) is refused, and nothing is copied."""
    store, remote = _remote_wiki(tmp_path)
    manifest = json.loads((remote / "manifest.json").read_text())
    (remote / "manifest.json").write_text(json.dumps({**manifest, field: value}))
    (remote / "escape").write_text("[core]\n\tfsmonitor = touch PWNED\n")
    planted = read_manifest(store)
    assert planted is not None
    if field == "name":  # the name is a label: the copy is named by the (checked) digest
        assert local_folder(store, planted).parent == tmp_path / "cache" / "prepared-staged"
    else:
        with pytest.raises(DataError, match="manifest.json: '(digest|files)'|not a plain file name"):
            local_folder(store, planted)
    assert _outside_the_cache(tmp_path, remote) == []
    assert not list((tmp_path / "cache").rglob("escape"))


def test_a_file_changed_since_it_was_prepared_is_refused(tmp_path: Path) -> None:
    store, remote = _remote_wiki(tmp_path)
    manifest = read_manifest(store)
    assert manifest is not None
    column = next(p for p in remote.iterdir() if p.name != "manifest.json")
    column.write_bytes(column.read_bytes() + b"planted")
    with pytest.raises(DataError, match=f"sub://bucket/prepared/wiki1m/{column.name} does not match its SHA-256"):
        local_folder(store, manifest)
    assert not (tmp_path / "cache" / "prepared-staged" / manifest["digest"]).exists()
    assert not list((tmp_path / "cache" / "prepared-staged").glob("*.partial"))


def test_a_manifest_that_is_not_an_object_is_one_line(tmp_path: Path) -> None:
    store, remote = _remote_wiki(tmp_path)
    (remote / "manifest.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="manifest.json is not a JSON object"):
        read_manifest(store)
    (remote / "manifest.json").write_text("{")
    with pytest.raises(DataError, match="manifest.json is not JSON"):
        read_manifest(store)


def test_cli_prepare_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "w.txt"
    source.write_text("one\ntwo\n")
    assert main(["data", "prepare", "wiki1m", "--to", str(tmp_path / "s"), "--from", str(source)]) == 0
    assert "wiki1m: corpus, 2 rows" in capsys.readouterr().out
    assert main(["data", "list", "--to", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "staged, 2 rows" in out and "glove-840b" in out
    assert main(["data", "prepare", "umbc", "--to", str(tmp_path / "s")]) == 2
    assert "a dataset of your own needs --from PATH (or --hub REPO) and --kind" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["..", ".", "../outside", "a/b", ".hidden"])
def test_a_dataset_name_that_is_no_folder_name_is_one_line_and_touches_nothing(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A name is one folder under the root: ``..`` named the root's parent, which publishing replaced (deleting what
    it held), and ``../outside`` wrote beside the root."""
    source = tmp_path / "w.txt"
    source.write_text("one\ntwo\n")
    root = tmp_path / "area" / "prepared"
    root.mkdir(parents=True)
    (root / "kept.txt").write_text("kept")
    (tmp_path / "area" / "kept.txt").write_text("kept")
    argv = ["data", "prepare", name, "--to", str(root), "--from", str(source), "--kind", "corpus", "--format", "lines",
            "--force"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "a dataset's name" in err, err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "area", "area/kept.txt", "area/prepared", "area/prepared/kept.txt", "w.txt"]


def test_the_sweep_preflight_opens_a_prepared_corpus(tmp_path: Path) -> None:
    from sentsweep.platform.driver.preflight import _check_corpus_head

    source = tmp_path / "w.txt"
    source.write_text("one\n")
    prepare("wiki1m", to=str(tmp_path), from_path=source, log=lambda _: None)
    _check_corpus_head(f"prepared:{tmp_path / 'wiki1m'}", None)
    with pytest.raises(DataError, match="not prepared"):
        _check_corpus_head(f"prepared:{tmp_path / 'missing'}", None)
