"""Where an encoder runs and in which precision: the device, and autocast to bf16/fp16 on a GPU."""

from __future__ import annotations

import contextlib

import torch

#: Whether evaluation (``encode``, the cross-encoder's ``predict``) autocasts to bf16/fp16 on a GPU: off, float32 as
#: the references evaluate (the one place of this default; ``TrialConfig.eval_amp`` reads it).
EVAL_AMP = False


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """The requested device, or CUDA when present, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_dtype(device: torch.device, enabled: bool) -> torch.dtype | None:
    """The dtype :func:`autocast_context` computes in: None (no autocast, float32) unless ``enabled`` on a
    CUDA device; then bf16 where the GPU supports it, else fp16."""
    if not enabled or device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def precision_name(device: torch.device, enabled: bool) -> str:
    """What an evaluation under ``autocast_context(device, enabled)`` computes in: ``float32``, ``bfloat16``
    or ``float16`` (the metric protocol's ``precision``)."""
    dtype = autocast_dtype(device, enabled)
    return "float32" if dtype is None else str(dtype).removeprefix("torch.")


def autocast_context(device: torch.device, enabled: bool = True) -> contextlib.AbstractContextManager:
    """bf16 autocast on GPUs that support it, fp16 on older GPUs, nothing on the CPU (:func:`autocast_dtype`)."""
    dtype = autocast_dtype(device, enabled)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda", dtype=dtype)
