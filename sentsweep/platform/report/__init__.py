"""What a sweep shows: its plots and Pareto front, the winner's export, ``sentsweep compare`` and webhook
notifications. Names are imported on first use, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.report.compare": ("compare", "compare_plots", "find_sweeps", "render", "sweep_runs"),
    "sentsweep.platform.report.export": ("export_run",),
    "sentsweep.platform.report.notify": ("SweepNotifier",),
    "sentsweep.platform.report.plots": ("trial_status",),
    "sentsweep.platform.report.protocols": ("protocol_table", "render_protocols"),
    "sentsweep.platform.report.winner": ("confirmation_plot", "pareto_plot", "record_front"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
