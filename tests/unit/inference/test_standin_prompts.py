"""The stand-in for `vllm serve` takes a completions prompt in the shapes vLLM takes: a string, a
list of token ids (what lm-eval's local-completions sends after rendering the chat template
itself), or a batch of either, whose choices are numbered across the batch."""

from __future__ import annotations

import pytest

from surrogate_dagster.inference.standin_server import _BadRequest, complete_batch, prompts_of


def test_prompt_shapes():
    assert prompts_of("hi") == ["hi"]
    assert prompts_of([1, 2, 3]) == [[1, 2, 3]]
    assert prompts_of([[1, 2], [3]]) == [[1, 2], [3]]
    assert prompts_of(["a", [4]]) == ["a", [4]]
    for bad in (None, [], [[]], [1, "a"], [True, 2], {"ids": [1]}, 3):
        with pytest.raises(_BadRequest, match="prompt must be"):
            prompts_of(bad)


class _Echo:
    """Answers each prompt with its own repr, n choices per prompt (what complete() returns)."""

    def complete(self, body, prompt):
        n = int(body.get("n") or 1)
        return {"id": "x", "choices": [{"index": j, "text": repr(prompt), "finish_reason": "stop"} for j in range(n)],
                "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}


def test_a_batch_numbers_its_choices_across_prompts_and_sums_usage():
    res = complete_batch(_Echo(), {"prompt": [[1, 2], "b"], "n": 2})
    assert [(c["index"], c["text"]) for c in res["choices"]] == [(0, "[1, 2]"), (1, "[1, 2]"), (2, "'b'"), (3, "'b'")]
    assert res["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    one = complete_batch(_Echo(), {"prompt": [7, 8]})
    assert [c["text"] for c in one["choices"]] == ["[7, 8]"]
