"""SNCSE's first-point default that its config resolves only at training: lambda by model family
(:func:`sncse_defaults`; SNCSE section 3.2: 1e-3 for BERT, 5e-4 for RoBERTa)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sentsweep.methods.encoders import model_type
from sentsweep.methods.sncse import default_lambda


def sncse_defaults(config: BaseModel, sampled: list[str]) -> dict[str, Any]:
    """The lambda of the sweep's model family when the space samples lambda and the sweep leaves it unset, as an
    unset trial config gets it (:class:`~sentsweep.trainables.sncse.SncseTask`)."""
    if "lambda" not in sampled or getattr(config, "lambda_", None) is not None:
        return {}
    family = model_type(str(config.model), "to choose the first point's lambda (SNCSE: 1e-3 BERT, "
                        "5e-4 RoBERTa)")
    return {"lambda": default_lambda(family)}
