"""CoSENT's pooling by setting and encoder family (the one place that picks it).

The paper (section 4.1, "Implementation details"): "For unsupervised tasks [fine-tuning on NLI and
evaluating on STS without STS training data], the default pooling method for BERT is the first-last pooling,
whereas the CLS pooling method is utilized in the RoBERTa model. The mean pooling method is selected for
other tasks." The family comes from the model config's ``model_type`` (never from the model's path or
name); RoBERTa-like families (:data:`~sentsweep.methods.encoders.ROBERTA_FAMILIES`) take ``cls``, every
other family BERT's ``first_last``.
"""

from __future__ import annotations

from sentsweep.methods.encoders import ROBERTA_FAMILIES
from sentsweep.methods.encoders import model_type as read_model_type

#: Pooling of the unsupervised NLI-transfer setting, by family.
NLI_POOLING: dict[str, str] = {"bert": "first_last", "roberta": "cls"}


def nli_pooling(model_type: str) -> str:
    """The NLI setting's pooling for a model config's ``model_type``: ``cls`` for RoBERTa-like families,
    else ``first_last`` (BERT's)."""
    return NLI_POOLING["roberta"] if model_type in ROBERTA_FAMILIES else NLI_POOLING["bert"]


def model_type(model_name_or_path: str) -> str:
    """``model_type`` from the model's config (an alias such as ``minilm``, a folder or a cached hub id)."""
    return read_model_type(model_name_or_path, "to choose the NLI setting's pooling; set pooling explicitly")
