"""A real toy sweep (Ray Tune, Optuna, MLflow sqlite) stopped by SIGINT and resumed: the winner's line names every
searched setting, also one every trial set alike, and no progress line is printed twice."""

from __future__ import annotations

import re

import optuna
import pytest

from sentsweep.search_spaces import PythonSpace
from tests.platform.sweep_toy import TOY_TRAINABLE, interrupted_sweep, toy_config, toy_space


def pooled_space(trial: optuna.Trial) -> None:
    """The toy's space and a pooling whose one choice every trial takes."""
    toy_space(trial)
    trial.suggest_categorical("pooling", ["mean"])


POOLED_SPACE = PythonSpace("toy-pooled", "toy", pooled_space, {"lr": 1e-3, "scale": 1.0, "pooling": "mean"})
#: A progress line without its seconds: what it says.
PROGRESS = re.compile(r"^\[\s*\d+s\] (\d+/\d+ trials: .*)$")


@pytest.mark.slow
def test_a_resumed_sweep_names_every_searched_setting_and_prints_each_line_once(tmp_path, tiny_bert_dir,
                                                                                 tracking_uri, ray_session, capfd):
    from sentsweep.platform.driver.sweep import resume_sweep

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, max_concurrent_trials=1,
                        search_space="toy-pooled", scheduler={"type": "fifo"}, plots=False,
                        fixed={"max_steps": 4, "sleep_s": 0.5})
    folder = interrupted_sweep(config, 2, deadline_s=600, space=POOLED_SPACE)
    first = capfd.readouterr().out
    lines: list[str] = []
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=POOLED_SPACE, preflight=False,
                           echo=lines.append)
    second = capfd.readouterr().out
    print("FIRST\n" + first + "\nSECOND\n" + second + "\nECHO\n" + "\n".join(lines))
    assert outcome.counts == {"finished": 4, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    (winner,) = [line for line in lines if line.startswith("best trial t")]
    assert re.search(r" with lr=\S+, scale=\S+, pooling=mean$", winner), winner
    said = [m.group(1) for line in (first + second).splitlines() if (m := PROGRESS.match(line))]
    assert len(said) == len(set(said)), said
