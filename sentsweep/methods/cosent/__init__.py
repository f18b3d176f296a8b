"""CoSENT (Huang et al., TASLP 2024; Su 2022): the ranking loss over pair similarities and its baselines.

Exports the names of :mod:`sentsweep.methods.cosent.losses` (one module per loss, the registry
``LOSSES`` and ``create_loss``).
"""

from __future__ import annotations

from sentsweep.methods.cosent.losses import *  # noqa: F403 - the package's public names, listed once
from sentsweep.methods.cosent.losses import __all__ as __all__
