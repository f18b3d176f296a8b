"""What a sweep folder holds besides its address: the driver lock, what it keeps afterwards, and which stored
state this process may trust. Names are imported on first use."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.folder.lock": ("LockLost", "SweepLock"),
    "sentsweep.platform.folder.retention": ("CHECKPOINT_PREFIX", "checkpoint_folder", "keep_best_weights_only",
                                            "prune_sweep", "trial_folder"),
    "sentsweep.platform.folder.trust": ("refuse_foreign_parent", "refuse_untrusted_state", "same_folder",
                                        "trusted_tracking_uri"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
