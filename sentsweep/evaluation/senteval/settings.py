"""The SentEval options, by name, and the classifier settings they select (the one place of both).

SentEval (Conneau & Kiela, 2018) trains its classifiers in PyTorch; SimCSE's ``evaluation.py`` runs it in
one of two named modes, and the papers' transfer tables use the first:

- ``test`` (the default): kfold 10, logistic regression (``nhid`` 0), Adam, batch 64, tenacity 5,
  epoch_size 4;
- ``fast`` (SimCSE's ``fasttest``/``dev``): kfold 5, RMSprop, batch 128, tenacity 3, epoch_size 2;
- ``lbfgs``: sentsweep's exact L-BFGS logistic regression (scikit-learn) on the same folds and L2 grid;
  not SentEval's classifier (it differs by up to ~3 points), kept as a named, non-default option.

Both PyTorch settings keep SentEval's other classifier defaults: ``max_epoch`` 200, the optimizer's own
defaults (Adam lr 1e-3, RMSprop lr 1e-2, alpha 0.99), and L2 as the optimizer's ``weight_decay`` on every
parameter (the bias included). :class:`SentEvalOptions` is what a caller sets; the trial configs expose
each of its fields as ``senteval_<field>`` (:data:`SENTEVAL_OPTION_FIELDS`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

#: SentEval's PyTorch L2 grid (the optimizer's weight decay), smallest first: ``10**t for t in -5..-2``.
REG_GRID: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
#: SentEval's default seed (classifier initialisation, batch order, fold shuffling).
DEFAULT_SEED = 1111
#: The seed SentEval's InnerKFoldClassifier (MR, CR, SUBJ, MPQA) hard-codes for its folds.
INNER_KFOLD_FOLD_SEED = 1111
#: Share of the training part held out for early stopping when a classifier is refit (SentEval's 0.05).
VALIDATION_SPLIT = 0.05
#: MRPC pair features: SentEval's ``[|u-v|, u*v]`` (default) or with ``u, v`` in front.
MRPC_FEATURES: tuple[str, ...] = ("diff_prod", "full")


@dataclass(frozen=True)
class ClassifierSetting:
    """One named classifier setting: the ``classifier`` dict SimCSE hands to SentEval, plus ``kfold``.

    ``solver`` is ``adam`` or ``rmsprop`` (SentEval's MLP with ``nhid`` 0) or ``lbfgs`` (exact solver).
    """

    name: str
    solver: str
    kfold: int
    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200

    @property
    def is_toolkit(self) -> bool:
        """Whether this is SentEval's own PyTorch classifier (not the exact solver)."""
        return self.solver != "lbfgs"

    def describe(self) -> str:
        """A short label for tables and logs."""
        if not self.is_toolkit:
            return f"{self.name}: exact L-BFGS logistic regression"
        return (f"{self.name}: logreg {self.solver}, batch {self.batch_size}, tenacity {self.tenacity}, "
                f"epoch_size {self.epoch_size}")


#: The settings by name (SimCSE's "test" and "fast", and the exact solver).
CLASSIFIER_SETTINGS: dict[str, ClassifierSetting] = {
    "test": ClassifierSetting("test", "adam", kfold=10, batch_size=64, tenacity=5, epoch_size=4),
    "fast": ClassifierSetting("fast", "rmsprop", kfold=5, batch_size=128, tenacity=3, epoch_size=2),
    "lbfgs": ClassifierSetting("lbfgs", "lbfgs", kfold=10),
}
DEFAULT_SETTING = "test"


def classifier_setting(name: str) -> ClassifierSetting:
    """The setting called ``name``; ValueError naming the valid ones otherwise."""
    try:
        return CLASSIFIER_SETTINGS[name]
    except KeyError:
        raise ValueError(
            f"unknown SentEval setting {name!r}; valid names: {', '.join(CLASSIFIER_SETTINGS)}"
        ) from None


@dataclass(frozen=True)
class SentEvalOptions:
    """Every SentEval option a caller (a trial config, the final evaluation, the CLI) can set.

    ``kfold`` None takes the setting's (10 for ``test``, 5 for ``fast``); ``inner_kfold`` None takes
    ``kfold`` (SentEval uses one k for the outer and the inner folds).
    """

    setting: str = DEFAULT_SETTING
    kfold: int | None = None
    inner_kfold: int | None = None
    seed: int = DEFAULT_SEED
    mrpc_features: str = "diff_prod"

    def __post_init__(self) -> None:
        classifier_setting(self.setting)
        for name in ("kfold", "inner_kfold"):
            value = getattr(self, name)
            if value is not None and value < 2:
                raise ValueError(f"{name} must be >= 2, got {value}")
        if self.mrpc_features not in MRPC_FEATURES:
            raise ValueError(f"mrpc_features must be one of {', '.join(MRPC_FEATURES)}, got {self.mrpc_features!r}")

    @property
    def classifier(self) -> ClassifierSetting:
        """The named classifier setting."""
        return classifier_setting(self.setting)

    @property
    def folds(self) -> int:
        """The k of k-fold (the option, else the setting's)."""
        return self.kfold or self.classifier.kfold

    @property
    def inner_folds(self) -> int:
        """The k of the inner folds (the option, else :attr:`folds`)."""
        return self.inner_kfold or self.folds


#: Trial-config field -> option name: ``senteval_setting`` -> ``setting``, one per SentEvalOptions field.
SENTEVAL_OPTION_FIELDS: dict[str, str] = {f"senteval_{f.name}": f.name for f in fields(SentEvalOptions)}
#: What each option means, as the trial config's fields and the CLI's flags describe it.
SENTEVAL_OPTION_HELP: dict[str, str] = {
    "setting": "SentEval classifier: test, fast or lbfgs",
    "kfold": "SentEval k-fold (default: the setting's)",
    "inner_kfold": "inner k (default: kfold)",
    "seed": "SentEval seed of the folds and the classifier",
    "mrpc_features": "MRPC: diff_prod or full",
}
