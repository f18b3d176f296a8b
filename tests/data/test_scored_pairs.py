"""Scored pairs of your own: ``sentsweep data prepare NAME --kind scored-pairs`` from CSV, TSV, JSONL and the hub's
parquet conversion (the hub's real download functions on a cache laid out as the hub delivers it, offline), each bad
row one line naming the file and line with nothing left behind, and CoSENT training on the prepared pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sentsweep.cli import main
from sentsweep.data import SAMPLE_DIR, corpus, scored_pairs
from sentsweep.data.catalogue import CustomSource
from sentsweep.data.prepare import prepare
from sentsweep.data.prepared import PreparedScoredPairs
from sentsweep.errors import ConfigError, DataError
from tests.data.hub_cache import hf_cache_file

PAIRS = [("A man plays a guitar.", "Someone is playing an instrument.", 4.2),
         ("A dog runs, fast, in the park.", 'The "dog" is asleep.', 1.0),
         ("Two kids eat lunch.", "Children are eating.", 3.5)]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches and the default prepared root inside the test's folder; the hub offline."""
    import huggingface_hub.constants

    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SENTSWEEP_PREPARED", str(tmp_path / "prepared"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def _write(path: Path, fmt: str, rows: list[tuple[str, str, float]], names: tuple[str, ...]) -> Path:
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(dict(zip(names, row, strict=True))) + "\n" for row in rows))
    elif fmt == "tsv":
        path.write_text("\n".join("\t".join(map(str, r)) for r in [names, *rows]) + "\n")
    else:
        import csv

        with path.open("w", newline="") as handle:
            csv.writer(handle).writerows([names, *rows])
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_each_text_format_round_trips_with_its_range(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     fmt: str) -> None:
    source = _write(tmp_path / f"pairs.{fmt}", fmt, PAIRS, ("left", "right", "gold"))
    argv = ["data", "prepare", "mine", "--kind", "scored-pairs", "--from", str(source), "--columns",
            "left,right,gold", "--score-range", "0,5"]
    assert main(argv) == 0
    pairs = scored_pairs("prepared:mine", None)
    assert isinstance(pairs, PreparedScoredPairs) and pairs.score_range == (0.0, 5.0)
    assert [(p.s1, p.s2, p.score) for p in pairs] == PAIRS and pairs[1].s2 == 'The "dog" is asleep.'
    assert pairs[0:2] == list(pairs)[0:2]
    manifest = json.loads((tmp_path / "prepared" / "mine" / "manifest.json").read_text())
    assert (manifest["kind"], manifest["rows"], manifest["score_range"]) == ("scored-pairs", 3, [0.0, 5.0])
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    (mine,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("mine ")]
    assert "scored-pairs" in mine and "staged, 3 rows" in mine and f"pairs.{fmt} ({fmt})" in mine


BAD_ROWS = [
    ("csv", 'sentence1,sentence2,score\n"a b",c d,1\nonly,two\n', 3, "expected 3 columns (as the header), found 2"),
    ("tsv", "sentence1\tsentence2\tscore\na\tb\t1\n\n  \t b\t2\n", 4, "column 'sentence1' is an empty sentence"),
    ("csv", "sentence1,sentence2,score\na,b,high\n", 2, "score 'high' (column 'score') is not a number"),
    ("tsv", "sentence1\tsentence2\tscore\na\tb\tnan\n", 2, "score 'nan' (column 'score') is not a number"),
    ("jsonl", '{"sentence1": "a", "sentence2": "b", "score": 6}\n', 1, "score 6 (column 'score') is outside the "
     "range 0..5"),
    ("jsonl", '{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": "a",\n', 2, "not JSON"),
    ("jsonl", '["a", "b", 1]\n', 1, "expected a JSON object, found list"),
    ("jsonl", '{"sentence1": "a", "sentence2": 3, "score": 1}\n', 1, "column 'sentence2' holds 3, not a sentence"),
    ("csv", "first,second,score\na,b,1\n", 1, "header lacks column(s) sentence1, sentence2"),
]


@pytest.mark.parametrize(("fmt", "text", "line", "message"), BAD_ROWS)
def test_a_bad_row_is_one_line_naming_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str,
                                                    text: str, line: int, message: str) -> None:
    source = tmp_path / f"bad.{fmt}"
    source.write_text(text)
    root = tmp_path / "new-root" / "deeper"
    argv = ["data", "prepare", "bad", "--kind", "scored-pairs", "--from", str(source), "--score-range", "0,5",
            "--to", str(root)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"sentsweep data: error: {source}:{line}: ") and message in err, err
    assert not (tmp_path / "new-root").exists(), "a failed prepare leaves no folder behind"


@pytest.mark.parametrize(("argv", "message"), [
    (["--kind", "scored-pairs"], "need --score-range LOW,HIGH"),
    (["--kind", "scored-pairs", "--score-range", "5,0"], "needs finite LOW < HIGH"),
    (["--kind", "scored-pairs", "--score-range", "0,5", "--format", "lines"], "makes corpus data, not scored-pairs"),
    (["--kind", "scored-pairs", "--score-range", "0,5", "--columns", "a,b"], "reads columns s1,s2,score"),
    (["--kind", "corpus", "--score-range", "0,5", "--format", "lines"], "applies to scored pairs, not corpus"),
    (["--score-range", "0,5"], "give --kind too"),
    (["--kind", "vectors", "--hub", "org/name"], "not vectors"),
    (["--kind", "scored-pairs", "--score-range", "0,5", "--split", "test"], "give --hub REPO too"),
])
def test_a_bad_description_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                       message: str) -> None:
    source = _write(tmp_path / "pairs.csv", "csv", PAIRS, ("sentence1", "sentence2", "score"))
    assert main(["data", "prepare", "mine", "--from", str(source), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    assert not (tmp_path / "prepared").exists()


def test_a_catalogue_dataset_keeps_its_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "pairs.csv", "csv", PAIRS, ("sentence1", "sentence2", "score"))
    assert main(["data", "prepare", "wiki1m", "--from", str(source), "--format", "csv"]) == 2
    assert "--format csv makes scored-pairs data; wiki1m is corpus data" in capsys.readouterr().err
    assert main(["data", "prepare", "wiki1m", "--from", str(source), "--kind", "scored-pairs"]) == 2
    assert "wiki1m is corpus data, not scored-pairs" in capsys.readouterr().err
    assert main(["data", "prepare", "wiki1m", "--from", str(source), "--kind", "corpus", "--hub", "a/b"]) == 2
    assert "choose another name for a dataset of your own" in capsys.readouterr().err


def _scored_parquet(path: Path, rows: list[tuple[str, str, float | None]]) -> Path:
    pq.write_table(pa.table({"sentence1": [r[0] for r in rows], "sentence2": [r[1] for r in rows],
                             "score": [r[2] for r in rows], "idx": list(range(len(rows)))}), path)
    return path


def test_a_hub_dataset_from_the_cache_and_from_a_copy(tmp_path: Path) -> None:
    """``--hub`` reads the hub's parquet conversion through ``huggingface_hub`` (here: its cache, offline); a folder
    laid out as the repository reads the same; a bad parquet row is named by file and row."""
    cache = tmp_path / "hf"
    rows = [(a, b, s / 5) for a, b, s in PAIRS]
    for number in (0, 1):
        _scored_parquet(hf_cache_file(cache, "someone/sts-like", f"default/train/000{number}.parquet",
                                      ref="refs/convert/parquet"), rows[number::2])
    hub = CustomSource("scored-pairs", hub="someone/sts-like", score_range=(0.0, 1.0))
    result = prepare("hub-pairs", custom=hub, hub_cache=cache, log=lambda _: None)
    assert result.manifest["source"]["sources"][0]["repo_id"] == "someone/sts-like"
    pairs = scored_pairs("prepared:hub-pairs", None)
    assert [(p.s1, round(p.score, 6)) for p in pairs] == [(rows[i][0], round(rows[i][2], 6)) for i in (0, 2, 1)]
    copy = tmp_path / "copy"
    (copy / "default" / "train").mkdir(parents=True)
    _scored_parquet(copy / "default" / "train" / "0000.parquet", rows)
    prepare("copied", custom=hub, from_path=copy, log=lambda _: None)
    assert [p.s1 for p in scored_pairs("prepared:copied", None)] == [r[0] for r in rows]
    bad = _scored_parquet(copy / "default" / "train" / "0001.parquet", [("a", "b", 0.5), ("c", "d", None)])
    with pytest.raises(DataError, match=r"row 2: score None \(column 'score'\) is not a number") as err:
        prepare("bad", custom=hub, from_path=copy, log=lambda _: None)
    assert err.value.file == str(bad)
    with pytest.raises(DataError, match="has no file matching default/validation/\\*.parquet"):
        prepare("absent", custom=CustomSource("scored-pairs", hub="someone/sts-like", split="validation",
                                              score_range=(0, 1)), hub_cache=cache, log=lambda _: None)


def test_a_hub_sentence_dataset_as_a_corpus(tmp_path: Path) -> None:
    cache = tmp_path / "hf"
    path = hf_cache_file(cache, "someone/sentences", "default/train/0000.parquet", ref="refs/convert/parquet")
    pq.write_table(pa.table({"sentence": ["First one.", " ", "Second one."]}), path)
    prepare("sentences", custom=CustomSource("corpus", hub="someone/sentences", columns=("sentence",)),
            hub_cache=cache, log=lambda _: None)
    (doc,) = corpus("prepared:sentences")
    assert list(doc.sentences) == ["First one.", "Second one."]


def test_cosent_trains_on_prepared_pairs_with_their_range(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """The range travels with the pairs: the MSE baseline maps 0..1 scores onto cosine targets as they are, the
    contrastive baselines split at 0.5; a registered set keeps its own range."""
    from sentsweep.trainables.cosent import COSENT, CosentTask, load_train_pairs

    source = _write(tmp_path / "pairs.jsonl", "jsonl", [(a, b, s / 5) for a, b, s in PAIRS],
                    ("sentence1", "sentence2", "score"))
    prepare("unit", from_path=source, custom=CustomSource("scored-pairs", score_range=(0.0, 1.0)),
            log=lambda _: None)
    base = {"model": str(tiny_bert_dir), "train_data": "prepared:unit", "device": "cpu", "max_dev_pairs": 20,
            "data_dir": str(SAMPLE_DIR)}
    data = load_train_pairs(COSENT.parse(base))
    assert (data.label_min, data.label_max, data.num_labels, data.first[0]) == (0.0, 1.0, None, PAIRS[0][0])
    mse = CosentTask(COSENT.parse({**base, "loss": "mse"})).pair_loss
    same, targets = torch.ones(3, 4), torch.tensor([0.2, 0.5, 0.9])
    assert mse(same, same, targets).item() == pytest.approx(((1 - targets) ** 2).mean().item(), rel=1e-6)
    contrastive = CosentTask(COSENT.parse({**base, "loss": "contrastive"})).pair_loss
    assert contrastive.get_config_dict()["positive_threshold"] == 0.5
    result, _ = COSENT.train_standalone({**base, "max_steps": 2, "eval_every": 2, "batch_size": 2,
                                         "test_tasks": "stsb_test"}, output_dir=tmp_path / "run", log=lambda _: None)
    assert [row["step"] for row in result.state.history] == [2] and (tmp_path / "run" / "best").is_dir()
    for wrong, field in (({"loss": "softmax"}, "needs class labels"), ({"train_split": "dev"}, "has no splits"),
                         ({"train_data": "mine.csv"}, "unknown training set 'mine.csv'")):
        with pytest.raises(ConfigError, match=field):
            COSENT.parse({**base, **wrong})


def test_the_preflight_names_the_field_of_a_missing_or_wrong_prepared_set(tmp_path: Path,
                                                                          tiny_bert_dir: Path) -> None:
    from sentsweep.platform.driver.preflight import check_data
    from sentsweep.trainables.cosent import COSENT

    source = tmp_path / "corpus.txt"
    source.write_text("One sentence.\nAnother sentence.\n")
    prepare("a-corpus", from_path=source, kind="corpus", fmt="lines", log=lambda _: None)
    for name, message in (("missing", r"is not prepared .*run `sentsweep data prepare missing --kind scored-pairs "
                                      r"--from FILE` once"), ("a-corpus", "is 'corpus' data, not 'scored-pairs'")):
        trial = COSENT.parse({"model": str(tiny_bert_dir), "train_data": f"prepared:{name}"})
        with pytest.raises(DataError, match=rf"^field 'fixed\.train_data': .*{message}"):
            check_data(trial, lambda field: f"fixed.{field}")
    assert np.load(tmp_path / "prepared" / "a-corpus" / "doc_starts.npy").tolist() == [0, 2]


def test_a_prepared_training_set_is_a_dataset_input_named_by_its_manifest(tmp_path: Path) -> None:
    """MLflow's dataset input of a prepared set: its name, a digest that follows its files, its store."""
    from types import SimpleNamespace

    from sentsweep.data.source import resolve_data_dir
    from sentsweep.tracking.datasets import training_record

    source = _write(tmp_path / "pairs.csv", "csv", PAIRS, ("sentence1", "sentence2", "score"))
    pairs = CustomSource("scored-pairs", score_range=(0.0, 5.0))
    prepare("mine", from_path=source, custom=pairs, log=lambda _: None)
    data = resolve_data_dir(SAMPLE_DIR)
    config = SimpleNamespace(train_data="prepared:mine", max_train_pairs=2)
    record = training_record(config, data)
    assert record is not None and record.name == "mine[2 sampled]" and record.context == "training"
    assert record.source == str(tmp_path / "prepared" / "mine") and json.loads(record.profile)["rows"] == 3
    _write(source, "csv", PAIRS[:2], ("sentence1", "sentence2", "score"))
    prepare("mine", from_path=source, custom=pairs, force=True, log=lambda _: None)
    changed = training_record(config, data)
    assert changed is not None and changed.digest != record.digest
    corpus_config = SimpleNamespace(corpus="prepared:absent", max_sentences=None)
    assert training_record(corpus_config, data) is None
