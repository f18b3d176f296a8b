"""The sweep config: valid files load; every mistake names the field and the file (and the YAML line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig, load_sweep_config, parse_sweep_config
from sentsweep.platform.driver.specs import resolve_specs, trial_param_space, validate_trials

REPO = Path(__file__).resolve().parents[2]
MINIMAL = "name: s\nmethod: cosent\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def test_demo_config_is_valid_for_the_cosent_trainable():
    config = load_sweep_config(REPO / "configs" / "demo.yaml")
    assert config.method == "cosent" and config.num_samples >= 6 and config.scheduler.type == "asha"
    assert config.tracking.uri == "sqlite:///mlruns.db" and config.model == "minilm"
    trainable, space = resolve_specs(config, "configs/demo.yaml")
    validate_trials(config, trainable, space, "configs/demo.yaml")


SWEEP_CONFIGS = sorted(p for p in (REPO / "configs").glob("*.yaml") if "search_space" in p.read_text())


def test_the_shipped_sweep_configs_are_found():
    names = {p.name for p in SWEEP_CONFIGS}
    assert {"demo.yaml", "demo-sncse.yaml", "demo-multiview.yaml", "paper-cosent-stsb.yaml"} <= names


@pytest.fixture
def hub_configs_offline(monkeypatch, tmp_path):
    """A hub model that is neither a folder nor cached reads its config from a BERT stand-in (the shipped configs
    name bert-base-uncased): an NLI sweep's first point needs the model's family (search_spaces/spec.py, and
    sncse.py's lambda), and these tests run offline. Preflight, not this test, checks that the model itself is there."""
    from huggingface_hub import try_to_load_from_cache
    from transformers import BertConfig

    import sentsweep.methods.encoders as encoders

    stand_in = tmp_path / "bert-config"
    BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(stand_in)
    resolve = encoders.resolve_model_path

    def resolve_or_stand_in(name: str) -> str:
        path = resolve(name)
        if Path(path).expanduser().exists() or isinstance(try_to_load_from_cache(path, "config.json"), str):
            return path
        return str(stand_in)

    monkeypatch.setattr(encoders, "resolve_model_path", resolve_or_stand_in)


@pytest.mark.parametrize("path", SWEEP_CONFIGS, ids=lambda p: p.name)
def test_every_shipped_sweep_config_validates_with_its_trainable_and_space(path, hub_configs_offline):
    """Each trial the space can propose, merged with ``fixed``, must parse as the method's config."""
    config = load_sweep_config(path)
    trainable, space = resolve_specs(config, str(path))
    assert trainable.name == config.method
    validate_trials(config, trainable, space, str(path))


def test_defaults_and_nested_sections(tmp_path):
    config = load_sweep_config(_write(tmp_path, MINIMAL + "resources: {cpu: 2, gpu: 0.25}\n"))
    assert config.space_name == "cosent" and config.metric == "stsb_dev" and config.mode == "max"
    assert config.resources.gpu == 0.25 and config.scheduler.reduction_factor == 2


@pytest.mark.parametrize(("text", "field", "words"), [
    (MINIMAL + "num_sample: 3\n", "num_sample", "unknown field"),
    (MINIMAL + "num_samples: 0\n", "num_samples", "greater than or equal to 1"),
    (MINIMAL + "scheduler: {type: hyperband}\n", "scheduler.type", "'asha' or 'fifo'"),
    (MINIMAL + "scheduler: {reduction_factor: 1}\n", "scheduler.reduction_factor", "greater than 1"),
    (MINIMAL + "resources: {gpu: -1}\n", "resources.gpu", "greater than or equal to 0"),
    (MINIMAL + "tracking: {url: x}\n", "tracking.url", "unknown field"),
    (MINIMAL + "storage_path: ftp://x/y\n", "storage_path", "s3://"),
    (MINIMAL + "storage_path: gs://bucket/sweeps\n", "storage_path", "use a local folder or an s3:// URI"),
    ("name: bad name\nmethod: cosent\n", "name", "letters, digits"),
    ("method: cosent\n", "name", "Field required"),
    (MINIMAL + "stop_grace_s: .inf\n", "stop_grace_s", "finite number"),
    (MINIMAL + "budget: {gpu_hours: .nan}\n", "budget.gpu_hours", "finite number"),
    (MINIMAL + "register_model: team/cosent\n", "register_model", "a registered model's name"),
    (MINIMAL + "register_model: 'cosent:v1'\n", "register_model", "a registered model's name"),
    (MINIMAL + "register_model: \"it's\"\n", "register_model", "a registered model's name"),
    (MINIMAL + "register_model: '..cosent'\n", "register_model", "a registered model's name"),
    (MINIMAL + "register_model: ' '\n", "register_model", "a registered model's name"),
    (MINIMAL + "first_point: {lr: 1.0e-5}\n", "first_point", "belongs inside search_space"),
    (MINIMAL + "extra_points: [{lr: 1.0e-5}]\n", "extra_points", "belongs inside search_space"),
])
def test_errors_name_the_field_and_the_file(tmp_path, text, field, words):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_sweep_config(path)
    assert err.value.field == field and err.value.file == str(path)
    assert words in str(err.value) and str(path) in str(err.value)


def test_bad_yaml_names_the_line(tmp_path):
    path = _write(tmp_path, "name: s\nmethod: cosent\nfixed: {lr: 1\n")
    with pytest.raises(ConfigError, match=r"line \d+"):
        load_sweep_config(path)


def test_endpoint_needs_an_s3_path():
    with pytest.raises(ConfigError, match="s3://"):
        parse_sweep_config({"name": "s", "method": "cosent", "storage_endpoint_url": "http://minio:9000"})


def test_relative_paths_are_resolved_for_trial_workers(tmp_path):
    config = parse_sweep_config({"name": "s", "method": "cosent", "data_dir": "data"}).resolved(tmp_path)
    assert config.tracking.uri == f"sqlite:///{tmp_path}/mlruns.db"
    assert config.storage_path == str(tmp_path / "ray_results") and config.data_dir == str(tmp_path / "data")
    assert config.tracking.artifact_location == (tmp_path / "mlartifacts").as_uri()
    server = parse_sweep_config({"name": "s", "method": "cosent",
                                 "tracking": {"uri": "http://127.0.0.1:5000"}}).resolved(tmp_path)
    assert server.tracking.uri == "http://127.0.0.1:5000" and server.tracking.artifact_location is None


def test_trial_settings_are_checked_against_the_method_before_ray_starts():
    config = SweepConfig(name="s", method="cosent", fixed={"max_step": 4})
    with pytest.raises(ConfigError) as err:  # the space's first point is the defaults of these settings
        resolve_specs(config, "sweep.yaml")
    assert err.value.field == "fixed.max_step" and err.value.file == "sweep.yaml"
    searched = SweepConfig(name="s", method="cosent", fixed={"lr": 1e-5})
    trainable, space = resolve_specs(searched, "sweep.yaml")
    with pytest.raises(ConfigError, match="'lr' is set by space 'cosent'"):
        validate_trials(searched, trainable, space, "sweep.yaml")
    assert "search_space: {base: cosent, lr: VALUE}" in str(_error_of(validate_trials, searched, trainable, space))
    written = SweepConfig(name="s", method="cosent", fixed={"lr": 1e-5},
                          search_space={"lr": {"loguniform": [1e-5, 1e-4]}})
    trainable, space = resolve_specs(written, "sweep.yaml")  # a space written here has no shipped base to name
    message = str(_error_of(validate_trials, written, trainable, space))
    assert "'lr' is set by space 'custom'" in message and "add 'lr: VALUE' under search_space" in message
    assert "base: custom" not in message
    on_base = written.model_copy(update={"search_space": {"base": "cosent", "scale": 30.0}})
    trainable, space = resolve_specs(on_base, "sweep.yaml")  # on top of a shipped space: one more entry too
    assert "add 'lr: VALUE' under search_space" in str(_error_of(validate_trials, on_base, trainable, space))


def _error_of(check, *args) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        check(*args, "sweep.yaml")
    return err.value


@pytest.mark.parametrize("fixed", [{"lr": float("inf")}, {"scale": float("nan")}])
def test_a_trial_setting_that_is_no_finite_number_names_the_field_before_ray_starts(fixed):
    config = SweepConfig(name="s", method="cosent", fixed=fixed)
    with pytest.raises(ConfigError, match="finite number") as err:
        trainable, space = resolve_specs(config, "sweep.yaml")
        validate_trials(config, trainable, space, "sweep.yaml")
    assert err.value.field == f"fixed.{next(iter(fixed))}" and err.value.file == "sweep.yaml"


def test_unknown_method_or_space_names_the_field_and_file():
    with pytest.raises(ConfigError) as err:
        resolve_specs(SweepConfig(name="s", method="simcse"), "sweep.yaml")
    assert err.value.field == "method" and err.value.file == "sweep.yaml" and "cosent" in str(err.value)
    with pytest.raises(ConfigError) as err:
        resolve_specs(SweepConfig(name="s", method="cosent", search_space="nope"), "sweep.yaml")
    assert err.value.field == "search_space"


def test_every_trial_gets_the_sweep_settings():
    config = SweepConfig(name="s", method="cosent", model="minilm", seed=7, fixed={"max_steps": 3})
    assert trial_param_space(config) == {"max_steps": 3, "seed": 7, "model": "minilm", "metric": "stsb_dev",
                                         "mode": "max"}  # no tracking setting: the driver writes the runs
    metered = config.model_copy(update={"tracking": config.tracking.model_copy(update={"system_metrics": True})})
    assert trial_param_space(metered)["system_metrics"] is True


@pytest.mark.parametrize(("raw", "field"), [
    ({"fixed": {"train_data": "prepared:s3://AKIAEXAMPLE:s3cr3t-Value@bucket/x"}}, "fixed.train_data"),
    ({"data_dir": "s3://AKIAEXAMPLE:s3cr3t-Value@bucket/data"}, "data_dir"),
    ({"model": "https://bob:s3cr3t-Value@hub.example/bert"}, "model"),
    ({"model": "https://s3cr3t-Value@hub.example/bert"}, "model"),  # a bare user name is often a token
    ({"fixed": {"extra_dev_data": ["sick", "prepared:s3://K:s3cr3t-Value@bucket/dev"]}}, "fixed.extra_dev_data[1]"),
])
def test_a_credential_outside_the_uri_fields_is_refused_by_name_without_echoing_it(tmp_path, raw, field):
    config = parse_sweep_config({"name": "s", "method": "cosent", **raw})
    environ: dict[str, str] = {}
    with pytest.raises(ConfigError) as caught:
        config.resolved(tmp_path, environ)
    message = str(caught.value)
    assert caught.value.field == field and f"field '{field}'" in message and "user-info" in message
    assert "s3cr3t" not in message and "AKIAEXAMPLE" not in message and not environ


def test_a_credential_outside_the_uri_fields_names_the_config_file(tmp_path):
    config = parse_sweep_config({"name": "s", "method": "cosent", "data_dir": "s3://AK:s3cr3t-Value@bucket/data"})
    with pytest.raises(ConfigError, match=r"^sweep\.yaml: field 'data_dir': carries a login") as caught:
        config.resolved(tmp_path, {}, source="sweep.yaml")
    assert "s3cr3t" not in str(caught.value)


def test_the_uri_fields_still_split_and_plain_values_pass(tmp_path):
    environ: dict[str, str] = {}
    config = parse_sweep_config({"name": "s", "method": "cosent", "storage_path": "s3://AKIAEXAMPLE:s3cr3t@bucket/r",
                                 "fixed": {"train_data": "prepared:s3://bucket/x", "note": "a:b@c"},
                                 "model": "bert-base-uncased"}).resolved(tmp_path, environ)
    assert config.storage_path == "s3://bucket/r" and environ["AWS_SECRET_ACCESS_KEY"] == "s3cr3t"
    assert config.fixed["train_data"] == "prepared:s3://bucket/x" and "s3cr3t" not in config.model_dump_json()


def test_without_a_metric_the_sweep_ranks_by_its_dev_sets() -> None:
    """``fixed.dev_data: sickr`` alone: the sweep ranks by sickr_trial, which its trials report (it ranked by the
    default stsb_dev, which none reported); a metric given stays, and so does the first objective."""
    assert SweepConfig(name="s", method="cosent", fixed={"dev_data": "sickr"}).metric == "sickr_trial"
    assert SweepConfig(name="s", method="cosent", fixed={"dev_data": "nli"}).metric == "nli_dev"
    assert SweepConfig(name="s", method="cosent").metric == "stsb_dev"
    assert SweepConfig(name="s", method="cosent", metric="stsb_test", fixed={"dev_data": "sickr"}).metric == "stsb_test"


def test_the_search_in_words_names_the_sampler_the_scheduler_and_the_stop() -> None:
    base = {"name": "s", "method": "cosent"}
    fifo = {"type": "fifo"}
    assert SweepConfig(**base, startup_trials=4, scheduler=fifo).search_text() == (
        "TPE after 4 random trials; every trial runs to its end")
    asha = SweepConfig(**base, searcher="random", scheduler={"type": "asha", "grace_period": 2}).search_text()
    assert asha.startswith("random sampling; ASHA stops weak trials early (grace 2, reduction")
    measured = SweepConfig(**base, searcher="gp", stop_when="converged", scheduler=fifo).search_text()
    assert measured == ("a Gaussian process after Optuna's random start-up trials; every trial runs to its end; the "
                        "search ends once Optuna's regret bound over at least 20 finished trials is below the noise "
                        "measured from 2 further seeds of the first point")
    given = SweepConfig(**base, stop_when="converged", convergence={"noise_sd": 0.3, "min_trials": 12,
                                                                    "evaluator": "emmr"}).search_text()
    assert given.endswith("the search ends once Optuna's expected minimum model regret over at least 12 finished "
                          "trials is below noise sd 0.3")
    patient = SweepConfig(**base, stop_when="converged", convergence={"noise_sd": 0.3, "evaluator": "stagnation",
                                                                      "patience": 30}).search_text()
    assert patient.endswith("the search ends once the best rose by less than noise sd 0.3 over the last 30 ended "
                            "trials (at least 20 ended)")


@pytest.mark.parametrize("text", ["final_tasks:\n", "final_tasks: ''\n", "final_tasks: '  '\n"])
def test_a_blank_final_suite_in_yaml_or_set_means_no_test_evaluation(tmp_path, text) -> None:
    """``final_tasks:`` left blank (YAML reads null), an empty string, or ``--set final_tasks=``: no final suite."""
    from sentsweep.yaml_io import apply_overrides

    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: x\nmethod: cosent\n{text}")
    assert load_sweep_config(path).final_tasks == ""
    assert parse_sweep_config(apply_overrides({"name": "x", "method": "cosent"}, ["final_tasks="])).final_tasks == ""
