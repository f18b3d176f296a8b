"""SNCSE losses (eqs. 3-9) against values computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from sentsweep.errors import ConfigError
from sentsweep.methods.sncse.losses import (
    LOSS_VARIANTS,
    bml_loss,
    bml_terms,
    infonce_loss,
    negative_loss,
    positive_loss,
    sncse_loss,
    sncse_objective,
)

E = math.e
#: The paper's settings (tau 0.05, BML [0.1, 0.3], lambda 1e-3), passed explicitly: the losses have no defaults.
PAPER = {"temperature": 0.05, "alpha": 0.1, "beta": 0.3, "lam": 1e-3}
Z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
Z2 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
Z3 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # row 0: same as its anchor; row 1: orthogonal


def test_bml_hand_computed() -> None:
    # d = neg - pos = [-0.05, -0.4, -0.6]; ReLU(d + 0.1) = [0.05, 0, 0]; ReLU(-d - 0.3) = [0, 0.1, 0.3]
    cos_pos = torch.tensor([0.9, 0.5, 0.8])
    cos_neg = torch.tensor([0.85, 0.1, 0.2])
    assert float(bml_loss(cos_pos, cos_neg, 0.1, 0.3)) == pytest.approx((0.05 + 0.1 + 0.3) / 3)


@pytest.mark.parametrize("gap", [0.1, 0.2, 0.3])
def test_bml_is_zero_exactly_inside_the_interval(gap: float) -> None:
    cos_pos = torch.tensor([0.9], dtype=torch.float64)
    assert float(bml_loss(cos_pos, cos_pos - gap, 0.1, 0.3)) == pytest.approx(0.0, abs=1e-7)


def test_bml_penalises_both_sides_linearly() -> None:
    pos = torch.tensor([0.9])
    assert float(bml_loss(pos, torch.tensor([0.85]), 0.1, 0.3)) == pytest.approx(0.05)  # gap 0.05 < alpha
    assert float(bml_loss(pos, torch.tensor([0.4]), 0.1, 0.3)) == pytest.approx(0.2)  # gap 0.5 > beta
    # beta = 2.0: no upper bound (cosine gaps never exceed 2)
    assert float(bml_loss(pos, torch.tensor([-1.0]), 0.1, 2.0)) == 0.0


def test_bml_gradient_vanishes_inside_the_interval() -> None:
    pos = torch.tensor([0.9, 0.9], requires_grad=True)
    neg = torch.tensor([0.7, 0.88], requires_grad=True)  # gaps 0.2 (inside) and 0.02 (below alpha)
    bml_loss(pos, neg, 0.1, 0.3).backward()
    assert pos.grad is not None and neg.grad is not None
    assert pos.grad.tolist() == pytest.approx([0.0, -0.5])
    assert neg.grad.tolist() == pytest.approx([0.0, 0.5])


def test_infonce_hand_computed() -> None:
    # logits = cos / tau = [[1, 0], [0, 1]] / tau; each row: -log(e^(1/tau) / (e^(1/tau) + 1))
    assert float(infonce_loss(Z1, Z2, 1.0)) == pytest.approx(math.log(1 + 1 / E))
    assert float(infonce_loss(Z1, Z2, 0.5)) == pytest.approx(math.log(1 + E**-2))


def test_infonce_uses_cosine_not_dot_product() -> None:
    assert float(infonce_loss(3 * Z1, 0.1 * Z2, 1.0)) == pytest.approx(math.log(1 + 1 / E))


def test_positive_loss_hand_computed() -> None:
    # eq. 8: InfoNCE(z1, z2) + InfoNCE(z1, z3); cos(z1, z3) = [[1, 1], [0, 0]] -> log 2 per row
    assert float(positive_loss(Z1, Z2, Z3, 1.0)) == pytest.approx(math.log(1 + 1 / E) + math.log(2))


def test_negative_loss_hand_computed() -> None:
    # eq. 9: row 0 logits [1, 0, 1] -> log(2 + 1/e); row 1 logits [0, 1, 0] -> log(1 + 2/e)
    expected = (math.log(2 + 1 / E) + math.log(1 + 2 / E)) / 2
    assert float(negative_loss(Z1, Z2, Z3, 1.0)) == pytest.approx(expected)


def test_sncse_loss_is_infonce_plus_weighted_bml() -> None:
    # cos_pos = [1, 1], cos_neg = [1, 0]: d = [0, -1]; BML = ([0.1 + 0] + [0 + 0.7]) / 2 = 0.4
    value = sncse_loss(Z1, Z2, Z3, temperature=1.0, alpha=0.1, beta=0.3, lam=0.5)
    assert float(value) == pytest.approx(math.log(1 + 1 / E) + 0.5 * 0.4)


def test_objective_selects_each_variant_by_name() -> None:
    kwargs = {"temperature": 1.0, "alpha": 0.1, "beta": 0.3, "lam": 0.5}
    expected = {
        "infonce": math.log(1 + 1 / E),
        "bml": math.log(1 + 1 / E) + 0.5 * 0.4,
        "pl": math.log(1 + 1 / E) + math.log(2),
        "nl": (math.log(2 + 1 / E) + math.log(1 + 2 / E)) / 2,
    }
    assert set(expected) == set(LOSS_VARIANTS)
    for name, value in expected.items():
        loss, diag = sncse_objective(name, Z1, Z2, Z3, **kwargs)
        assert float(loss) == pytest.approx(value), name
        assert diag["cos_pos"] == pytest.approx(1.0) and diag["cos_neg"] == pytest.approx(0.5)
        assert diag["bml"] == pytest.approx(0.4)
        assert diag["cos_gap"] == pytest.approx(0.5)
        assert diag["bml_active"] == pytest.approx(1.0)  # gaps 0 and 1: both outside [0.1, 0.3]


def test_bml_active_share_counts_pairs_outside_the_interval() -> None:
    # gaps cos_pos - cos_neg = [0.05, 0.2, 0.4, 0.3]: the first below alpha, the third above beta
    cos_pos = torch.tensor([0.9, 0.9, 0.9, 0.9], dtype=torch.float64)
    cos_neg = cos_pos - torch.tensor([0.05, 0.2, 0.4, 0.3], dtype=torch.float64)
    terms = bml_terms(cos_pos, cos_neg, 0.1, 0.3)
    assert terms.tolist() == pytest.approx([0.05, 0.0, 0.1, 0.0], abs=1e-6)
    assert float(bml_loss(cos_pos, cos_neg, 0.1, 0.3)) == pytest.approx(float(terms.mean()))
    z1 = torch.tensor([[1.0, 0.0]] * 4)
    z2 = z1.clone()
    angles = torch.acos(torch.tensor([0.95, 0.8, 0.6, 0.7]))  # cos(z1, z3): gaps 0.05, 0.2, 0.4, 0.3
    z3 = torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
    _, diag = sncse_objective("infonce", z1, z2, z3, **PAPER)  # reported whatever the variant
    assert diag["bml_active"] == pytest.approx(0.5)
    assert diag["cos_gap"] == pytest.approx((0.05 + 0.2 + 0.4 + 0.3) / 4, abs=1e-6)


def test_infonce_ignores_the_soft_negatives() -> None:
    a, _ = sncse_objective("infonce", Z1, Z2, None, **PAPER)
    b, _ = sncse_objective("infonce", Z1, Z2, torch.randn(2, 2), **PAPER)
    assert float(a) == float(b) == pytest.approx(float(infonce_loss(Z1, Z2, 0.05)))


def test_hyperparameters_are_required() -> None:
    """No loss carries a default: the config is the one place of tau, alpha, beta and lambda."""
    import inspect

    from sentsweep.methods.sncse import losses

    for fn in (losses.infonce_loss, losses.bml_loss, losses.sncse_loss, losses.positive_loss,
               losses.negative_loss, losses.sncse_objective):
        defaults = [p.name for p in inspect.signature(fn).parameters.values() if p.default is not p.empty]
        assert defaults == [], fn.__name__


def test_objective_errors() -> None:
    with pytest.raises(ConfigError) as info:
        sncse_objective("margin", Z1, Z2, Z3, **PAPER)
    assert info.value.field == "loss"
    with pytest.raises(ValueError, match="z3"):
        sncse_objective("bml", Z1, Z2, None, **PAPER)
    with pytest.raises(ConfigError) as info:
        infonce_loss(Z1, Z2, 0.0)
    assert info.value.field == "temperature"


def test_half_precision_inputs_give_float32_losses() -> None:
    loss, _ = sncse_objective("bml", Z1.half(), Z2.half(), Z3.half(), **{**PAPER, "temperature": 1.0, "lam": 0.5})
    assert loss.dtype == torch.float32


def test_methods_package_imports_neither_ray_nor_mlflow() -> None:
    import ast
    from pathlib import Path

    import sentsweep.methods.sncse as package

    for source in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n.split(".")[0] in ("ray", "mlflow")], source.name


def test_minimising_bml_moves_the_gap_into_the_interval() -> None:
    torch.manual_seed(0)
    z1 = torch.randn(8, 16, requires_grad=True)
    z2 = (z1.detach() + 0.05 * torch.randn(8, 16)).requires_grad_()
    z3 = (z1.detach() + 0.05 * torch.randn(8, 16)).requires_grad_()  # a soft negative as close as z2
    optimiser = torch.optim.Adam([z1, z2, z3], lr=0.01)
    for _ in range(300):
        optimiser.zero_grad()
        bml_loss(torch.cosine_similarity(z1, z2), torch.cosine_similarity(z1, z3), 0.1, 0.3).backward()
        optimiser.step()
    gap = torch.cosine_similarity(z1, z2) - torch.cosine_similarity(z1, z3)
    assert bool(((gap >= 0.1 - 1e-3) & (gap <= 0.3 + 1e-3)).all()), gap
