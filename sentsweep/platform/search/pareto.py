"""Pareto dominance and the Pareto front of a set of points, each objective maximised or minimised.

>>> pareto_front([(80.0, 30.0), (82.0, 50.0), (79.0, 40.0)], ["max", "min"])
[0, 1]

A point *a* dominates *b* when it is at least as good in every objective and strictly better in one
(Deb et al., 2002, "A fast and elitist multiobjective genetic algorithm: NSGA-II", Sec. III-A); the front is the
set of points no other point dominates. Equal points do not dominate each other, so ties are all on the front
together. Pure maths: no Ray, MLflow or Optuna here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _at_least_as_good(a: float, b: float, mode: str) -> bool:
    return a >= b if mode == "max" else a <= b


def dominates(a: Sequence[float], b: Sequence[float], modes: Sequence[str]) -> bool:
    """Whether ``a`` dominates ``b``: at least as good in every objective (``modes``: ``max``/``min`` each) and
    strictly better in at least one."""
    if not len(a) == len(b) == len(modes):
        raise ValueError(f"points of {len(a)} and {len(b)} values for {len(modes)} objectives")
    if any(m not in ("max", "min") for m in modes):
        raise ValueError(f"modes are max or min, not {list(modes)}")
    return all(_at_least_as_good(x, y, m) for x, y, m in zip(a, b, modes, strict=True)) and \
        any(x != y for x, y in zip(a, b, strict=True))


def pareto_front(points: Sequence[Sequence[float]], modes: Sequence[str]) -> list[int]:
    """The indices, in order, of the points no other point dominates; a point with a NaN value is never on the front
    (nor does it dominate another)."""
    usable = [i for i, p in enumerate(points) if all(math.isfinite(float(v)) for v in p)]
    return [i for i in usable if not any(dominates(points[j], points[i], modes) for j in usable if j != i)]
