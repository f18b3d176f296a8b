"""SNCSE's Figure 4 as a PNG: histograms of cos(s, neg(s)) against cos(s, random sentence).

The paper (section 4.3) plots, for 5000 STS sentences, the cosine of each sentence with its negation
(soft negative pairs) and with a random other sentence (negative pairs): with BML the soft-negative peak
sits near 0.90, without it near 0.98. The cosines themselves come from
:func:`sentsweep.evaluation.analysis.similarity_distribution`; this module only draws them (matplotlib,
Agg backend, no display needed).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

#: Colours of the named distributions (others cycle through matplotlib's defaults).
COLOURS: dict[str, str] = {"negation": "tab:red", "random": "tab:blue"}


def plot_similarity_histogram(
    distributions: Mapping[str, ArrayLike],
    path: str | Path,
    *,
    title: str = "cos(s, neg(s)) vs cos(s, random) (SNCSE Figure 4)",
    bins: int = 50,
) -> Path:
    """Overlaid histograms (density) of each named cosine distribution, with its mean marked; a PNG.

    Drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas: no pyplot state, no change
    of the process's backend, no display needed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(7, 4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    arrays = {name: np.asarray(v, dtype=np.float64).ravel() for name, v in distributions.items()}
    lo = min(float(v.min()) for v in arrays.values())
    hi = max(float(v.max()) for v in arrays.values())
    pad = max(0.01, 0.03 * (hi - lo))
    edges = np.linspace(lo - pad, min(1.0, hi) + pad, bins + 1)  # one grid: comparable bars
    for name, v in arrays.items():
        colour = COLOURS.get(name)
        ax.hist(v, bins=edges, density=True, alpha=0.5, color=colour, label=f"{name} (n={v.size})")
        mean = float(v.mean())
        ax.axvline(mean, color=colour or "k", linestyle="--", linewidth=1)
        ax.annotate(
            f"mean {mean:.3f}",
            (mean, 0),
            xytext=(3, 5),
            textcoords="offset points",
            fontsize=8,
            color=colour or "k",
        )
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return path
