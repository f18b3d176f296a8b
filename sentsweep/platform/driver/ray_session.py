"""The Ray a sweep runs in (:func:`ray_session`) and the environment of its workers (:data:`WORKER_ENV`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from sentsweep.platform.config import joins_ray_cluster
from sentsweep.platform.driver.local_ray import loopback_only, session_token
from sentsweep.platform.driver.stale_ray import tidy_local_ray
from sentsweep.platform.tracking.store import hidden_from_workers

#: Environment of every Ray worker of a sweep. ``TUNE_FUNCTION_THREAD_TIMEOUT_S``: how long a reused actor
#: waits for the previous trial's thread to end (Ray's default, 2 s, is shorter than a stopped trial's
#: teardown on a loaded node: closing its MLflow run, removing its work folder; a reset that times out fails
#: the next trial with "Trainable runner reuse requires reset_config()").
WORKER_ENV = {"TUNE_FUNCTION_THREAD_TIMEOUT_S": "120"}


@contextlib.contextmanager
def ray_session(address: str | None = None, *, log_to_driver: bool = False,
                env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Use the running Ray, else connect to ``address`` (or ``RAY_ADDRESS``) or start a local one (and shut it down
    after); the workers get :data:`WORKER_ENV` and ``env`` (credentials for a cluster's workers:
    :meth:`SweepConfig.worker_credentials`).

    Without an address the local Ray is a new one (``address="local"``): ``ray.init()`` alone would join the last
    cluster anyone started on this machine with ``ray start`` (a colleague's, on a shared workstation), and run the
    sweep there without the credentials and paths a cluster sweep gets. That local Ray listens on 127.0.0.1 only
    (:func:`~sentsweep.platform.driver.local_ray.loopback_only`)."""
    import ray

    if ray.is_initialized():
        yield
        return
    joins = joins_ray_cluster(address)
    with contextlib.ExitStack() as local:
        if not joins:
            local.enter_context(loopback_only())
            local.enter_context(session_token())
        with hidden_from_workers() if not joins else contextlib.nullcontext():  # MLflow is the driver's alone
            context = ray.init(address=address if joins else "local", include_dashboard=False,
                               log_to_driver=log_to_driver, configure_logging=True, logging_level="WARNING",
                               runtime_env={"env_vars": {**WORKER_ENV, **(env or {})}})
        if not joins:  # what killed drivers' local Rays left is ended (:mod:`.stale_ray`)
            tidy_local_ray(context.address_info.get("session_dir"))
        try:
            yield
        finally:
            ray.shutdown()
