"""The ``reference`` rule set: the SNCSE repository's negation rules and training lookup, bug for bug, and a cache
that never mixes rule sets.

Expected outputs are what ``convert_to_negation`` of Sense-GVT/SNCSE ``generate_soft_negative_samples.py`` and the
lookup of ``SNCSE/train_SNCSE.py`` give: token texts joined by single spaces.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentsweep.errors import ConfigError
from sentsweep.methods.sncse.negation import (
    RULE_SETS,
    Negator,
    cache_file,
    negate_corpus,
    reference,
    rule_set,
)
from sentsweep.methods.sncse.negation import rules as rules_module

# (sentence, the reference's soft negative, rule)
CASES: list[tuple[str, str, str]] = [
    # 1. the first token "not" anywhere is deleted (not "n't", not "Not")
    ("I do not like it.", "I do like it .", reference.REMOVE_NOT),
    ("She cannot swim.", "She can swim .", reference.REMOVE_NOT),
    ("Although he did not win, he is not sad.", "Although he did win , he is not sad .", reference.REMOVE_NOT),
    # 2a. the first aux/auxpass anywhere, before the ROOT: " not" after it
    ("He can swim.", "He can not swim .", reference.AUX),
    ("Although I had finished, he kept working.", "Although I had not finished , he kept working .",
     reference.AUX),
    ("I don't like it.", "I do not n't like it .", reference.AUX),  # the "do not n't" bug
    ("The house was built in 1900.", "The house was not built in 1900 .", reference.AUX),
    # 2b. the ROOT first: a special word takes " not" after it
    ("There is a problem.", "There is not a problem .", reference.ROOT_SPECIAL),
    ("They were happy.", "They were not happy .", reference.ROOT_SPECIAL),
    # 2b. the ROOT first, VBP / VBZ / VBD: do-support with spaCy's lemma, even before a later aux
    ("The cat sat on the mat.", "The cat did not sit on the mat .", reference.ROOT_DO),
    ("He said that he would go.", "He did not say that he would go .", reference.ROOT_DO),
    ("He goes to school.", "He does not go to school .", reference.ROOT_DO),
    ("He's happy.", "He does not be happy .", reference.ROOT_DO),  # "'s" is not a special word
    # 2b / 3. any other ROOT: "Not" first
    ("A man playing a guitar.", "Not A man playing a guitar .", reference.NOT_PREFIX),
    ("Open the door.", "Not Open the door .", reference.NOT_PREFIX),
    ("Not bad at all.", "Not Not bad at all .", reference.NOT_PREFIX),
    # the training lookup: a sentence without final punctuation (or with surrounding spaces) is no key
    ("The cat sat on the mat", "Not The cat sat on the mat .", reference.LOOKUP_MISS),
    ("He is not here", "Not He is not here .", reference.LOOKUP_MISS),
    (" He can swim.", "Not  He can swim.", reference.LOOKUP_MISS),
    ("", "", "empty"),
]


@pytest.fixture(scope="module")
def reference_negator() -> Negator:
    """The reference rule set on the full spaCy pipeline (its lemmatizer runs); skips without a pipeline."""
    pytest.importorskip("spacy")
    try:
        negator = Negator(rules="reference")
        negator.nlp  # noqa: B018 - load once for the module
    except ConfigError as exc:
        pytest.skip(str(exc))
    return negator


def test_cases_cover_every_reference_rule() -> None:
    assert {rule for _, _, rule in CASES} == set(reference.RULES)
    assert set(reference.RULES) >= reference.FALLBACK_RULES


def test_reference_rules_give_the_reference_outputs(reference_negator: Negator) -> None:
    got = reference_negator.negate([s for s, _, _ in CASES])
    assert [(n.text, n.rule) for n in got] == [(e, r) for _, e, r in CASES]
    assert reference_negator("He can swim.") == "He can not swim ."


def test_the_reference_loads_the_full_pipeline_and_refuses_one_without_lemmas(reference_negator: Negator,
                                                                              negator: Negator) -> None:
    assert "lemmatizer" in reference_negator.nlp.pipe_names
    with pytest.raises(ValueError, match="lemmatizer"):
        Negator(nlp=negator.nlp, rules="reference")


def test_a_lookup_miss_is_decided_without_parsing() -> None:
    class Unparsed(Negator):
        @property
        def nlp(self):  # type: ignore[override]
            raise AssertionError("parsed a lookup miss")

    out = Unparsed(rules="reference").negate(["no final punctuation", "a b c\u2019"])
    assert [n.text for n in out] == ["Not no final punctuation .", "Not a b c\u2019 ."]  # only ASCII punctuation


def test_an_unknown_rule_set_names_the_field() -> None:
    for make in (lambda: rule_set("paper"), lambda: Negator(rules="paper")):
        with pytest.raises(ConfigError) as info:
            make()
        assert info.value.field == "negation_rules"
        assert "project" in str(info.value) and "reference" in str(info.value)


def test_stats_and_metrics_follow_the_rule_set(reference_negator: Negator, tmp_path: Path) -> None:
    sentences = ["He can swim.", "Open the door.", "no punctuation"]
    negations, stats = negate_corpus(sentences, negator=reference_negator, cache_root=tmp_path)
    assert negations == ["He can not swim .", "Not Open the door .", "Not no punctuation ."]
    assert stats.rules == "reference" and stats.rules_version == reference.RULES_VERSION
    assert stats.counts == {reference.AUX: 1, reference.NOT_PREFIX: 1, reference.LOOKUP_MISS: 1}
    assert stats.fallback == 2
    metrics = stats.as_metrics()
    assert metrics["negation_ref_lookup_miss"] == 1.0 and metrics["negation_ref_root_do"] == 0.0
    assert "negation_do_support" not in metrics  # no project rule in a reference row's histogram
    assert "reference rules" in stats.table()


def test_the_cache_never_serves_one_rule_set_to_the_other(negator: Negator, reference_negator: Negator,
                                                          tmp_path: Path) -> None:
    sentences = ["The cat sat on the mat.", "I don't like it."]
    project, p_stats = negate_corpus(sentences, negator=negator, cache_root=tmp_path)
    ref, r_stats = negate_corpus(sentences, negator=reference_negator, cache_root=tmp_path)
    assert project == ["The cat did not sit on the mat.", "I do like it."]
    assert ref == ["The cat did not sit on the mat .", "I do not n't like it ."]
    assert not r_stats.cache_hit and r_stats.cache_path != p_stats.cache_path
    assert Path(r_stats.cache_path or "").name.endswith("-reference-rules1.jsonl")
    header = json.loads(Path(r_stats.cache_path or "").read_text().splitlines()[0])
    assert header["rules"] == "reference" and header["rules_version"] == reference.RULES_VERSION
    # each set hits its own file
    assert negate_corpus(sentences, negator=negator, cache_root=tmp_path)[1].cache_hit
    assert negate_corpus(sentences, negator=reference_negator, cache_root=tmp_path)[1].cache_hit
    # a file whose header names the other set is a miss, even under the project's name
    project_path = Path(p_stats.cache_path or "")
    project_path.write_text(Path(r_stats.cache_path or "").read_text())
    again, stats = negate_corpus(sentences, negator=negator, cache_root=tmp_path)
    assert again == project and not stats.cache_hit
    # a file written before the option (no rule set in its header) is the project's
    lines = project_path.read_text().splitlines()
    old = {k: v for k, v in json.loads(lines[0]).items() if k != "rules"}
    project_path.write_text("\n".join([json.dumps(old), *lines[1:]]) + "\n")
    assert negate_corpus(sentences, negator=negator, cache_root=tmp_path)[1].cache_hit


def test_cache_keys_differ_by_rule_set_and_follow_each_version(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    key = {name: cache_file(["a"], "m-1", tmp_path, name) for name in RULE_SETS}
    assert key["project"] == cache_file(["a"], "m-1", tmp_path)  # the default, named as before the option
    assert key["project"].name.endswith(f"-rules{rules_module.RULES_VERSION}.jsonl")
    assert key["project"] != key["reference"]
    monkeypatch.setattr(reference, "RULES_VERSION", "2")
    assert cache_file(["a"], "m-1", tmp_path, "reference") != key["reference"]
    assert cache_file(["a"], "m-1", tmp_path, "project") == key["project"]
    monkeypatch.setattr(rules_module, "RULES_VERSION", "7")
    assert cache_file(["a"], "m-1", tmp_path, "project").name.endswith("-rules7.jsonl")
