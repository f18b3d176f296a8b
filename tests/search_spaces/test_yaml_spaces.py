"""Search spaces in YAML: the shipped files search what the Python spaces searched, a space written in a sweep
config is checked against the method's config (each mistake one line naming the entry and the file), conditions,
grids, a shipped space with overrides, and the first point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from sentsweep.errors import ConfigError
from sentsweep.platform.config import load_sweep_config
from sentsweep.platform.driver.specs import resolve_specs, space_points, validate_trials
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.search_spaces import SEARCH_SPACES, SHIPPED
from tests.search_spaces.space_contract import sample_params

HERE = Path(__file__).resolve().parent
#: What the spaces searched when they were Python functions: per space, its first point, its presets, and the
#: distributions of each branch a probe took (the branch's choices in "choice").
PYTHON_SPACES: dict[str, Any] = json.loads((HERE / "python_spaces.json").read_text())


class _Probe(optuna.samplers.BaseSampler):
    """Answers the branch's choices, else a categorical's first value or a range's low end."""

    def __init__(self, choice: dict[str, Any]) -> None:
        self.choice = choice

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict:
        return {}

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict:
        return {}

    def sample_independent(self, study: Any, trial: Any, name: str, distribution: Any) -> Any:
        if name in self.choice:
            return self.choice[name]
        if isinstance(distribution, optuna.distributions.CategoricalDistribution):
            return distribution.choices[0]
        return distribution.low


def test_the_shipped_files_are_the_registered_spaces() -> None:
    assert sorted(f.name.removesuffix(".yaml") for f in SHIPPED.iterdir() if f.name.endswith(".yaml")) \
        == sorted(SEARCH_SPACES) == sorted(PYTHON_SPACES)


@pytest.mark.parametrize("name", sorted(PYTHON_SPACES))
def test_a_shipped_space_searches_what_the_python_space_searched(name: str) -> None:
    before, space = PYTHON_SPACES[name], SEARCH_SPACES[name]
    assert space.method == before["method"]
    assert space.first_point == before["first_point"]
    assert list(space.extra_points) == before["extra_points"]
    for branch in before["branches"]:
        trial = optuna.create_study(sampler=_Probe(branch["choice"])).ask()
        space.define_by_run(trial)
        assert {k: optuna.distributions.json_to_distribution(v) for k, v in branch["distributions"].items()} \
            == trial.distributions, (name, branch["choice"])


def _config_file(tmp_path: Path, search_space: Any, method: str = "cosent", **extra: Any) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "method": method, "search_space": search_space, **extra},
                                   sort_keys=False))
    return path


def _resolve(path: Path) -> tuple[Any, Any]:
    config = load_sweep_config(path)
    trainable, space = resolve_specs(config, str(path))
    validate_trials(config, trainable, space, str(path))
    return config, space


MISTAKES = [
    ({"scal": {"uniform": [1, 40]}}, "search_space.scal", "not a field of CosentConfig; did you mean 'scale'"),
    ({"scale": {"uniform": [0, 40]}}, "search_space.scale", "lower bound 0.0 is refused by CosentConfig.scale"),
    ({"pooling": {"choice": ["mean", "avg"]}}, "search_space.pooling", "choice value 'avg' is refused"),
    ({"pooling": "avg"}, "search_space.pooling", "value 'avg' is refused by CosentConfig.pooling"),
    ({"batch_size": {"uniform": [8, 64]}}, "search_space.batch_size", "use randint, choice or grid"),
    ({"scale": {"normal": [1, 2]}}, "search_space.scale", "expected one of uniform, loguniform"),
    ({"lr": {"loguniform": [1e-4, 1e-5]}}, "search_space.lr", "must be below its upper bound"),
    ({"scale": {"uniform": [1, float("inf")]}}, "search_space.scale", "upper bound must be a finite number"),
    ({"lr": {"loguniform": [1e-5, "inf"]}}, "search_space.lr", "upper bound must be a finite number"),
    ({"scale": {"quniform": [1, 40, float("nan")]}}, "search_space.scale", "q must be a finite number"),
    ({"scale": {"loguniform": [-1, 5]}}, "search_space.scale", "needs a lower bound above 0"),
    ({"scale": {"quniform": [1, 5]}}, "search_space.scale", r"quniform takes \[lo, hi, q\]"),
    ({"batch_size": {"randint": [8, 64.5]}}, "search_space.batch_size", "randint takes two integers"),
    ({"pooling": {"choice": ["mean", "mean"]}}, "search_space.pooling", "lists a value twice"),
    ({"lr": {"choice": ["1e-5", 1.0e-5]}}, "search_space.lr", "are one value of CosentConfig.lr: list it once"),
    ({"extra_dev_data": {"choice": [["sickr"], []]}}, "search_space.extra_dev_data", "takes plain values"),
    ({"margin": {"uniform": ["scale + 1", 9]}}, "search_space.margin", "names 'scale', which is not a range"),
    ({"scale": {"uniform": [1, 40], "when": {"los": "cosent"}}}, "search_space.scale.when.los", "not a field"),
    ({"loss": {"choice": ["cosent", "mse"]}, "margin": {"uniform": [1, 2], "when": {"loss": "triplet"}}},
     "search_space.margin.when.loss", "'triplet' is not among loss's values"),
    ({"scale": {"uniform": [1, 40], "when": {"loss": "cosent"}}, "loss": {"choice": ["cosent", "mse"]}},
     "search_space.scale.when.loss", "'loss' must come before scale"),
    ({"scale": {"uniform": [1, 40]}, "first_point": {"scale": 50}}, "search_space.first_point.scale",
     "50 is not a value the space gives scale"),
    ({"scale": {"uniform": [1, 40]}, "first_point": {"lr": 1e-5}}, "search_space.first_point.lr",
     "'lr' is not sampled by this space"),
    ({"base": "cosnt", "pooling": "mean"}, "search_space", "unknown search space 'cosnt'"),
    ({"base": "sncse", "pooling": "mean"}, "search_space", "is for method 'sncse', not 'cosent'"),
]


@pytest.mark.parametrize(("space", "field", "message"), MISTAKES)
def test_each_mistake_is_one_line_naming_the_entry_and_the_file(space: Any, field: str, message: str,
                                                                  tmp_path: Path) -> None:
    path = _config_file(tmp_path, space)
    with pytest.raises(ConfigError, match=message) as err:
        _resolve(path)
    assert (err.value.field, err.value.file) == (field, str(path))
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}: field '{field}': ")


def test_a_written_space_fixes_and_searches_fields(tmp_path: Path) -> None:
    """Numbers YAML reads as text (1e-5) are numbers; a plain value is fixed; the first point is the defaults."""
    path = tmp_path / "sweep.yaml"
    path.write_text("name: mine\nmethod: cosent\nsearch_space:\n  pooling: mean\n  scale: {uniform: [5, 40]}\n"
                    "  lr: {loguniform: [1e-5, 1e-4]}\n")
    config, space = _resolve(path)
    assert space.name == "custom" and space.fixed == {"pooling": "mean"}
    assert space.first_point == {"scale": 20.0, "lr": 2e-5}
    for params in sample_params(space, 20):
        assert set(params) == {"scale", "lr", "pooling"} and params["pooling"] == "mean"
        assert 5 <= params["scale"] <= 40 and 1e-5 <= params["lr"] <= 1e-4
    searcher = build_searcher(config, space.define_by_run, space_points(space))
    assert searcher.suggest("t1") == {"scale": 20.0, "lr": 2e-5, "pooling": "mean"}


def test_a_default_outside_a_narrowed_range_is_left_to_the_sampler(tmp_path: Path) -> None:
    _, space = _resolve(_config_file(tmp_path, {"lr": {"loguniform": [1e-4, 1e-3]}, "scale": {"uniform": [1, 40]}}))
    assert space.first_point == {"scale": 20.0}


def test_a_shipped_space_with_overrides(tmp_path: Path) -> None:
    """``base`` starts from a shipped space: pooling fixed, lr narrowed, the rest as shipped."""
    path = _config_file(tmp_path, {"base": "cosent", "pooling": "mean", "lr": {"loguniform": [1e-5, 5e-5]}})
    _, space = _resolve(path)
    assert space.name == "cosent+custom" and space.fixed == {"pooling": "mean"}
    assert space.first_point == {"scale": 20.0, "lr": 2e-5, "batch_size": 16, "warmup_ratio": 0.1}
    assert [line.split(":")[0] for line in space.describe()] == ["scale", "pooling", "lr", "batch_size",
                                                                 "warmup_ratio"]
    for params in sample_params(space, 20):
        assert params["pooling"] == "mean" and 1e-5 <= params["lr"] <= 5e-5


def test_fixing_a_searched_field_in_fixed_says_how_to_fix_it_in_the_space(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "cosent", fixed={"pooling": "mean"})
    with pytest.raises(ConfigError, match=r"search_space: \{base: cosent, pooling: VALUE\}") as err:
        _resolve(path)
    assert err.value.field == "fixed.pooling"


def test_a_condition_on_an_earlier_choice(tmp_path: Path) -> None:
    """``when`` makes an entry exist only on one branch of a choice sampled before it."""
    _, space = _resolve(_config_file(tmp_path, {
        "loss": {"choice": ["cosent", "triplet"]},
        "scale": {"uniform": [1, 40], "when": {"loss": "cosent"}},
        "margin": {"loguniform": [0.1, 5.0], "when": {"loss": ["triplet"]}},
    }))
    assert space.first_point == {"loss": "cosent", "scale": 20.0}
    seen = set()
    for params in sample_params(space, 40):
        seen.add(params["loss"])
        assert set(params) == ({"loss", "scale"} if params["loss"] == "cosent" else {"loss", "margin"})
    assert seen == {"cosent", "triplet"}


def test_a_condition_on_a_fixed_setting(tmp_path: Path) -> None:
    """A condition on a field the space does not sample reads the sweep's value: a cross-encoder sweep does not
    search the shipped cosent space's pooling."""
    path = _config_file(tmp_path, {"base": "cosent", "lr": 3e-5}, fixed={"architecture": "cross"})
    _, space = _resolve(path)
    assert space.first_point == {"scale": 20.0, "batch_size": 16, "warmup_ratio": 0.1}
    assert "(not searched: architecture is 'cross')" in space.describe()[1]
    assert all("pooling" not in p for p in sample_params(space, 10))


def test_beta_follows_alpha(tmp_path: Path) -> None:
    """A bound naming an earlier entry: alpha < beta in every trial, as the shipped sncse space keeps it."""
    _, space = _resolve(_config_file(tmp_path, {"alpha": {"uniform": [0.0, 0.3]},
                                                "beta": {"loguniform": ["alpha + 0.01", 2.0]}}, method="sncse"))
    assert space.first_point == {"alpha": 0.1, "beta": 0.3}
    for params in sample_params(space, 40):
        assert params["alpha"] + 0.01 <= params["beta"] <= 2.0


def test_a_grid_is_evaluated_first_in_full(tmp_path: Path) -> None:
    path = _config_file(tmp_path, {"pooling": {"grid": ["mean", "cls"]}, "batch_size": {"grid": [16, 32]},
                                   "scale": {"uniform": [1, 40]}}, num_samples=6)
    config, space = _resolve(path)
    points = space_points(space)
    assert [(p["pooling"], p["batch_size"]) for p in points] == [("mean", 16), ("mean", 32), ("cls", 16),
                                                                   ("cls", 32)]
    assert all(p["scale"] == 20.0 for p in points)
    searcher = build_searcher(config, space.define_by_run, points)
    assert [searcher.suggest(f"t{i}") for i in range(4)] == points
