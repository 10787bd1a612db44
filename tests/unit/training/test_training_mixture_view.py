"""mixture_view.py: rows rendered as the trainer renders them, and the length statistics.

The expected texts are written out by hand from the Qwen2.5 chat template (the tiny tokenizer carries
the real one) and from axolotl's DPO ``chat_template.default`` strategy, not re-derived with the code.
"""

from __future__ import annotations

import pytest

from surrogate_dagster.training.mixture_view import (MixtureView, SourceLengths, build_view, clip_middle,
                                                     code_block, first_rows_markdown, lengths_plot_png,
                                                     lengths_table, nearest_rank, render_row, source_lengths)

CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
SFT_TOOL_ROW = {"id": "t1", "source": "hermes", "messages": [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Read a.py and b.py."},
    {"role": "assistant", "content": CALL},
    {"role": "tool", "content": "x = 1"},
    {"role": "tool", "content": "y = 2"},
    {"role": "assistant", "content": "x is 1, y is 2."},
]}
SFT_TOOL_TEXT = (
    "<|im_start|>system\nYou are a coding agent.<|im_end|>\n"
    "<|im_start|>user\nRead a.py and b.py.<|im_end|>\n"
    "<|im_start|>assistant\n" + CALL + "<|im_end|>\n"
    # consecutive tool messages share one user turn, one <tool_response> block each
    "<|im_start|>user\n<tool_response>\nx = 1\n</tool_response>\n<tool_response>\ny = 2\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\nx is 1, y is 2.<|im_end|>\n"
)
DPO_ROW = {"id": "p1", "source": "when2call", "messages": [{"role": "user", "content": "What is 2+2?"}],
           "chosen": {"role": "assistant", "content": "4"},
           "rejected": {"role": "assistant", "content": "5\n\n"}}
# No system turn in the prompt: the Qwen2.5 template writes its default one. Only what follows the
# answer's <|im_end|> (the template's newline) is stripped; whitespace inside the answer stays, and
# so does <|im_end|> (TRL then adds no second EOS).
DPO_PROMPT = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")


@pytest.fixture(scope="module")
def tokenizer():
    from surrogate_dagster.training.tiny_base import row_texts, train_tokenizer

    return train_tokenizer([t for r in (SFT_TOOL_ROW, DPO_ROW) for t in row_texts(r)] * 3, 300)


def test_sft_row_with_tool_turns_renders_as_the_qwen_template(tokenizer):
    rendered = render_row(tokenizer, SFT_TOOL_ROW)
    assert rendered.kind == "sft"
    assert rendered.texts == (SFT_TOOL_TEXT,)


def test_dpo_row_renders_prompt_plus_each_answer(tokenizer):
    rendered = render_row(tokenizer, DPO_ROW)
    assert rendered.kind == "dpo"
    assert rendered.texts == (DPO_PROMPT + "4<|im_end|>", DPO_PROMPT + "5\n\n<|im_end|>")


def test_dpo_row_length_is_its_longer_side(tokenizer):
    def ntok(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    answer = {"role": "assistant", "content": "four, or maybe more " * 20}
    short = {"role": "assistant", "content": "4"}
    rows = [{**DPO_ROW, "chosen": answer, "rejected": short}, {**DPO_ROW, "chosen": short, "rejected": answer}]
    long_len = ntok(DPO_PROMPT + answer["content"] + "<|im_end|>")
    assert long_len > ntok(DPO_PROMPT + "4<|im_end|>")
    view = build_view("tool_dpo_mixture", rows, tokenizer)
    assert view.kind == "dpo" and view.lengths == {"when2call": [long_len, long_len]}


def test_nearest_rank_percentiles_on_known_lengths():
    assert [nearest_rank(range(1, 21), q) for q in (50, 95, 100)] == [10, 19, 20]
    assert [nearest_rank([3, 1, 2, 100], q) for q in (50, 95)] == [2, 100]
    assert nearest_rank([7], 95) == 7
    with pytest.raises(ValueError):
        nearest_rank([], 50)
    assert source_lengths("s", [100, 10, 3000, 20, 40], sequence_len=2048) == SourceLengths(
        source="s", rows=5, p50=40, p95=3000, max=3000, tokens=3170, over_sequence_len=1)


def test_lengths_table_and_plot():
    view = MixtureView(name="code_sft_mixture", kind="sft", sequence_len=50,
                       sources=[source_lengths("a", [10, 20, 30]), source_lengths("b", [100])],
                       first_rows={"a": ["x"], "b": ["y"]}, lengths={"a": [10, 20, 30], "b": [100]})
    view.sources = [source_lengths(s, v, 50) for s, v in view.lengths.items()]
    assert lengths_table(view) == "\n".join([
        "| source | rows | p50 | p95 | max | tokens | over 50 |",
        "|---|---:|---:|---:|---:|---:|---:|",
        "| a | 3 | 20 | 30 | 30 | 60 | 0 |",
        "| b | 1 | 100 | 100 | 100 | 100 | 1 |",
        "| **all** | 4 | 20 | 100 | 100 | 160 | 1 |",
    ])
    assert view.total_tokens == 160 and view.rows == 4
    assert MixtureView.from_json(view.to_json()) == view
    assert lengths_plot_png(view).startswith(b"\x89PNG")


def test_long_rows_are_cut_in_the_middle_and_fenced_safely():
    assert clip_middle("short", 8) == "short"
    assert clip_middle("a" * 10 + "b" * 10, 8) == "aaaa\n... [12 chars cut] ...\nbbbb"
    assert code_block("x ``` y") == "````text\nx ``` y\n````"
    view = MixtureView(name="m", kind="dpo", sequence_len=None, sources=[], first_rows={"s": ["P+C", "P+R"]})
    md = first_rows_markdown(view)
    assert "### s" in md and "prompt + chosen (3 chars):\n\n```text\nP+C\n```" in md
    assert "prompt + rejected (3 chars):\n\n```text\nP+R\n```" in md
