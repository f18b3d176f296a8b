"""Multi-view structured contrastive learning (seed paper 003): four views of a sentence (bag of words,
BiGRU, attentive Child-Sum Tree-LSTM over dependencies, binary Tree-LSTM over constituents), batched
level by level, trained with the two-matrix Quick-Thoughts objective. Pure PyTorch: no Ray, no MLflow.
"""

from __future__ import annotations

from sentsweep.methods.multiview.cells import AttentiveChildSumTreeLSTM, BinaryTreeLSTM, segment_softmax
from sentsweep.methods.multiview.encoder import MultiViewEncoder, nearest_neighbours
from sentsweep.methods.multiview.model import (
    MultiViewModel,
    MultiViewSettings,
    SentenceArrays,
    build_model,
    collate,
    prepare,
)
from sentsweep.methods.multiview.objective import (
    context_targets,
    multiview_contrastive_loss,
    multiview_log_probs,
    multiview_scores,
    neighbour_accuracy,
)
from sentsweep.methods.multiview.trees import BinaryBatch, DependencyBatch, collate_binary, collate_dependency
from sentsweep.methods.multiview.views import VIEWS, ViewInputs, build_view, parse_view_pair
from sentsweep.methods.multiview.vocab import Vocabulary, WordVectors, load_word_vectors

__all__ = [
    "VIEWS",
    "AttentiveChildSumTreeLSTM",
    "BinaryBatch",
    "BinaryTreeLSTM",
    "DependencyBatch",
    "MultiViewEncoder",
    "MultiViewModel",
    "MultiViewSettings",
    "SentenceArrays",
    "ViewInputs",
    "Vocabulary",
    "WordVectors",
    "build_model",
    "build_view",
    "collate",
    "collate_binary",
    "collate_dependency",
    "context_targets",
    "load_word_vectors",
    "multiview_contrastive_loss",
    "multiview_log_probs",
    "multiview_scores",
    "nearest_neighbours",
    "neighbour_accuracy",
    "parse_view_pair",
    "prepare",
    "segment_softmax",
]
