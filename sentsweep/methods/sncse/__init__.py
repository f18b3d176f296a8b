"""SNCSE (seed paper 002): soft negatives by rule-based negation and the bidirectional margin loss.

- :mod:`~sentsweep.methods.sncse.negation`: the spaCy negation rules, batched, cached per corpus;
- :mod:`~sentsweep.methods.sncse.model`: the two-template prompt encoder with its training MLP;
- :mod:`~sentsweep.methods.sncse.losses`: InfoNCE, BML and the ablations PL and NL (eqs. 3-9);
- :mod:`~sentsweep.methods.sncse.diagnostics`: the Figure-4 histogram.

Pure PyTorch and spaCy: no Ray, no MLflow.
"""

from __future__ import annotations

from sentsweep.data.spacy_models import resolve_spacy_model
from sentsweep.methods.sncse.losses import (
    LOSS_VARIANTS,
    bml_loss,
    bml_terms,
    infonce_loss,
    negative_loss,
    pair_cosine,
    positive_loss,
    sncse_loss,
    sncse_objective,
)
from sentsweep.methods.sncse.model import (
    ANCHOR_TEMPLATE,
    POSITIVE_TEMPLATE,
    SIZE_SETTINGS,
    MLPHead,
    SncseModel,
    default_lambda,
    identical_soft_negatives,
    size_setting,
    with_final_punctuation,
)
from sentsweep.methods.sncse.negation import (
    DEFAULT_RULE_SET,
    RULES,
    RULES_VERSION,
    Negation,
    NegationStats,
    Negator,
    negate_corpus,
    negate_doc,
    rule_set,
)

__all__ = [
    "DEFAULT_RULE_SET",
    "ANCHOR_TEMPLATE",
    "LOSS_VARIANTS",
    "POSITIVE_TEMPLATE",
    "RULES",
    "RULES_VERSION",
    "SIZE_SETTINGS",
    "MLPHead",
    "Negation",
    "NegationStats",
    "Negator",
    "SncseModel",
    "bml_loss",
    "bml_terms",
    "default_lambda",
    "identical_soft_negatives",
    "infonce_loss",
    "negate_corpus",
    "size_setting",
    "negate_doc",
    "negative_loss",
    "pair_cosine",
    "positive_loss",
    "resolve_spacy_model",
    "rule_set",
    "sncse_loss",
    "sncse_objective",
    "with_final_punctuation",
]
