"""How a person sees a trial: its label (``t03``), its run's name (``t03 scale=22.4``), bookkeeping metrics (under
:data:`SYS_PREFIX`), UI links, and its placement (tags ``node_ip``, ``node_id``, ``gpu_ids``: Ray's, maybe logical)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: The prefix of a trial's bookkeeping and system metrics in MLflow (its UI groups them by it).
SYS_PREFIX = "system/"
#: Report keys that are bookkeeping, not figures of the training.
BOOKKEEPING_KEYS = frozenset({"step", "epoch", "gpus", "final", "failed", "evaluations", "wall_seconds",
                              "gpu_seconds", "attempt_seconds", "training_iteration", "time_total_s",
                              "compute_seconds", "total_steps"})
#: The label's letter of a search trial and of a confirmation trial.
SEARCH_PREFIX = "t"
CONFIRMATION_PREFIX = "c"
#: The longest run name the label and its values make (MLflow's UI cuts longer ones).
MAX_RUN_NAME = 120
#: The query parameter that opens MLflow 3's UI on its model-training view.
TRAINING_VIEW = "workflowType=machine_learning"
NODE_IP_TAG = "node_ip"
NODE_ID_TAG = "node_id"
GPU_IDS_TAG = "gpu_ids"


def tracked_key(key: str) -> str:
    return f"{SYS_PREFIX}{key}" if key in BOOKKEEPING_KEYS else key


def _in_two_decimals(value: Any) -> bool:
    return isinstance(value, float) and 1 <= abs(value) < 1e5


def figure(value: Any) -> str:
    """A measured figure as every line of the command line shows it: a float from 1 to 100000 to two decimals
    (``83.20``), any other finite float to three significant digits, anything else as ``str``."""
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    return f"{value:.2f}" if _in_two_decimals(value) else f"{value:.3g}"


def setting(value: Any) -> str:
    """A setting's value as :func:`figure` shows it, without trailing zeros (``22.4``, ``20``, ``3.5e-05``)."""
    text = figure(value)
    return text.rstrip("0").rstrip(".") if _in_two_decimals(value) else text


def trial_label(number: int | None, prefix: str = SEARCH_PREFIX) -> str | None:
    return f"{prefix}{number:02d}" if number is not None else None


def run_name(label: str | None, trial_id: str, values: Mapping[str, Any]) -> str:
    """A trial run's name: its label (else Tune's id) and its searched values that are plain numbers or text."""
    name = " ".join([label or trial_id, *(f"{k.rsplit('/', 1)[-1]}={setting(v)}" for k, v in values.items()
                                          if isinstance(v, int | float | str | bool))])
    return name if len(name) <= MAX_RUN_NAME else name[:MAX_RUN_NAME - 3] + "..."


def ui_link(tracking_uri: str, experiment_id: str, run_id: str | None = None) -> str:
    """The MLflow UI page of an experiment (or run): a server's full address, else the part after ``mlflow ui``'s."""
    base = tracking_uri.rstrip("/") if tracking_uri.startswith(("http://", "https://")) else ""
    page = f"#/experiments/{experiment_id}" + (f"/runs/{run_id}" if run_id else "")
    return f"{base}/{page}?{TRAINING_VIEW}"


def placement_tags() -> dict[str, str]:
    """The placement of the calling Ray task or actor; ``{}`` outside Ray and in a driver."""
    try:
        import ray

        if not ray.is_initialized() or (context := ray.get_runtime_context()).get_task_id() is None:
            return {}
        return {NODE_IP_TAG: ray.util.get_node_ip_address(), NODE_ID_TAG: context.get_node_id(),
                GPU_IDS_TAG: ",".join(str(i) for i in ray.get_gpu_ids())}
    except Exception:  # no Ray installed, or an API that moved: placement is informative only
        return {}


def placement_label(tags: dict[str, str]) -> str:
    if NODE_ID_TAG not in tags:
        return ""
    gpus = tags.get(GPU_IDS_TAG, "")
    return f"{tags[NODE_ID_TAG][:8]}@{tags.get(NODE_IP_TAG, '?')}" + (f" gpu {gpus}" if gpus else "")
