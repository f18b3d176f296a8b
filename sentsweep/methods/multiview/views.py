"""The four views of a sentence (multi-view paper, section 3.2), each an encoder to ``hidden_size``.

- ``bow``: bag of words, the commutative sum of the word vectors, mapped to ``hidden_size`` by one
  bias-free linear map (``W sum_w x_w = sum_w W x_w``: still a sum of word vectors, of projected ones,
  so that it can be paired with a view of any size and has parameters even when the vectors are frozen);
- ``seq``: a bidirectional GRU (GRU as in the paper's Quick-Thoughts setup), embedding = the last
  forward and last backward hidden states concatenated (``hidden_size / 2`` each);
- ``dep``: the attentive Child-Sum Tree-LSTM (eqs. 1-6) over the dependency tree, embedding = root state;
- ``const``: the binary N-ary Tree-LSTM over the binarised constituency tree, words at the leaves,
  embedding = root state.

A view takes the word vectors of the batch's flat tokens and a :class:`ViewInputs` and returns
``(batch, hidden_size)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

from sentsweep.methods.multiview.cells import AttentiveChildSumTreeLSTM, BinaryTreeLSTM
from sentsweep.methods.multiview.trees import BinaryBatch, DependencyBatch

VIEWS: tuple[str, ...] = ("bow", "seq", "dep", "const")
TREE_VIEWS: frozenset[str] = frozenset({"dep", "const"})


@dataclass(frozen=True)
class ViewInputs:
    """A batch of sentences as the views need it: flat tokens and, when a view needs them, trees.

    ``word_ids`` (T,): every token of the batch, sentence after sentence; ``sentence`` (T,): its sentence;
    ``position`` (T,): its position in the sentence; ``lengths`` (B,): tokens per sentence.
    """

    word_ids: Tensor
    sentence: Tensor
    position: Tensor
    lengths: Tensor
    dep: DependencyBatch | None = None
    const: BinaryBatch | None = None

    @property
    def batch_size(self) -> int:
        return int(self.lengths.numel())

    def to(self, device: torch.device | str) -> ViewInputs:
        return ViewInputs(
            self.word_ids.to(device),
            self.sentence.to(device),
            self.position.to(device),
            self.lengths,  # stays on the CPU (pack_padded_sequence wants CPU lengths)
            self.dep.to(device) if self.dep is not None else None,
            self.const.to(device) if self.const is not None else None,
        )


class BowView(nn.Module):
    """Sum of the word vectors, then one bias-free linear map to ``hidden_size``."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.proj = nn.Linear(input_size, hidden_size, bias=False)

    def forward(self, vectors: Tensor, inputs: ViewInputs) -> Tensor:
        total = vectors.new_zeros(inputs.batch_size, vectors.shape[-1]).index_add(0, inputs.sentence, vectors)
        return self.proj(total)


class SeqView(nn.Module):
    """Bidirectional GRU; the last forward and backward hidden states, concatenated."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()  # hidden_size is even: MultiViewSettings checks it
        self.gru = nn.GRU(input_size, hidden_size // 2, batch_first=True, bidirectional=True)

    def forward(self, vectors: Tensor, inputs: ViewInputs) -> Tensor:
        B, L = inputs.batch_size, int(inputs.lengths.max())
        padded = vectors.new_zeros(B, L, vectors.shape[-1])
        padded[inputs.sentence, inputs.position] = vectors
        packed = pack_padded_sequence(padded, inputs.lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, last = self.gru(packed)  # (2, B, hidden / 2), in the original batch order
        return torch.cat([last[0], last[1]], dim=-1)


class DepView(nn.Module):
    """Attentive Child-Sum Tree-LSTM over the dependency tree (eqs. 1-6); the root's hidden state."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.cell = AttentiveChildSumTreeLSTM(input_size, hidden_size)

    def forward(self, vectors: Tensor, inputs: ViewInputs) -> Tensor:
        if inputs.dep is None:
            raise ValueError("the dep view needs dependency trees in its inputs")
        h, _ = self.cell(vectors.index_select(0, inputs.dep.node_token), inputs.dep)
        return h.index_select(0, inputs.dep.roots)


class ConstView(nn.Module):
    """Binary N-ary Tree-LSTM over the binarised constituency tree; the root's hidden state."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.cell = BinaryTreeLSTM(input_size, hidden_size)

    def forward(self, vectors: Tensor, inputs: ViewInputs) -> Tensor:
        if inputs.const is None:
            raise ValueError("the const view needs binarised constituency trees in its inputs")
        h, _ = self.cell(vectors, inputs.const)
        return h.index_select(0, inputs.const.roots)


VIEW_CLASSES: dict[str, type[nn.Module]] = {
    "bow": BowView,
    "seq": SeqView,
    "dep": DepView,
    "const": ConstView,
}


def build_view(name: str, input_size: int, hidden_size: int) -> nn.Module:
    """The view called ``name`` (one of :data:`VIEWS`)."""
    try:
        cls = VIEW_CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown view '{name}'; known: {', '.join(VIEWS)}") from None
    return cls(input_size, hidden_size)


class ViewPair(NamedTuple):
    """The two views ``f`` and ``g`` of a model, in :data:`VIEWS` order (the pair is unordered: the
    objective is symmetric in f and g). Parsed once from the config's ``"dep+const"`` and kept in this
    form down to the model; ``str()`` gives the config form back."""

    f: str
    g: str

    def __str__(self) -> str:
        return f"{self.f}+{self.g}"


def parse_view_pair(value: str | ViewPair) -> ViewPair:
    """``"dep+const"`` (or ``"dep,const"``, ``"const+dep"``, YAML's ``[dep, const]``) -> ``ViewPair("dep",
    "const")``."""
    if isinstance(value, ViewPair):
        return value
    if isinstance(value, list | tuple):
        value = "+".join(str(part) for part in value)
    if not isinstance(value, str):
        raise ValueError(f"views must be two of {', '.join(VIEWS)} joined by '+' (e.g. 'dep+const'), got {value!r}")
    parts = [p.strip().lower() for p in value.replace(",", "+").split("+") if p.strip()]
    if len(parts) != 2 or any(p not in VIEWS for p in parts):
        raise ValueError(
            f"views must be two of {', '.join(VIEWS)} joined by '+' (e.g. 'dep+const'), got {value!r}"
        )
    a, b = sorted(parts, key=VIEWS.index)
    return ViewPair(a, b)
