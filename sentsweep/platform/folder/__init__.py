"""What a sweep folder holds besides its address: the driver lock, what it keeps afterwards, and which stored
state this process may trust. Names are imported on first use."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "LockLost": "sentsweep.platform.folder.lock",
    "SweepLock": "sentsweep.platform.folder.lock",
    "checkpoint_folder": "sentsweep.platform.folder.retention",
    "keep_best_weights_only": "sentsweep.platform.folder.retention",
    "prune_sweep": "sentsweep.platform.folder.retention",
    "refuse_foreign_parent": "sentsweep.platform.folder.trust",
    "refuse_untrusted_state": "sentsweep.platform.folder.trust",
    "same_folder": "sentsweep.platform.folder.trust",
    "trial_folder": "sentsweep.platform.folder.retention",
    "trusted_tracking_uri": "sentsweep.platform.folder.trust",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
