"""Checks before Ray starts (real files, a real MLflow store, real sockets): each failure is one line naming the
field or file, and a sweep that fails them leaves no sweep folder and no MLflow run behind."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.data.source import SAMPLE_DIR
from sentsweep.errors import ConfigError, DataError
from sentsweep.platform.driver.preflight import check_model, check_storage, check_tracking


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_malformed_dev_file_stops_the_sweep_before_ray(tmp_path, tiny_bert_dir, tracking_uri) -> None:
    from sentsweep.cli import main
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    dev = data / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv"
    lines = dev.read_text(encoding="utf-8").splitlines()
    lines[2] = "main-captions\tMSRvid\t2012test\t0001"  # too few columns
    dev.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, data_dir=str(data))
    with pytest.raises(DataError) as err:
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    assert err.value.file == str(dev) and err.value.line == 3 and "\n" not in str(err.value)
    assert not (tmp_path / "ray_results").exists(), "the storage probe's folder is removed with the probe"
    assert MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name("toy") is None
    assert main(["sweep", str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"), "--set",
                 f"data_dir={data}", "--set", f"storage_path={tmp_path / 'rr'}", "--set",
                 f"tracking.uri={tracking_uri}"]) == 2


def test_an_unreachable_tracking_server_and_unwritable_storage(tmp_path) -> None:
    port = _free_port()
    with pytest.raises(ConfigError, match=rf"MLflow server http://user:\*\*\*@127.0.0.1:{port} is not reachable") \
            as err:
        check_tracking(f"http://user:SECRET@127.0.0.1:{port}")
    assert err.value.field == "tracking.uri" and "SECRET" not in str(err.value)
    with pytest.raises(ConfigError, match=rf"MLflow server http://user:\*\*\*@\[::1\]:{port} is not reachable") as err:
        check_tracking(f"http://user:SECRET@[::1]:{port}")  # the host as written: brackets kept
    assert "SECRET" not in str(err.value)
    check_tracking(f"sqlite:///{tmp_path / 'new' / 'mlruns.db'}")  # a folder that can be made
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    from sentsweep.platform.config import SweepConfig

    config = SweepConfig(name="x", method="cosent", storage_path=str(blocker / "ray_results"))
    with pytest.raises(ConfigError, match="cannot write to") as err:
        check_storage(config, source="x.yaml")
    assert err.value.field == "storage_path" and str(err.value).startswith("x.yaml: ")
    check_storage(config.model_copy(update={"storage_path": str(tmp_path / "ok" / "deeper")}))
    assert not (tmp_path / "ok").exists(), "the probe and the folders it made are deleted"
    (tmp_path / "kept").mkdir()
    check_storage(config.model_copy(update={"storage_path": str(tmp_path / "kept")}))
    assert (tmp_path / "kept").is_dir() and not any((tmp_path / "kept").iterdir()), "a folder it found is kept"


def test_a_model_that_cannot_be_resolved_offline(tmp_path, tiny_bert_dir) -> None:
    check_model(str(tiny_bert_dir))
    with pytest.raises(ConfigError, match="no model folder") as err:
        check_model(str(tmp_path / "missing"), field="fixed.model")
    assert err.value.field == "fixed.model"
    with pytest.raises(ConfigError, match="without a config.json"):
        check_model(str(tmp_path))
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        with pytest.raises(ConfigError, match="neither a local folder nor in the Hugging Face cache"):
            check_model("no-such-org/no-such-model-xyz")


def test_an_empty_final_suite_passes_and_a_misspelt_one_is_named(tmp_path, tiny_bert_dir, tracking_uri) -> None:
    """``final_tasks: ""`` means no test evaluation after the sweep (as finalize reads it), not a config error;
    a misspelt task is refused under its own field."""
    from sentsweep.platform.driver.preflight import check_sweep
    from sentsweep.platform.driver.specs import resolve_specs, validate_trials
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    for final, error in (("", None), ("  ", None), ("stsb_tset", "final_tasks")):
        config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, final_tasks=final).resolved()
        assert config.final_tasks == final.strip()  # blank is empty for the check and for finalize alike
        trainable, space = resolve_specs(config, None, TOY_TRAINABLE, TOY_SPACE)
        trials = validate_trials(config, trainable, space, None)
        if error is None:
            check_sweep(config, trials)
            continue
        with pytest.raises(ConfigError) as err:
            check_sweep(config, trials)
        assert err.value.field == error and "stsb_tset" in str(err.value)


def test_a_paper_config_on_the_bundled_sample_is_refused_and_a_demo_warned(tmp_path, monkeypatch, caplog) -> None:
    """Without data_dir or $SENTSWEEP_DATA the data resolve to the bundled sample (500 STS-B train pairs, 300 test):
    every paper config asks for the full data and is refused, naming data_dir; a demo config runs with a warning.
    Each trains in fp32, as the papers' reference code does."""
    import logging

    from sentsweep.platform.config import load_sweep_config
    from sentsweep.platform.driver.preflight import check_data_source

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)
    papers = sorted((repo / "configs").glob("paper-*.yaml")) + sorted((repo / "k8s").rglob("configs/paper-*.yaml"))
    assert len(papers) >= 9
    for path in papers:
        config = load_sweep_config(path).model_copy(update={"data_dir": None})
        assert config.full_data, f"{path.name} does not ask for the full data"
        assert config.fixed.get("amp") is False, f"{path.name} trains under autocast; the papers' references use fp32"
        with pytest.raises(ConfigError, match=r"field 'data_dir': resolves to the bundled data sample"):
            check_data_source(config, str(path))
    demo = load_sweep_config(repo / "configs" / "demo.yaml")
    with caplog.at_level(logging.WARNING):
        assert check_data_source(demo) is True
    assert "data: the bundled sample" in caplog.text
    full = tmp_path / "data"
    full.mkdir()
    assert check_data_source(demo.model_copy(update={"data_dir": str(full), "full_data": True})) is False


@pytest.mark.parametrize("fixed", [{"dev_data": "nli"}, {"extra_dev_data": ["nli"]}])
def test_a_missing_nli_dev_set_is_one_line_naming_the_field_and_the_file(tmp_path, tiny_bert_dir, tracking_uri,
                                                                         fixed) -> None:
    """SNLI dev (``nli``, CoSENT's NLI selection set) read from a data folder that lacks it: one DataError before
    Ray starts, naming the file and the field that asked for it (selection or further dev set)."""
    from sentsweep.platform.driver.preflight import check_sweep
    from sentsweep.platform.driver.specs import resolve_specs, validate_trials
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    missing = data / "senteval" / "SNLI" / "s1.dev"
    missing.unlink()
    metric = {"metric": "nli_dev"} if fixed.get("dev_data") == "nli" else {}
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, data_dir=str(data), fixed=fixed, **metric).resolved()
    trainable, space = resolve_specs(config, None, TOY_TRAINABLE, TOY_SPACE)
    with pytest.raises(DataError, match=rf"field 'fixed\.{next(iter(fixed))}' of toy\.yaml \(nli\): missing data "
                       "file") as err:
        check_sweep(config, validate_trials(config, trainable, space, "toy.yaml"), "toy.yaml")
    assert err.value.file == str(missing) and "\n" not in str(err.value)


def test_a_sweep_ranking_by_another_dev_sets_metric_is_refused_before_ray(tmp_path, tiny_bert_dir,
                                                                          tracking_uri) -> None:
    """``metric: stsb_dev`` with ``fixed.dev_data: nli``: the trials would select on and report nli_dev, and the
    sweep rank by a metric no report carries; refused naming the field and the file."""
    from sentsweep.platform.driver.specs import resolve_specs, validate_trials
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, fixed={"dev_data": "nli"}, metric="stsb_dev")
    trainable, space = resolve_specs(config, None, TOY_TRAINABLE, TOY_SPACE)
    with pytest.raises(ConfigError, match="'stsb_dev' is not the metric of dev_data 'nli'") as err:
        validate_trials(config, trainable, space, "toy.yaml")
    assert (err.value.field, err.value.file) == ("metric", "toy.yaml")


def test_an_empty_training_set_names_its_file_field_and_config(tmp_path, tiny_bert_dir) -> None:
    """A training split that parses to no pair: one DataError naming the file read and the field that chose it."""
    from sentsweep.platform.driver.preflight import check_data
    from sentsweep.trainables.registry import METHODS

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    train = data / "senteval" / "STS" / "STSBenchmark" / "sts-train.csv"
    train.write_text("", encoding="utf-8")
    trial = METHODS["cosent"].parse({"model": str(tiny_bert_dir), "data_dir": str(data), "train_data": "stsb"})
    with pytest.raises(DataError, match=r"field 'fixed\.train_data' of toy\.yaml \(stsb, split 'train'\): the "
                       "training set has no rows") as err:
        check_data(trial, lambda name: f"fixed.{name}", source="toy.yaml")
    assert err.value.file == str(train) and str(err.value).startswith(f"{train}: ")


def test_an_unknown_corpus_names_its_field_and_the_names_it_takes(tiny_bert_dir) -> None:
    """A corpus that is neither registered nor a file: the field that set it, the value and the registered names."""
    from sentsweep.platform.driver.preflight import check_data
    from sentsweep.trainables.registry import METHODS

    trial = METHODS["sncse"].parse({"model": str(tiny_bert_dir), "corpus": "no-such-corpus", "lambda": 1e-3,
                                    "lr": 1e-5, "batch_size": 16})
    with pytest.raises(DataError) as err:
        check_data(trial, lambda name: f"fixed.{name}")
    message = str(err.value)
    assert message.startswith("field 'fixed.corpus': 'no-such-corpus' is neither a registered corpus"), message
    assert "enwiki" in message and "prepared:NAME" in message


def test_a_resume_whose_tracking_server_is_down_says_so_in_one_line(tmp_path, capsys) -> None:
    """The manifest's server does not answer: one line naming it, exit 2, the folder untouched (no lock)."""
    from sentsweep.cli import main
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.location import SweepManifest, locate

    uri = f"http://127.0.0.1:{_free_port()}"
    config = SweepConfig(name="down", method="cosent", storage_path=str(tmp_path / "ray_results"),
                         tracking={"uri": uri, "experiment": "down"})
    location = locate(str(tmp_path / "ray_results" / "down"))
    location.write_manifest(SweepManifest(sweep_name="down", config=config.model_dump(mode="json"),
                                          parent_run_id="0" * 32, experiment_id="1", tracking_uri=uri,
                                          created=0.0), config)
    before = sorted(p.name for p in (tmp_path / "ray_results" / "down").iterdir())
    capsys.readouterr()
    assert main(["resume", location.uri]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"MLflow server {uri} does not answer" in err[0], err
    assert "unexpected error" not in err[0] and "Traceback" not in err[0]
    assert sorted(p.name for p in (tmp_path / "ray_results" / "down").iterdir()) == before


@pytest.mark.parametrize("command", [["compare"], ["export", "0" * 32, "out"]])
def test_reading_runs_from_a_server_that_does_not_answer_is_one_line_at_once(tmp_path, capsys, monkeypatch,
                                                                             command) -> None:
    """``compare`` and ``export`` ask the server once, without MLflow's retries (minutes), and say so in one line."""
    from sentsweep.cli import main

    monkeypatch.chdir(tmp_path)
    uri = f"http://127.0.0.1:{_free_port()}"
    assert main([*command, "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"MLflow server {uri} does not answer" in err[0], err
    assert list(tmp_path.iterdir()) == []



@pytest.mark.parametrize(("overrides", "field"), [({"fixed": {"test_tasks": "stsb_tst"}}, "fixed.test_tasks"),
                                                  ({"final_tasks": "stsbb"}, "final_tasks")])
def test_a_misspelled_task_names_the_field_as_written_and_the_file(tmp_path, tiny_bert_dir, tracking_uri,
                                                                   overrides, field) -> None:
    """An unknown test task, under ``fixed.test_tasks`` or in ``final_tasks``: one line naming the field where the
    config sets it and the config file, as every other config mistake does."""
    from sentsweep.platform.driver.preflight import check_sweep
    from sentsweep.platform.driver.specs import resolve_specs, validate_trials
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, **overrides).resolved()
    trainable, space = resolve_specs(config, None, TOY_TRAINABLE, TOY_SPACE)
    with pytest.raises(ConfigError, match="unknown task") as err:
        check_sweep(config, validate_trials(config, trainable, space, "toy.yaml"), "toy.yaml")
    assert (err.value.field, err.value.file) == (field, "toy.yaml")
    assert str(err.value).startswith(f"toy.yaml: field '{field}': ") and "\n" not in str(err.value)


def test_a_tracking_database_that_does_not_answer_is_one_line_naming_the_field(tmp_path) -> None:
    """``--check`` connects to a ``postgresql://`` store: nobody on its port is one line naming ``tracking.uri``."""
    uri = f"postgresql+psycopg2://mlflow@127.0.0.1:{_free_port()}/mlflow"
    with pytest.raises(ConfigError, match=r"MLflow database postgresql\+psycopg2://mlflow@127\.0\.0\.1:\d+/mlflow "
                                          r"does not answer \(.*refused") as err:
        check_tracking(uri, source="sweep.yaml")
    assert err.value.field == "tracking.uri" and str(err.value).startswith("sweep.yaml: ")


@pytest.mark.slow
def test_a_servers_store_and_a_database_that_went_down_fail_the_check(monkeypatch) -> None:
    """A real MLflow server on a real PostgreSQL: the check passes while both answer and names a wrong password
    (never the password); once PostgreSQL stops, the server's ``/health`` still answers, and the check says that
    the store does not."""
    from tools.harness.mlflow_server import mlflow_server
    from tools.harness.postgres import unavailable_reason
    from tools.harness.processes import end_group

    if reason := unavailable_reason():
        pytest.skip(reason)
    import signal
    import urllib.request

    with mlflow_server() as server:
        for name, value in server.client_env().items():
            monkeypatch.setenv(name, value)
        database = server.postgres.uri("mlflow", password=False)
        monkeypatch.setenv("PGPASSWORD", "wrong-" + server.postgres.password)
        with pytest.raises(ConfigError, match="password authentication failed") as err:
            check_tracking(database)
        assert server.postgres.password not in str(err.value)
        monkeypatch.setenv("PGPASSWORD", server.postgres.password)
        check_tracking(database)
        check_tracking(server.uri)
        end_group(server.postgres.process, first=signal.SIGINT)
        with urllib.request.urlopen(server.uri + "/health", timeout=10) as health:
            assert health.status == 200  # what a check of /health alone would have taken for an answer
        with pytest.raises(ConfigError, match=f"MLflow server {server.uri} answers, but its store does not"):
            check_tracking(server.uri)
        with pytest.raises(ConfigError, match="does not answer"):
            check_tracking(database)
