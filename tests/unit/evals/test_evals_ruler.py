"""RULER-style tasks: every family fits the target length in the checkpoint's own tokens, the
expected answers are really in the context, scoring is RULER's string_match_all, and a run
reports per family (tiny model: scores near 0, as they should be)."""

from __future__ import annotations

import re

import pytest

from surrogate_dagster.evals.harness import ruler
from surrogate_dagster.inference import ModelRef, TransformersInference
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from tests.support.scripted_model import ScriptedModel


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TransformersInference(ModelRef("tiny", str(build_tiny_qwen2(tmp_path_factory.mktemp("m")))), batch_size=8)


@pytest.mark.parametrize("family", ruler.FAMILIES)
def test_family_fits_length_and_contains_its_answers(client, family):
    s = ruler.make_sample(client, family, 1200, 0, 2, seed=0)
    assert s.prompt_tokens <= 1200 - ruler.GEN_TOKENS[family]
    assert s.prompt_tokens >= 0.8 * (1200 - ruler.GEN_TOKENS[family])  # the haystack fills the budget
    text = s.request.messages[0]["content"]
    for e in s.expected:
        assert e in text
    if family == "cwe":  # the expected words are really the 10 most frequent
        words = re.findall(r"\d+\. (\w+)", text)
        top = sorted(set(words), key=lambda w: -words.count(w))[:10]
        assert sorted(top) == sorted(s.expected)
    again = ruler.make_sample(client, family, 1200, 0, 2, seed=0)
    assert again.request == s.request  # deterministic across calls (and processes: no str hash())


def test_depths_spread_and_scoring():
    assert ruler.string_match_all("The numbers are 1234567 and 7654321.", ["1234567", "7654321"]) == 1.0
    assert ruler.string_match_all("ABCDE only", ["abcde", "FGHIJ"]) == 0.5


def test_too_small_length_is_an_error(client):
    with pytest.raises(ValueError, match="too small"):
        ruler.make_sample(client, "niah_multiquery", 200, 0, 1, seed=0)
    with pytest.raises(ValueError, match="exceeds the model's context"):
        ruler.run(client, length=10**7, label="x")


def test_run_reports_families_and_a_perfect_reader_scores_100(client):
    rep = ruler.run(client, length=900, label="local", families=("niah_single", "vt"), samples_per_family=2)
    assert set(rep.metrics["score_by_family"]) == {"niah_single", "vt"} and rep.n_items == 4
    assert rep.metrics["prompt_tokens_max"] <= 900
    assert 0.0 <= rep.score <= 100.0 and "QA families" in rep.notes[0]

    class Oracle(ScriptedModel):  # answers with whatever the sample expects: checks the scoring path
        @property
        def tokenizer(self):
            return client.tokenizer

        @property
        def max_context(self):
            return client.max_context

        def count_tokens(self, text):
            return client.count_tokens(text)

    samples = {}

    def answer(req):
        return " ".join(samples[req.messages[0]["content"]])

    oracle = Oracle(answer)
    orig = ruler.make_sample

    def capture(*a, **k):
        s = orig(*a, **k)
        samples[s.request.messages[0]["content"]] = s.expected
        return s

    ruler.make_sample = capture
    try:
        rep = ruler.run(oracle, length=900, label="local", families=("niah_multivalue", "fwe"), samples_per_family=1)
    finally:
        ruler.make_sample = orig
    assert rep.score == 100.0
