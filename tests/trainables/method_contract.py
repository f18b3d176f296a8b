"""What every method must do, as test cases a method's tests inherit (as Optuna's ``testing`` package does
for samplers): subclass :class:`MethodContract`, name the method and give a few-step config.

    class TestMyMethod(MethodContract):
        method_name = "mine"

        def tiny_settings(self, tiny_bert_dir: Path) -> dict[str, Any]:
            return {"model": str(tiny_bert_dir), "max_steps": 2, "eval_every": 1, ...}

The method is trained once per class (:meth:`MethodContract.trained`); a subclass adds its own checks on
that run (``def test_x(self, trained): ...``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import pickle
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pytest

from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.loop_state import LoopResult
from sentsweep.trainables.method import Method, TuneFunction
from sentsweep.trainables.registry import get_method, get_trainable, load_encoder

SENTENCES = ["A man is playing a guitar.", "The cat sat on the mat."]


class TrainedRun(NamedTuple):
    result: LoopResult
    final: dict[str, float]
    output_dir: Path
    cache: Path
    log: list[str]


class MethodContract(ABC):
    """The basic tests of a registered method: valid defaults and first points, a few-step run that
    reports its metric, a saved model that loads through ``load_encoder``, a Tune function that pickles."""

    method_name: ClassVar[str]

    @abstractmethod
    def tiny_settings(self, tiny_bert_dir: Path) -> dict[str, Any]:
        """Trial settings that train in seconds on the bundled sample (a few steps, few dev pairs)."""

    @pytest.fixture(scope="class")
    @classmethod
    def method(cls) -> Method[Any, Any]:
        return get_method(cls.method_name)

    @pytest.fixture(scope="class")
    @classmethod
    def trained(cls, tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Iterator[TrainedRun]:
        """One standalone training of :meth:`tiny_settings`, with its own cache folder."""
        root = tmp_path_factory.mktemp(f"contract-{cls.method_name}")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SENTSWEEP_CACHE", str(root / "cache"))
            method = get_method(cls.method_name)
            lines: list[str] = []
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                result, final = method.train_standalone(cls().tiny_settings(tiny_bert_dir),
                                                        output_dir=root / "run", log=lines.append)
            yield TrainedRun(result, final, root / "run", root / "cache", lines + printed.getvalue().splitlines())

    # -- config and spaces ------------------------------------------------------------------------
    def test_config_defaults_are_valid(self, method: Method[Any, Any]) -> None:
        defaults = method.config_cls()
        assert method.parse({}) == defaults
        assert method.parse(defaults.model_dump(by_alias=True)) == defaults  # dump and parse round-trip

    def test_first_points_of_its_spaces_are_valid_configs(self, method: Method[Any, Any]) -> None:
        spaces = [s for s in SEARCH_SPACES.values() if s.method == method.name]
        assert spaces, f"method '{method.name}' has no search space"
        for space in spaces:
            for point in (space.first_point, *space.extra_points):
                method.parse(point, source=space.name)
        # the method's own space starts at the config's defaults (where a default is set: lambda is not)
        defaults = method.config_cls().model_dump(by_alias=True)
        first = SEARCH_SPACES[method.name].first_point
        assert all(defaults[k] in (v, None) for k, v in first.items()), first

    # -- a few steps of training --------------------------------------------------------------------
    def test_training_reports_the_metric(self, method: Method[Any, Any], trained: TrainedRun,
                                         tiny_bert_dir: Path) -> None:
        config = method.parse(self.tiny_settings(tiny_bert_dir))
        assert trained.result.state.history, "no dev evaluation was reported"
        for row in trained.result.state.history:
            assert math.isfinite(row[config.metric]) and math.isfinite(row["train_loss"])
        assert trained.final["final"] == 1.0 and trained.final[config.metric] == trained.result.state.best_value
        written = json.loads((trained.output_dir / "final_metrics.json").read_text())
        assert written[config.metric] == trained.final[config.metric]
        assert (trained.output_dir / "history.jsonl").read_text().count("\n") == len(trained.result.state.history)

    def test_saved_model_loads_through_load_encoder(self, trained: TrainedRun) -> None:
        run = load_encoder(trained.output_dir).encode(SENTENCES)
        best = load_encoder(trained.output_dir / "best").encode(SENTENCES)
        assert run.shape[0] == 2 and np.isfinite(run).all()
        np.testing.assert_allclose(run, best, rtol=1e-5, atol=1e-6)

    def test_tune_function_pickles(self, method: Method[Any, Any]) -> None:
        function = get_trainable(method.name).function
        assert isinstance(function, TuneFunction) and function.__name__ == f"train_{method.name}"
        copy = pickle.loads(pickle.dumps(function))
        assert copy == function and type(copy.method) is type(method) and copy.method.name == method.name
