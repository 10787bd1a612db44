"""The local profile's base model: a tiny, randomly initialised Qwen2 with a tokenizer of our own.

Everything downstream of the base model (five axolotl stages, merges, DPO references) then runs on
a CPU with no Hub access. What is kept from the real Qwen2.5-Coder so the stages exercise the same
code paths: the architecture class (Qwen2ForCausalLM, GQA, tied embeddings off/on as configured),
rope_theta 1e6 and 32k positions, Qwen2's exact pre-tokenizer (NFC, its split regex, byte-level BPE
without its own regex; PITFALLS: AutoTokenizer rebuilds exactly that for model_type qwen2, so any
other pre-tokenizer gives different ids after a reload), the ChatML special tokens, the Hermes
tool-call tokens, and the real Qwen2.5 chat template (TRL's copy, trl/chat_templates/qwen2_5.jinja).
The BPE merges are learnt from the curated mixtures, so the vocabulary fits the data it trains on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2.5 has these as added (non-special) tokens: one id each, visible in decoded text.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


@dataclass(frozen=True)
class TinySpec:
    vocab_size: int = 2048
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 32768
    rope_theta: float = 1_000_000.0
    tie_word_embeddings: bool = False
    seed: int = 0


def qwen2_5_chat_template() -> str:
    """The real Qwen2.5 chat template, offline (TRL ships it; PITFALLS: byte-identical to Qwen's)."""
    import trl

    return (Path(trl.__file__).resolve().parent / "chat_templates" / "qwen2_5.jinja").read_text()


def row_texts(row: dict) -> Iterator[str]:
    """Every text of a mixture row: SFT messages, or DPO prompt turns + chosen + rejected."""
    for m in row.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("content"), str):
            yield m["content"]
    for side in ("chosen", "rejected"):
        value = row.get(side)
        if isinstance(value, dict) and isinstance(value.get("content"), str):
            yield value["content"]
        elif isinstance(value, str):
            yield value


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """A Qwen2Tokenizer whose BPE merges are learnt from ``texts`` (Qwen2's normalizer and splits)."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import AddedToken
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer

    raw = Tokenizer(BPE())
    raw.normalizer = normalizers.NFC()
    raw.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    raw.train_from_iterator(texts, trainer=trainer)
    model = json.loads(raw.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    # Built through Qwen2Tokenizer itself, so the saved tokenizer is what transformers rebuilds.
    tok = Qwen2Tokenizer(vocab=model["vocab"], merges=merges, eos_token="<|im_end|>",
                         pad_token="<|endoftext|>", unk_token=None,
                         additional_special_tokens=SPECIAL_TOKENS[1:])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    tok.chat_template = qwen2_5_chat_template()
    tok.model_max_length = 32768
    return tok


def build_tiny_qwen2(texts: Iterable[str], out_dir: str | Path, spec: TinySpec = TinySpec()) -> dict:
    """Train the tokenizer, initialise the model from its config, save both to ``out_dir``."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(texts, spec.vocab_size)
    vocab = len(tok)
    config = Qwen2Config(
        vocab_size=-(-vocab // 64) * 64,  # padded like Qwen's (151936), room for added tokens
        hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads, max_position_embeddings=spec.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        tie_word_embeddings=spec.tie_word_embeddings, use_sliding_window=False,
        bos_token_id=None, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[config.eos_token_id, config.pad_token_id],
                                               pad_token_id=config.pad_token_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return {"vocab": vocab, "parameters": sum(p.numel() for p in model.parameters()),
            "files": sorted(p.name for p in out.iterdir())}
