"""The stop signals of the sweep this process drives, and whether its budget is spent, where the code Tune unpickles
from ``tuner.pkl`` finds them."""

from __future__ import annotations

from typing import Any, Protocol


class Stops(Protocol):
    """What the readers use of the driver's stop signals."""

    received: str | None  # the stop signal that arrived (None: none)
    superseded: str | None  # why another driver holds the sweep now (None: this one does)
    drain: Any  # the driver's Drain while the running trials checkpoint (None: none)

    def watch_sigint(self) -> None: ...


#: The stop signals of the sweep this process drives, innermost last.
ACTIVE: list[Stops] = []
#: The sweeps this process drives whose budget is spent: their searcher starts no trial while the last ones finish.
SPENT: set[str] = set()


def active_stops() -> Stops | None:
    """The stop signals of the innermost :func:`~sentsweep.platform.driver.interrupt.graceful_stops` block, if any."""
    return ACTIVE[-1] if ACTIVE else None


def superseded() -> str | None:
    """Why this driver no longer holds its sweep; None while it does (or outside a sweep). Driver-side code that
    would write the sweep's shared state (its trials' runs) does nothing then: that state is the new holder's."""
    return ACTIVE[-1].superseded if ACTIVE else None
