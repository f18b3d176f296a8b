"""The negation rules of SNCSE's soft negatives (seed paper 002, section 3), on one spaCy-parsed sentence.

SNCSE (seed paper 002, section 3, "soft negative samples") negates each training sentence with rules on
spaCy's parse and uses ``neg(s)`` as a soft negative. The rules here follow the paper and fix the
reference implementation's known bugs, with two departures from its rule 1 (which removes the first
``not``/``n't`` with dependency ``neg`` anywhere): ``never`` also counts as an existing negation, and only the main
clause's negation is removed (a negated subordinate clause leaves the main clause to rule 2, which negates it):

1. **Existing negation** (``remove-negation``): when the main clause carries ``not``, ``n't`` or
   ``never`` (dependency ``neg``), the first one is removed and contractions are repaired
   (``don't`` -> ``do``, ``can't`` -> ``can``, ``won't`` -> ``will``, ``isn't`` -> ``is``,
   ``cannot`` -> ``can``). The reference ignored ``n't`` and produced "do not n't".
2. **Otherwise the main clause** is negated; the reference took the first auxiliary anywhere, even in a
   subordinate clause ("Although I had not finished, he kept working"). Here only the ROOT's own
   auxiliaries count, scanned left to right together with the ROOT:

   - ``aux``: an auxiliary / passive auxiliary: "not" is inserted after it, except the passive "get", which is
     not an operator and takes do-support ("He got fired." -> "He did not get fired.");
   - ``be-modal``: a ROOT that is a form of *be* or a modal: "not" after it;
   - ``do-support``: a ROOT tagged VBZ / VBP / VBD becomes "does not" / "do not" / "did not" + lemma;
   - ``imperative``: a bare ROOT (VB) without a subject: "do not" before it ("not" after the "'s" of "Let's");
   - ``participle``: a ROOT participle (VBN/VBG) without an auxiliary: "not" before it;
   - ``aux-question`` / ``be-modal-question``: in a question the operator is contracted ("Did he go?"
     -> "Didn't he go?"), or, where English has no contraction ("am", "may"), "not" follows the
     subject;
   - a verbless ROOT (a noun phrase such as "A man playing a guitar.") negates its first verbal
     modifier or clause (``acl``/``relcl``/``ccomp``): "A man not playing a guitar."

3. **Fallback**, counted and reported (the reference silently produced "Not s ." on a lookup miss):
   ``fallback-not-true`` ("It is not true that ..." when the text has a finite verb the rules could
   not reach) or ``fallback-not`` ("Not ..." for verbless text).

A negative word of the clause that the parser does not take for its negation ("He is not only a singer", "It is found
not only in Peru", "He is no longer active"), a negative pronoun or determiner ("Nobody knows", "No one came") or a
negative adverb ("He hardly knows her") sends the sentence to the fallback instead of a doubled negation.

Known limits: "had better" and fronted-negation inversions are not special-cased; a tagger error (a verb tagged as a
noun) sends a sentence to the fallback.

The reference's own rules, bugs included, are the ``reference`` rule set
(:mod:`~sentsweep.methods.sncse.negation.reference`, chosen by an SNCSE trial's ``negation_rules``); these are
``project``, the default.

Outputs keep the sentence's own spacing and capitalisation (they are built from spaCy's
``text_with_ws``, never by joining tokens with spaces).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

#: Bump when a rule changes: cached negations made by older rules are then ignored.
RULES_VERSION = "3"
#: Negative words of a clause that the parser does not take for its negation ("not" in "not only", "no" in "no longer"):
#: a clause that holds one goes to the fallback, not to a doubled "not" ("is not not only").
_OTHER_NEGATIVES = frozenset({"not", "no", "never", "n't", "n’t"})
#: Negative pronouns and adverbs: one that belongs to the main verb itself (not to a conjunct) sends the sentence to
#: the fallback, not to a doubled negation ("Nobody does not know", "He hardly does not know her").
_NEGATIVE_WORDS = frozenset({"nobody", "nothing", "none", "neither", "nowhere", "hardly", "scarcely", "barely",
                             "rarely", "seldom"})
#: Every rule name :func:`negate_doc` can report, in the order they are tried.
RULES: tuple[str, ...] = (
    "remove-negation",
    "aux",
    "aux-question",
    "be-modal",
    "be-modal-question",
    "do-support",
    "imperative",
    "participle",
    "fallback-not-true",
    "fallback-not",
    "empty",
)
FALLBACK_RULES: frozenset[str] = frozenset({"fallback-not-true", "fallback-not"})

_NEGATORS = {"not", "n't", "n’t", "never"}
_CONTRACTED = {"n't", "n’t"}
#: The first half of a contraction and its full form ("ca|n't" -> "can").
_REPAIR = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
_BE = {"am", "is", "are", "was", "were", "be", "been", "being", "'s", "'re", "'m", "’s", "’re", "’m"}
#: Operators with a standard negative contraction (used in questions: "Is he" -> "Isn't he").
_CONTRACTION = {
    "do": "don't",
    "does": "doesn't",
    "did": "didn't",
    "is": "isn't",
    "are": "aren't",
    "was": "wasn't",
    "were": "weren't",
    "has": "hasn't",
    "have": "haven't",
    "had": "hadn't",
    "can": "can't",
    "could": "couldn't",
    "will": "won't",
    "would": "wouldn't",
    "should": "shouldn't",
    "must": "mustn't",
    "shall": "shan't",
    "need": "needn't",
}
_DO = {"VBZ": "does", "VBP": "do", "VBD": "did", "VB": "do"}
_SUBJECTS = {"nsubj", "nsubjpass", "expl", "csubj", "csubjpass"}
#: Dependencies that open a new clause: a negation below one of them is not the main clause's.
_CLAUSE_DEPS = {"advcl", "ccomp", "csubj", "csubjpass", "relcl", "acl", "xcomp", "pcomp", "parataxis"}
_FINITE = {"VBZ", "VBP", "VBD", "MD"}
_PROPER = {"NNP", "NNPS"}


@dataclass(frozen=True)
class Negation:
    """A negated sentence and the rule that produced it (one of :data:`RULES`)."""

    text: str
    rule: str

    @property
    def is_fallback(self) -> bool:
        return self.rule in FALLBACK_RULES


# --------------------------------------------------------------------------------------------------
# The rules, on one parsed Doc


def _match_case(template: str, word: str) -> str:
    """``word`` with the capitalisation of ``template`` (all caps, capitalised or as is)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _lower_first(token: Token) -> str:
    """The token's text with a lower-case first letter, unless it is a name, "I" or an acronym."""
    text = token.text
    if token.tag_ in _PROPER or text == "I" or (len(text) > 1 and text[:2].isupper()):
        return text
    return text[:1].lower() + text[1:]


class _Edit:
    """Token-level edits rendered back onto the original text and spacing."""

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.text: dict[int, str] = {}
        self.space: dict[int, str] = {}
        self.before: dict[int, str] = {}
        self.dropped: set[int] = set()

    def render(self) -> str:
        """The text with the edits: ``doc.text`` is every token's text and whitespace in order, so only the
        edited tokens' spans are rebuilt (no walk over the whole sentence's tokens)."""
        text, doc = self.doc.text, self.doc
        parts, at = [], 0
        for i in sorted(self.text.keys() | self.space.keys() | self.before.keys() | self.dropped):
            tok = doc[i]
            parts += (text[at : tok.idx], self.before.get(i, ""))
            if i not in self.dropped:
                parts += (self.text.get(i, tok.text), self.space.get(i, tok.whitespace_))
            at = tok.idx + len(tok.text_with_ws)
        parts.append(text[at:])
        return "".join(parts)

    def insert_after(self, tok: Token, word: str = "not") -> None:
        self.text[tok.i] = f"{self.text.get(tok.i, tok.text)} {word}"

    def insert_before(self, tok: Token, words: str) -> None:
        """``words`` before ``tok``; at a sentence start the capital moves to the inserted words."""
        if tok.is_sent_start and tok.text[:1].isupper():
            words = words[:1].upper() + words[1:]
            self.text[tok.i] = _lower_first(tok)
        self.before[tok.i] = words + " "


def _clause_head(tok: Token) -> Token:
    """The head of the clause ``tok`` belongs to (conjuncts share their first conjunct's clause)."""
    while tok.dep_ not in _CLAUSE_DEPS and tok.head.i != tok.i:
        tok = tok.head
    return tok


def _governed_by(tok: Token, head: Token) -> bool:
    """Whether ``tok`` hangs from ``head`` through no conjunct and no other clause ("None of them" in "None of them
    came" does; "seldom" in "..., and it was seldom applied" does not)."""
    while tok.i != head.i:
        if tok.dep_ == "conj" or tok.dep_ in _CLAUSE_DEPS or tok.head.i == tok.i:
            return False
        tok = tok.head
    return True


def _is_unsplit_nt(tok: Token) -> bool:
    """A contraction the tokenizer left whole, such as "WON'T" (spaCy splits "won't" but not all caps)."""
    lower = tok.lower_
    return len(lower) > 3 and lower[-3:] in _CONTRACTED and lower[:-3].isalpha()


def _remove_negation(doc: Doc, neg: Token) -> str:
    """The text without ``neg`` ("not", "n't", "never"), contractions repaired, spacing kept."""
    edit = _Edit(doc)
    if _is_unsplit_nt(neg):
        base = neg.text[:-3]
        edit.text[neg.i] = _match_case(base, _REPAIR.get(base.lower(), base.lower()))
        return edit.render()
    edit.dropped.add(neg.i)
    if neg.i > neg.sent.start:
        prev = doc[neg.i - 1]
        edit.space[prev.i] = neg.whitespace_
        if neg.lower_ in _CONTRACTED and prev.lower_ in _REPAIR:
            full = _REPAIR[prev.lower_]
            if prev.lower_ == "ai":  # "ain't": the form of "be" that agrees with the subject
                subject = doc[prev.i - 1].lower_ if prev.i > prev.sent.start else ""
                full = "am" if subject == "i" else "are" if subject in ("you", "we", "they") else "is"
            edit.text[prev.i] = _match_case(prev.text, full)
    elif neg.text[:1].isupper() and neg.i + 1 < len(doc):
        nxt = doc[neg.i + 1]
        edit.text[nxt.i] = nxt.text[:1].upper() + nxt.text[1:]
    return edit.render()


def _is_question(head: Token) -> bool:
    return head.sent.text.rstrip().endswith("?")


def _subject_after(head: Token, operator: Token) -> Token | None:
    """The subject of ``head`` when it follows ``operator`` (subject-auxiliary inversion)."""
    for child in head.children:
        if child.dep_ in _SUBJECTS and child.i > operator.i:
            return child
    return None


def _negate_operator(doc: Doc, head: Token, operator: Token, rule: str) -> Negation:
    """Insert "not" after an auxiliary, copula or modal (contracted or after the subject in questions)."""
    edit = _Edit(doc)
    subject = _subject_after(head, operator) if _is_question(head) else None
    if subject is not None:
        contracted = _CONTRACTION.get(operator.lower_)
        if contracted is not None:
            edit.text[operator.i] = _match_case(operator.text, contracted)
        else:
            edit.insert_after(subject.right_edge)
        return Negation(edit.render(), f"{rule}-question")
    if operator.tag_ == "TO":
        edit.insert_before(operator, "not")
    else:
        edit.insert_after(operator)
    return Negation(edit.render(), rule)


def _do_support(doc: Doc, verb: Token, lemmatize: Callable[[Token], str]) -> Negation:
    """``verb`` (VBZ / VBP / VBD / VB) as "does not" / "do not" / "did not" + its lemma."""
    edit = _Edit(doc)
    do = _DO[verb.tag_]
    if verb.is_sent_start and verb.text[:1].isupper():
        do = do.capitalize()
    edit.text[verb.i] = f"{do} not {lemmatize(verb)}"
    return Negation(edit.render(), "do-support")


def _negate_clause(doc: Doc, head: Token, lemmatize: Callable[[Token], str]) -> Negation | None:
    """Negate the clause headed by ``head``; None when no rule applies."""
    for tok in head.subtree:
        negator = (tok.dep_ == "neg" and tok.lower_ in _NEGATORS) or _is_unsplit_nt(tok)
        if negator and _clause_head(tok) == head:
            return Negation(_remove_negation(doc, tok), "remove-negation")
    if any(tok.lower_ in _OTHER_NEGATIVES and _clause_head(tok) == head for tok in head.subtree):
        return None  # "is (found) not only", "is no longer": a "not" would double it; the fallback negates
    if any(tok.lower_ in _NEGATIVE_WORDS and _governed_by(tok, head) for tok in head.subtree):
        return None  # "Nobody knows", "He hardly knows her": the fallback negates
    auxiliaries = [c for c in head.children if c.dep_ in ("aux", "auxpass") and c.i < head.i]
    if auxiliaries and auxiliaries[0].tag_ in _DO and lemmatize(auxiliaries[0]) == "get":
        return _do_support(doc, auxiliaries[0], lemmatize)  # "got fired" -> "did not get fired"
    if auxiliaries:
        return _negate_operator(doc, head, auxiliaries[0], "aux")
    tag = head.tag_
    has_subject = any(c.dep_ in _SUBJECTS for c in head.children)
    if head.lower_ in _BE and tag == "VB" and not has_subject:
        edit = _Edit(doc)
        edit.insert_before(head, "do not")  # "Be careful." -> "Do not be careful."
        return Negation(edit.render(), "imperative")
    if head.lower_ in _BE or tag == "MD":
        return _negate_operator(doc, head, head, "be-modal")
    if tag in ("VBZ", "VBP", "VBD") or (tag == "VB" and has_subject):
        return _do_support(doc, head, lemmatize)
    if tag == "VB":
        edit = _Edit(doc)
        after = doc[head.i + 1] if head.i + 1 < len(doc) else None
        if head.lower_ == "let" and after is not None and after.lower_ in ("'s", "’s"):
            edit.insert_after(after)  # "Let's go." -> "Let's not go."
        else:
            edit.insert_before(head, "do not")
        return Negation(edit.render(), "imperative")
    if tag in ("VBN", "VBG"):
        edit = _Edit(doc)
        edit.insert_before(head, "not")
        return Negation(edit.render(), "participle")
    for child in head.children:  # a verbless head: negate its first verbal clause
        if child.dep_ in ("acl", "relcl", "ccomp") and child.tag_.startswith(("VB", "MD")):
            return _negate_clause(doc, child, lemmatize)
    return None


def _fallback(doc: Doc) -> Negation:
    first = doc[0]
    rest = doc.text[len(first.text) :]
    if any(tok.tag_ in _FINITE for tok in doc):
        return Negation(f"It is not true that {_lower_first(first)}{rest}", "fallback-not-true")
    return Negation(f"Not {_lower_first(first)}{rest}", "fallback-not")


def _main_root(doc: Doc) -> Token:
    """The ROOT of the first (spaCy) sentence headed by a verb, else of the first sentence."""
    roots = [sent.root for sent in doc.sents]
    for root in roots:
        if root.tag_.startswith("VB") or root.tag_ == "MD":
            return root
    return roots[0]


def parsed_lemma(token: Token) -> str:
    """The lemma spaCy set on the token (lower-cased), else its lower-cased text."""
    return (token.lemma_ or token.text).lower()


def negate_doc(doc: Doc, lemmatize: Callable[[Token], str] = parsed_lemma) -> Negation:
    """The explicit negation of a parsed sentence (see the module docstring for the rules)."""
    if not doc.text.strip() or len(doc) == 0:
        return Negation(doc.text, "empty")
    root = _main_root(doc)
    result = _negate_clause(doc, root, lemmatize)
    return result if result is not None else _fallback(doc)
