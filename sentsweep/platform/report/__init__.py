"""What a sweep shows: its plots and Pareto front, the winner's export, ``sentsweep compare`` and webhook
notifications. Names are imported on first use, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "record_front": "sentsweep.platform.report.selection",
    "SweepNotifier": "sentsweep.platform.report.notify",
    "compare": "sentsweep.platform.report.compare",
    "compare_plots": "sentsweep.platform.report.compare_plots",
    "confirmation_plot": "sentsweep.platform.report.selection",
    "export_run": "sentsweep.platform.report.export",
    "find_sweeps": "sentsweep.platform.report.compare",
    "pareto_plot": "sentsweep.platform.report.selection",
    "protocol_table": "sentsweep.platform.report.protocols",
    "render": "sentsweep.platform.report.compare",
    "render_protocols": "sentsweep.platform.report.protocols",
    "sweep_runs": "sentsweep.platform.report.compare",
    "trial_status": "sentsweep.platform.report.plots",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
