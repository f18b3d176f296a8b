"""PNG plots of a sweep's Optuna study (optimisation history, parameter importance, parallel coordinates,
intermediate values), drawn offline with matplotlib's Agg backend."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

STUDY_PLOTS = ("optimization_history", "param_importances", "parallel_coordinate", "intermediate_values")


def _figure(drawn: Any) -> Any:
    """The figure behind what an optuna.visualization.matplotlib function returned (Axes or array)."""
    first = drawn.flat[0] if hasattr(drawn, "flat") else drawn
    return first.get_figure()


def study_plots(study: Any, out_dir: str | Path) -> tuple[list[Path], dict[str, str]]:
    """Draw every plot the study supports; returns the PNGs and, per skipped plot, why."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as ovm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    for name in STUDY_PLOTS:
        draw: Callable[..., Any] = getattr(ovm, f"plot_{name}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                warnings.simplefilter("ignore", UserWarning)
                figure = _figure(draw(study))
            figure.set_size_inches(8, 5)
            path = out / f"{name}.png"
            figure.savefig(path, dpi=110, bbox_inches="tight")
            plt.close(figure)
            written.append(path)
        except Exception as exc:  # e.g. importance needs two finished trials with varying params
            skipped[name] = f"{type(exc).__name__}: {exc}"
            plt.close("all")
    return written, skipped
