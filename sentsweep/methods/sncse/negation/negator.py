"""Batched negation: one loaded spaCy pipeline parses sentences with ``nlp.pipe`` and the rules negate them.

Speed: :class:`Negator` parses in batches (optionally with worker processes) and loads only the tokenizer,
tagger and parser (the ``tagger-parser`` pipe set of :func:`sentsweep.data.spacy_models.load_spacy`: ``ner``
excluded; ``attribute_ruler`` and ``lemmatizer`` disabled, the one lemma a rule needs is computed on demand).
The ``reference`` rule set (:mod:`~sentsweep.methods.sncse.negation.rule_sets`) loads every component, as the
SNCSE reference script did, and decides a lookup miss from the text alone, without parsing the sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sentsweep.data.spacy_models import load_spacy, resolve_spacy_model, spacy_model_id
from sentsweep.errors import ConfigError
from sentsweep.methods.sncse.negation.rule_sets import DEFAULT_RULE_SET, RuleSet, rule_set
from sentsweep.methods.sncse.negation.rules import Negation, parsed_lemma

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token


class Negator:
    """Negates sentences with one loaded spaCy pipeline and one rule set (``rules``: a name of
    :data:`~sentsweep.methods.sncse.negation.rule_sets.RULE_SETS`), parsing in batches with ``nlp.pipe``.

    >>> negator = Negator()                       # doctest: +SKIP
    >>> negator("The cat sat on the mat.")        # doctest: +SKIP
    'The cat did not sit on the mat.'
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 256,
        n_process: int = 1,
        nlp: Language | None = None,
        rules: str = DEFAULT_RULE_SET,
    ) -> None:
        self.rule_set: RuleSet = rule_set(rules)
        if nlp is not None and self.rule_set.pipes == "full" and "lemmatizer" not in nlp.pipe_names:
            raise ValueError(f"the {rules} rules read spaCy's own lemmas: pass a pipeline whose lemmatizer runs")
        if batch_size < 1:
            raise ConfigError(f"must be >= 1, got {batch_size}", field="negation_batch_size")
        if n_process < 1:
            raise ConfigError(f"must be >= 1, got {n_process}", field="negation_processes")
        self.package: str | None
        if nlp is not None:
            self.package, self.model_id = None, spacy_model_id(nlp)
        else:
            self.package, self.model_id = resolve_spacy_model(model, field="negation_model")
        self._nlp = nlp
        self.batch_size = batch_size
        self.n_process = n_process

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline, loaded on first use (a cache hit never loads it)."""
        if self._nlp is None:
            self._nlp = load_spacy(self.package, self.rule_set.pipes, field="negation_model")
        return self._nlp

    def lemmatize(self, token: Token) -> str:
        """The token's lemma: from the pipeline when its lemmatizer ran, else computed for this token."""
        if token.tag_ in ("VB", "VBP"):  # already the base form ("address", not "addres")
            return token.lower_
        nlp = self.nlp
        if "lemmatizer" in nlp.pipe_names or "lemmatizer" not in nlp.component_names:
            return parsed_lemma(token)
        lemmatizer = nlp.get_pipe("lemmatizer")
        if not hasattr(lemmatizer, "rule_lemmatize"):
            return parsed_lemma(token)
        saved = token.pos_
        token.pos_ = "AUX" if token.tag_ == "MD" else "VERB"
        try:
            lemmas = lemmatizer.rule_lemmatize(token)
        finally:
            token.pos_ = saved
        return (lemmas[0] if lemmas else token.text).lower()

    @property
    def rules(self) -> str:
        """The rule set's name (``project``, ``reference``)."""
        return self.rule_set.name

    def negate_doc(self, doc: Doc) -> Negation:
        """The rule set's negation of a parsed sentence (without the text-only step of :meth:`pipe`)."""
        return self.rule_set.negate_doc(doc, self.lemmatize)

    def decide(self, sentence: str) -> Negation | None:
        """The negation the rule set decides from the text alone (the reference's lookup miss), else None."""
        before_parse = self.rule_set.before_parse
        return before_parse(sentence) if before_parse is not None else None

    def __call__(self, sentence: str) -> str:
        """The negation of one sentence (parses it alone: use :meth:`pipe` for many)."""
        decided = self.decide(sentence)
        return (decided if decided is not None else self.negate_doc(self.nlp(sentence))).text

    def pipe(self, sentences: Iterable[str]) -> Iterator[Negation]:
        """Negations in input order, parsed in batches of ``batch_size`` (``n_process`` workers); a sentence the
        rule set decides from its text (``before_parse``) is not parsed."""
        sentences = list(sentences)
        decided = [self.decide(s) for s in sentences]
        to_parse = [s for s, d in zip(sentences, decided, strict=True) if d is None]
        docs = self.nlp.pipe(to_parse, batch_size=self.batch_size, n_process=self.n_process) if to_parse else iter(())
        for negation in decided:
            yield negation if negation is not None else self.negate_doc(next(docs))

    def negate(
        self, sentences: Sequence[str], progress: Callable[[int], Any] | None = None
    ) -> list[Negation]:
        """All negations of ``sentences``; each distinct sentence is parsed once.

        ``progress(n)`` is called with the number of sentences just done; the calls add up to
        ``len(sentences)`` (for a progress bar).
        """
        distinct = list(dict.fromkeys(sentences))
        done: dict[str, Negation] = {}
        reported = 0
        for i, (sentence, negation) in enumerate(zip(distinct, self.pipe(distinct), strict=True), 1):
            done[sentence] = negation
            if progress is not None and (i % self.batch_size == 0 or i == len(distinct)):
                progress(i - reported)
                reported = i
        if progress is not None and len(sentences) > len(distinct):
            progress(len(sentences) - len(distinct))  # duplicates: done with their first copy
        return [done[s] for s in sentences]
