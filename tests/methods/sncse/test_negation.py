"""The negation rules on 80+ sentences with expected outputs, batching, statistics and the disk cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentsweep.errors import ConfigError
from sentsweep.methods.sncse.negation import (
    FALLBACK_RULES,
    RULES,
    Negator,
    cache_file,
    negate_corpus,
    write_pairs,
)
from sentsweep.methods.sncse.negation import rules as rules_module

# (sentence, expected negation, rule)
CASES: list[tuple[str, str, str]] = [
    # copulas
    ("He is a doctor.", "He is not a doctor.", "be-modal"),
    ("She was tired", "She was not tired", "be-modal"),
    ("They are happy.", "They are not happy.", "be-modal"),
    ("I am hungry.", "I am not hungry.", "be-modal"),
    ("You were right.", "You were not right.", "be-modal"),
    ("I'm happy.", "I'm not happy.", "be-modal"),
    ("There is a problem.", "There is not a problem.", "be-modal"),
    (
        "Anarchism is a political philosophy that advocates self-governed societies.",
        "Anarchism is not a political philosophy that advocates self-governed societies.",
        "be-modal",
    ),
    # modals
    ("He can swim.", "He can not swim.", "aux"),
    ("She could have won.", "She could not have won.", "aux"),
    ("We will go tomorrow.", "We will not go tomorrow.", "aux"),
    ("You should leave.", "You should not leave.", "aux"),
    ("It may rain.", "It may not rain.", "aux"),
    ("He must be joking.", "He must not be joking.", "aux"),
    ("She might come.", "She might not come.", "aux"),
    # auxiliaries (perfect, progressive, contracted)
    ("He's going home.", "He's not going home.", "aux"),
    ("They've arrived.", "They've not arrived.", "aux"),
    ("She has finished her work.", "She has not finished her work.", "aux"),
    ("He had left before we arrived.", "He had not left before we arrived.", "aux"),
    ("They have been working all day.", "They have not been working all day.", "aux"),
    ("He will have been working for ten years.", "He will not have been working for ten years.", "aux"),
    ("They are going to win.", "They are not going to win.", "aux"),
    ("A woman is slicing an onion.", "A woman is not slicing an onion.", "aux"),
    # do-support in each tense and person
    ("He goes to school every day.", "He does not go to school every day.", "do-support"),
    ("They play football.", "They do not play football.", "do-support"),
    ("I like apples.", "I do not like apples.", "do-support"),
    ("She played the piano.", "She did not play the piano.", "do-support"),
    ("The cat sat on the mat.", "The cat did not sit on the mat.", "do-support"),
    ("He has a car.", "He does not have a car.", "do-support"),
    ("They had a meeting.", "They did not have a meeting.", "do-support"),
    ("He did his homework.", "He did not do his homework.", "do-support"),
    ("He had to leave.", "He did not have to leave.", "do-support"),
    # the passive "get" is not an operator: do-support, never "got not fired"
    ("He got fired.", "He did not get fired.", "do-support"),
    ("They get paid every week.", "They do not get paid every week.", "do-support"),
    # "Let's" keeps its contraction: "Let's not go", never "Do not let's go"
    ("Let's go to the beach.", "Let's not go to the beach.", "imperative"),
    ("Let us pray.", "Do not let us pray.", "imperative"),
    ("NASA launched a rocket.", "NASA did not launch a rocket.", "do-support"),
    # a VBP verb is its own base form (the rule lemmatizer without morphology would say "addres")
    (
        "Few high-quality studies address long-term prognosis.",
        "Few high-quality studies do not address long-term prognosis.",
        "do-support",
    ),
    # passives
    ("The book was written by him.", "The book was not written by him.", "aux"),
    ("The house is being built.", "The house is not being built.", "aux"),
    ("The letters were sent yesterday.", "The letters were not sent yesterday.", "aux"),
    ("He is considered one of the best players.", "He is not considered one of the best players.", "aux"),
    ("I was born in 1980.", "I was not born in 1980.", "aux"),
    # existing not / n't / never, contractions repaired
    ("I don't like it.", "I do like it.", "remove-negation"),
    ("He doesn't care.", "He does care.", "remove-negation"),
    ("They didn't win.", "They did win.", "remove-negation"),
    ("He can't swim.", "He can swim.", "remove-negation"),
    ("She won't go.", "She will go.", "remove-negation"),
    ("It isn't true.", "It is true.", "remove-negation"),
    ("They aren't here.", "They are here.", "remove-negation"),
    ("He wasn't there.", "He was there.", "remove-negation"),
    ("I haven't seen it.", "I have seen it.", "remove-negation"),
    ("You shouldn't have done that.", "You should have done that.", "remove-negation"),
    ("He cannot swim.", "He can swim.", "remove-negation"),
    ("It is not true.", "It is true.", "remove-negation"),
    (
        "The results, however, were not conclusive.",
        "The results, however, were conclusive.",
        "remove-negation",
    ),
    ("He has never been there.", "He has been there.", "remove-negation"),
    ("Don't touch that.", "Do touch that.", "remove-negation"),
    ("It WON'T work.", "It WILL work.", "remove-negation"),
    ("I ain't going.", "I am going.", "remove-negation"),
    ("He came but didn't stay.", "He came but did stay.", "remove-negation"),
    # subordinate clauses: the main clause is negated
    ("When he arrived, she was sleeping.", "When he arrived, she was not sleeping.", "aux"),
    (
        "Although I had finished, he kept working.",
        "Although I had finished, he did not keep working.",
        "do-support",
    ),
    ("I think that he is wrong.", "I do not think that he is wrong.", "do-support"),
    ("He said that he wasn't there.", "He did not say that he wasn't there.", "do-support"),
    ("The man who is tall left the room.", "The man who is tall did not leave the room.", "do-support"),
    ("If it rains, we will stay home.", "If it rains, we will not stay home.", "aux"),
    (
        "In 1990 he moved to Paris, where he died in 2000.",
        "In 1990 he did not move to Paris, where he died in 2000.",
        "do-support",
    ),
    (
        "Founded in 1900, the company grew quickly.",
        "Founded in 1900, the company did not grow quickly.",
        "do-support",
    ),
    ("He sings and she dances.", "He does not sing and she dances.", "do-support"),
    # questions
    ("Did he go?", "Didn't he go?", "aux-question"),
    ("Is he here?", "Isn't he here?", "be-modal-question"),
    ("Can you help me?", "Can't you help me?", "aux-question"),
    ("Where did he go?", "Where didn't he go?", "aux-question"),
    ("Have you finished?", "Haven't you finished?", "aux-question"),
    ("Are they coming?", "Aren't they coming?", "aux-question"),
    ("Am I late?", "Am I not late?", "be-modal-question"),
    ("May I come in?", "May I not come in?", "aux-question"),
    ("Is there a problem?", "Isn't there a problem?", "be-modal-question"),
    ("Who wrote this book?", "Who did not write this book?", "do-support"),
    ("Why don't you come?", "Why do you come?", "remove-negation"),
    ("Can't you see?", "Can you see?", "remove-negation"),
    # imperatives
    ("Open the door.", "Do not open the door.", "imperative"),
    ("Please close the window.", "Please do not close the window.", "imperative"),
    ("Be careful.", "Do not be careful.", "imperative"),
    ("If you see him, tell him.", "If you see him, do not tell him.", "imperative"),
    # no finite verb
    ("A man playing a guitar.", "A man not playing a guitar.", "participle"),
    ("A dog running in the field.", "A dog not running in the field.", "participle"),
    ("The company, founded in 1900.", "The company, not founded in 1900.", "participle"),
    ("The end.", "Not the end.", "fallback-not"),
    ("Two women in a kitchen.", "Not two women in a kitchen.", "fallback-not"),
    # a parse the rules cannot reach (the small model attaches "united" as a modifier): a clear fallback
    (
        'In 1864 the International Workingmen\'s Association (sometimes called the "First International") '
        "united diverse revolutionary currents.",
        "It is not true that in 1864 the International Workingmen's Association (sometimes called the "
        '"First International") united diverse revolutionary currents.',
        "fallback-not-true",
    ),
    # a mis-parsed noun root whose copula hangs below it as a clause: that clause is negated
    (
        "The individualist anarchist George MacDonald was a co-editor of Freethought and, for a time, "
        "The Truth Seeker.",
        "The individualist anarchist George MacDonald was not a co-editor of Freethought and, for a time, "
        "The Truth Seeker.",
        "be-modal",
    ),
    # a negative word the parser does not take for the clause's negation right after the operator: no doubled "not"
    ("He is not only a singer but also an actor.",
     "It is not true that he is not only a singer but also an actor.", "fallback-not-true"),
    ("He is no longer active.", "It is not true that he is no longer active.", "fallback-not-true"),
    # negative pronouns and adverbs: the fallback, never a doubled negation ("Nobody does not know")
    ("Nobody knows.", "It is not true that nobody knows.", "fallback-not-true"),
    ("Nothing happened.", "It is not true that nothing happened.", "fallback-not-true"),
    ("He hardly knows her.", "It is not true that he hardly knows her.", "fallback-not-true"),
    ("There is nothing here.", "It is not true that there is nothing here.", "fallback-not-true"),
    ("None of them are members.", "It is not true that none of them are members.", "fallback-not-true"),
    # a negative word of a conjunct or a subordinate clause leaves the main verb to the rules
    ("Autonomous states were tolerated, and the authority was seldom applied.",
     "Autonomous states were not tolerated, and the authority was seldom applied.", "aux"),
    ("He said that nobody came.", "He did not say that nobody came.", "do-support"),
    ("The species is found not only in Peru but also in Chile.",
     "It is not true that the species is found not only in Peru but also in Chile.", "fallback-not-true"),
    ("Isn't he not only a singer?", "Is he not only a singer?", "remove-negation"),  # its own negation goes
    # the sentence's own spacing survives
    ("  Two  spaces   here is fine.", "  Two  spaces   here is not fine.", "be-modal"),
    ("", "", "empty"),
]


def test_at_least_sixty_cases_covering_every_rule() -> None:
    assert len(CASES) >= 60
    covered = {rule for _, _, rule in CASES}
    assert covered == set(RULES)


@pytest.mark.parametrize(("sentence", "expected", "rule"), CASES, ids=[c[0][:40] or "empty" for c in CASES])
def test_negation_rules(negator: Negator, sentence: str, expected: str, rule: str) -> None:
    result = negator.negate_doc(negator.nlp(sentence))
    assert (result.text, result.rule) == (expected, rule)


def test_batched_pipe_equals_one_by_one(negator: Negator) -> None:
    sentences = [s for s, _, _ in CASES]
    batched = Negator(nlp=negator.nlp, batch_size=7).negate(sentences)
    assert [n.text for n in batched] == [e for _, e, _ in CASES]
    assert [negator(s) for s in sentences[:10]] == [e for _, e, _ in CASES[:10]]


def test_render_rebuilds_only_edited_tokens_as_a_walk_over_every_token(negator: Negator) -> None:
    """The edit renderer splices the edited tokens into ``doc.text``; the result equals rebuilding the text
    token by token (its former definition) for edits at the start, middle and end, drops and spacing."""
    doc = negator.nlp("  Anarchism  is a philosophy, isn't it ?")

    def walked(edit: rules_module._Edit) -> str:
        parts = []
        for tok in doc:
            parts.append(edit.before.get(tok.i, ""))
            if tok.i not in edit.dropped:
                parts += [edit.text.get(tok.i, tok.text), edit.space.get(tok.i, tok.whitespace_)]
        return "".join(parts)

    last = len(doc) - 1
    for text, space, before, dropped in [
        ({}, {}, {}, set()),
        ({0: "X"}, {}, {1: "not"}, set()),
        ({2: "was not"}, {3: ""}, {}, {4}),
        ({last: "!"}, {last - 1: "  "}, {last: "do "}, {0, 1}),
        ({}, {}, {}, set(range(len(doc)))),
    ]:
        edit = rules_module._Edit(doc)
        edit.text, edit.space, edit.before, edit.dropped = dict(text), dict(space), dict(before), set(dropped)
        assert edit.render() == walked(edit)


def test_duplicates_are_parsed_once_and_progress_counts_every_distinct_sentence(negator: Negator) -> None:
    seen: list[int] = []
    out = Negator(nlp=negator.nlp, batch_size=2).negate(
        ["He can swim.", "He can swim.", "I like it."], seen.append
    )
    assert [n.text for n in out] == ["He can not swim.", "He can not swim.", "I do not like it."]
    assert sum(seen) == 3


def test_negate_corpus_stats_and_cache_hit(negator: Negator, tmp_path: Path) -> None:
    sentences = ["He is a doctor.", "The end.", "I don't like it.", "Open the door."]
    first, stats = negate_corpus(sentences, negator=negator, cache_root=tmp_path)
    assert first == ["He is not a doctor.", "Not the end.", "I do like it.", "Do not open the door."]
    assert not stats.cache_hit and stats.total == 4
    assert stats.counts == {"be-modal": 1, "fallback-not": 1, "remove-negation": 1, "imperative": 1}
    assert stats.fallback == 1 and stats.fallback_share == pytest.approx(0.25)
    metrics = stats.as_metrics()
    assert metrics["negation_fallback_share"] == pytest.approx(0.25)
    assert metrics["negation_be_modal"] == 1.0
    assert "fallback" in stats.table()

    # the second call never parses: a negator whose pipeline would fail proves it
    class Exploding(Negator):
        def pipe(self, sentences):  # type: ignore[override]
            raise AssertionError("parsed on a cache hit")

    again, hit = negate_corpus(sentences, negator=Exploding(nlp=negator.nlp), cache_root=tmp_path)
    assert again == first and hit.cache_hit and hit.counts == stats.counts
    path = Path(hit.cache_path or "")
    assert path.parent == tmp_path / "negations"
    header = json.loads(path.read_text().splitlines()[0])
    assert header == {"n": 4, "model": negator.model_id, "rules": "project",
                      "rules_version": rules_module.RULES_VERSION}


def test_cache_key_changes_with_content_model_and_rules(
    negator: Negator, tmp_path: Path, monkeypatch
) -> None:
    a = cache_file(["a b", "c"], "en_core_web_sm-3.8.0", tmp_path)
    assert cache_file(["a b", "c"], "en_core_web_sm-3.8.0", tmp_path) == a
    assert cache_file(["a", "b c"], "en_core_web_sm-3.8.0", tmp_path) != a  # same text, other sentences
    assert cache_file(["a b", "c"], "en_core_web_sm-3.7.1", tmp_path) != a
    monkeypatch.setattr(rules_module, "RULES_VERSION", "999")  # the module the cache key reads
    assert cache_file(["a b", "c"], "en_core_web_sm-3.8.0", tmp_path) != a


def test_default_cache_root_comes_from_config(negator: Negator, _private_cache: Path) -> None:
    _, stats = negate_corpus(["He can swim."], negator=negator)
    assert Path(stats.cache_path or "").is_relative_to(_private_cache)


def test_a_corrupt_cache_file_is_recomputed(negator: Negator, tmp_path: Path) -> None:
    sentences = ["He can swim."]
    path = cache_file(sentences, negator.model_id, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("not json\n")
    out, stats = negate_corpus(sentences, negator=negator, cache_root=tmp_path)
    assert out == ["He can not swim."] and not stats.cache_hit


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        Negator(batch_size=0)
    assert info.value.field == "negation_batch_size"


def test_trimmed_pipeline_runs_only_what_the_rules_need(negator: Negator) -> None:
    assert negator.nlp.pipe_names == ["tok2vec", "tagger", "parser"]
    assert "ner" not in negator.nlp.component_names
    assert negator.lemmatize(negator.nlp("He went home.")[1]) == "go"


def test_fallback_rules_are_rules() -> None:
    assert set(FALLBACK_RULES) <= set(RULES)


def test_write_pairs(tmp_path: Path) -> None:
    path = write_pairs(tmp_path / "out" / "pairs.tsv", ["a\tb", "c"], ["not a b", "not\nc"])
    assert path.read_text().splitlines() == ["a b\tnot a b", "c\tnot c"]
