"""The runner's sampled prompts stop before the first answer (the tier runs: tests/integration/test_evals_runner.py)."""

from __future__ import annotations

from surrogate_dagster.evals.runner import sample_prompts


def test_sample_prompts_stop_before_the_first_answer():
    rows = [{"id": i, "source": "s", "messages": [{"role": "system", "content": "sys"},
                                                  {"role": "user", "content": f"q{i}"},
                                                  {"role": "assistant", "content": "secret answer"}]}
            for i in range(10)] + [{"id": "dpo", "source": "d", "prompt": [{"role": "user", "content": "p"}]}]
    out = sample_prompts(rows, 5, seed=1)
    assert len(out) == 5 and all(m["role"] != "assistant" for p in out for m in p["messages"])
    assert sample_prompts(rows, 5, seed=1) == out and len(sample_prompts(rows, 100, 0)) == 11
