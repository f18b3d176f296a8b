"""The stop flag of a draining sweep: how a trial on any node learns that its sweep is stopping.

On the first SIGINT/SIGTERM the driver raises the flag (:mod:`sentsweep.platform.drain`) and gives the running
trials a grace period (``stop_grace_s``) to checkpoint where they are before Tune stops them. The flag is a key in
Ray's internal key-value store (``ray.experimental.internal_kv``, kept by the cluster's GCS, so every worker of
every node reads the same value), named after the sweep (Tune's experiment name), in the ``sentsweep`` namespace.
The store has no expiry, so the driver removes the key when its session of the sweep starts and when it ends.

A trial's training loop asks :meth:`StopFlag.requested` at every step; the store is read at most every
:data:`CHECK_EVERY_S` seconds (one clock reading per step otherwise). Once it has reported its checkpoint the
trial waits in :meth:`StopFlag.wait` until Tune stops it. Ray is imported inside the methods only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

#: The key (1.0) of a trial's draining report: a checkpoint at the step reached, not an evaluation (its metric
#: repeats the last evaluation's value, NaN before the first); schedulers and searchers skip it.
DRAINING_KEY = "sentsweep_draining"
#: The internal-KV namespace of sentsweep's keys.
KV_NAMESPACE = "sentsweep"
#: How often (seconds) a trial reads the flag.
CHECK_EVERY_S = 2.0


class StopCheck(Protocol):
    """What the training loop asks (:class:`StopFlag`): whether to stop (cheap, at every step), and the wait after
    its draining report."""

    def requested(self) -> bool: ...

    def wait(self) -> NoReturn: ...


def draining_report(step: int, metric: str, history: list[dict[str, float]]) -> dict[str, float]:
    """The metrics of a draining report at ``step``: the marker and ``metric`` repeating the last evaluation's value
    (NaN before the first: Tune requires the sweep's metric in every report)."""
    last = history[-1].get(metric) if history else None
    return {DRAINING_KEY: 1.0, "step": float(step), metric: float("nan") if last is None else float(last)}


class StopFlag:
    """The stop flag of one sweep (``sweep_name``: Tune's experiment name, the sweep folder's name)."""

    def __init__(self, sweep_name: str, check_every_s: float = CHECK_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.key = f"stop:{sweep_name}".encode()
        self.check_every_s = check_every_s
        self._clock = clock
        self._next_read = float("-inf")

    @classmethod
    def for_this_trial(cls) -> StopFlag:
        """The flag of the sweep the calling Tune trial belongs to."""
        from ray import tune

        return cls(tune.get_context().get_experiment_name())

    # -- the driver -------------------------------------------------------------------------------
    def raise_flag(self) -> None:
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(self.key, b"1", overwrite=True, namespace=KV_NAMESPACE)

    def lower_flag(self) -> None:
        from ray.experimental import internal_kv

        internal_kv._internal_kv_del(self.key, namespace=KV_NAMESPACE)

    # -- a trial ----------------------------------------------------------------------------------
    def is_raised(self) -> bool:
        """Read the store now (False when it cannot be read: training goes on)."""
        from ray.experimental import internal_kv

        try:
            return bool(internal_kv._internal_kv_exists(self.key, namespace=KV_NAMESPACE))
        except Exception:  # the GCS is unreachable (it restarts, or the driver is gone): nothing to drain for
            return False

    def requested(self) -> bool:
        """Whether the sweep is stopping; reads the store at most every ``check_every_s`` seconds."""
        now = self._clock()
        if now < self._next_read:
            return False
        self._next_read = now + self.check_every_s
        return self.is_raised()

    def wait(self) -> NoReturn:
        """After the draining report: idle until Tune stops this trial, then end as Tune's own stop ends a
        function trainable (``SystemExit(0)``). Also ends when the flag is gone (the driver's session ended)."""
        session = _tune_session()
        while self.is_raised() and not (session is not None and session.stop_event.is_set()):
            time.sleep(min(0.5, self.check_every_s))
        raise SystemExit(0)


def _tune_session() -> Any:
    """Ray Train's session of this trial (its ``stop_event`` is set when Tune stops the trial), if any."""
    try:
        from ray.train._internal.session import get_session

        return get_session()
    except Exception:  # a Ray without it: the flag alone ends the wait
        return None
