"""Where Ray placed a trial: the MLflow tags ``node_ip``, ``node_id`` and ``gpu_ids`` of its child run, read inside
the trial as an attempt starts and reported with its first report. ``gpu_ids`` are Ray's ids, which may be logical.
"""

from __future__ import annotations

NODE_IP_TAG = "node_ip"
NODE_ID_TAG = "node_id"
GPU_IDS_TAG = "gpu_ids"


def placement_tags() -> dict[str, str]:
    """The placement of the calling Ray task or actor; ``{}`` outside Ray and in a Ray driver (no task id)."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        context = ray.get_runtime_context()
        if context.get_task_id() is None:
            return {}
        return {NODE_IP_TAG: ray.util.get_node_ip_address(), NODE_ID_TAG: context.get_node_id(),
                GPU_IDS_TAG: ",".join(str(i) for i in ray.get_gpu_ids())}
    except Exception:  # no Ray installed, or an API that moved: placement is informative only
        return {}


def placement_label(tags: dict[str, str]) -> str:
    """``node <id8>@<ip> gpu <ids>`` for a table cell ("" when the run has no placement tags)."""
    if NODE_ID_TAG not in tags:
        return ""
    gpus = tags.get(GPU_IDS_TAG, "")
    return f"{tags[NODE_ID_TAG][:8]}@{tags.get(NODE_IP_TAG, '?')}" + (f" gpu {gpus}" if gpus else "")
