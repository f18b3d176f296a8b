"""Where Ray placed a trial: the tags ``node_ip``, ``node_id`` and ``gpu_ids`` (Ray's, maybe logical) of its run."""

from __future__ import annotations

NODE_IP_TAG = "node_ip"
NODE_ID_TAG = "node_id"
GPU_IDS_TAG = "gpu_ids"


def placement_tags() -> dict[str, str]:
    """The placement of the calling Ray task or actor; ``{}`` outside Ray and in a driver."""
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
    if NODE_ID_TAG not in tags:
        return ""
    gpus = tags.get(GPU_IDS_TAG, "")
    return f"{tags[NODE_ID_TAG][:8]}@{tags.get(NODE_IP_TAG, '?')}" + (f" gpu {gpus}" if gpus else "")
