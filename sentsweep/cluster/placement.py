"""Where a job's driver may run: ``entrypoint_num_cpus``/``_num_gpus`` and custom ``entrypoint_resources``
(``sentsweep submit --driver-resources``). Ray starts a job's driver on a node that has every resource it
asks for; a custom resource offered only by workers keeps the driver, and the best trial's final evaluation
that runs in it, off the head, which then only coordinates."""

from __future__ import annotations

import json
from collections.abc import Mapping

from sentsweep.errors import ConfigError

DRIVER_RESOURCES: dict[str, float] = {"sweep_driver": 1}
"""``--driver-resources`` without a value: the custom resource that only the ``cpu`` worker group of
``k8s/base/raycluster.yaml`` offers (``rayStartParams.resources``), so the sweep's driver and its final
evaluation run on a CPU worker and the head only coordinates. A cluster that offers it nowhere (a plain
``ray start --head``) never starts such a job, hence no default."""

DRIVER_NUM_CPUS = 1.0
"""The driver's CPUs when ``--driver-resources`` is given without ``--entrypoint-num-cpus``."""


def parse_driver_resources(text: str) -> dict[str, float]:
    """``--driver-resources '{"NAME": AMOUNT, ...}'``: positive amounts of custom resources."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON ({exc.msg}): give an object such as '{json.dumps(DRIVER_RESOURCES)}'",
                          field="--driver-resources") from None
    if not isinstance(value, dict) or not value:
        raise ConfigError("give a JSON object of resource names and amounts", field="--driver-resources")
    for name, amount in value.items():
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
            raise ConfigError(f"resource '{name}' needs a positive amount, not {amount!r}", field="--driver-resources")
        if name in ("CPU", "GPU", "memory"):
            raise ConfigError(f"'{name}' is not a custom resource: use --entrypoint-num-cpus/--entrypoint-num-gpus",
                              field="--driver-resources")
    return {str(name): float(amount) for name, amount in value.items()}


def describe_placement(num_cpus: float | None, num_gpus: float | None,
                       resources: Mapping[str, float] | None) -> str:
    """What the driver asks for and which nodes that admits, for a job's summary."""
    asks = [f"{num_cpus:g} CPU" if num_cpus else "", f"{num_gpus:g} GPU" if num_gpus else "",
            json.dumps(dict(resources)) if resources else ""]
    asked = " + ".join(a for a in asks if a) or "nothing"
    if resources:
        return f"{asked}: a node that offers {', '.join(sorted(resources))} (not the head)"
    return f"{asked}: any node, the head included (--driver-resources puts it on a worker)"
