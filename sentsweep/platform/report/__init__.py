"""What a sweep shows: its plots and Pareto front, the winner's export, ``sentsweep compare`` and webhook
notifications. Names are imported on first use, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.report.compare": ("compare", "compare_plots", "render", "sweep_runs"),
    "sentsweep.platform.report.export": ("BEST_MODEL", "BEST_WEIGHTS", "ST_SUBDIR", "export_run",
                                         "export_sentence_transformer", "has_artifact"),
    "sentsweep.platform.report.notify": ("SweepNotifier",),
    "sentsweep.platform.report.plots": ("TrialRecord", "sweep_plots", "trial_records"),
    "sentsweep.platform.report.protocols": ("protocol_table", "render_protocols"),
    "sentsweep.platform.report.winner": ("best_label", "confirmation_plot", "record_front", "report_reference",
                                         "version_about"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
