"""The MTEB backend against ours: MTEB's own STS code on the local files (custom AbsTaskSTS tasks, no hub).

Skipped when mteb is not installed (the optional ``sentsweep[mteb]`` extra)."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from sentsweep.data import SAMPLE_DIR
from sentsweep.evaluation.sts import STS_TASKS, evaluate_sts

pytest.importorskip("mteb", reason="the optional extra sentsweep[mteb] is not installed")

from sentsweep.evaluation.mteb_backend import LOCAL_TASKS, evaluate_mteb  # noqa: E402


class WeightedHashingEmbedder:
    """Bag of words with a real-valued weight per word (crc32-derived): cosines rarely tie, so MTEB's float32
    cosine and our float64 one rank the pairs almost alike (integer bags tie often; float noise breaks ties)."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    def encode(self, sentences: list[str]) -> np.ndarray:
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            for word in re.findall(r"\w+", sentence.lower()):
                h = zlib.crc32(word.encode("utf-8"))
                out[i, h % self.dim] += 0.5 + (h >> 8) % 1000 / 1000.0
        out[:, 0] += 1e-3
        return out


def test_mteb_equals_ours_on_the_seven_sets_of_the_sample() -> None:
    embedder = WeightedHashingEmbedder()
    ours = evaluate_sts(embedder, STS_TASKS, SAMPLE_DIR)
    theirs = evaluate_mteb(embedder, "sts", SAMPLE_DIR)
    keys = {"sts12_all", "sts13_all", "sts14_all", "sts15_all", "sts16_all", "stsb_test", "sickr_test"}
    assert set(theirs.metrics) == keys == set(theirs.table["task"])
    for key in keys:
        assert theirs[key] == pytest.approx(ours[key], abs=0.01), key  # the tolerance
    assert theirs.info["backend"].startswith("mteb 2.26")


def test_local_task_names_follow_ours() -> None:
    assert set(LOCAL_TASKS) == set(STS_TASKS)


def test_stsb_dev_and_test_are_two_tasks_and_the_split_names_stay_local() -> None:
    """``stsb`` is STS-B dev and test, as for our backend: both figures, each its own."""
    embedder = WeightedHashingEmbedder()
    ours = evaluate_sts(embedder, "stsb", SAMPLE_DIR)
    theirs = evaluate_mteb(embedder, "stsb", SAMPLE_DIR)
    assert set(theirs.metrics) == {"stsb_dev", "stsb_test"} == set(ours.metrics)
    for key in ("stsb_dev", "stsb_test"):
        assert theirs[key] == pytest.approx(ours[key], abs=0.01), key
    named = evaluate_mteb(embedder, "stsb_dev,sickr_test", SAMPLE_DIR)
    assert set(named.metrics) == {"stsb_dev", "sickr_test"}
    assert named["stsb_dev"] == pytest.approx(ours["stsb_dev"], abs=0.01)


@pytest.mark.slow
def test_mteb_equals_ours_on_minilm(shared_data, minilm_path) -> None:
    """The issue's check: MiniLM (mean pooling), STS-B test and SICK-R test, MTEB's main score vs ours <= 0.01."""
    from sentsweep.trainables.registry import load_encoder

    encoder = load_encoder("minilm", device="cpu")
    ours = evaluate_sts(encoder, "stsb_test,sickr_test", shared_data)
    theirs = evaluate_mteb(encoder, "stsb,sickr", shared_data)
    assert abs(theirs["stsb_test"] - ours["stsb_test"]) <= 0.01
    assert abs(theirs["sickr_test"] - ours["sickr_test"]) <= 0.01
    assert ours["stsb_test"] == pytest.approx(82.03, abs=0.01)
