"""A tiny random Qwen2 (about 100k parameters) with a locally trained byte-level BPE tokenizer.

For tests and the throughput benchmark: it has Qwen2's architecture, special tokens and chat
template (TRL's copy of the real Qwen2.5 template, offline), so every code path a real checkpoint
takes (chat rendering, batched generation, LoRA adapters) runs, in milliseconds. Its outputs are
noise: scores of 0 are the expected, honest result.

The tokenizer uses exactly Qwen2's split regex + ``ByteLevel(use_regex=False)``: with
``model_type=qwen2`` transformers rebuilds the pre-tokenizer in code (PITFALLS), so anything else
would change the ids between training and loading.
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# A little code and prose, enough for a few hundred merges that make prompts short.
_CORPUS = [
    "def add(a, b):\n    return a + b\n", "class Solution:\n    def solve(self, nums: list[int]) -> int:\n",
    "import os\nimport sys\nfor i in range(10):\n    print(i)\n", "Write a function that returns the sum.",
    "You are a helpful assistant.", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "FROM python:3.12-slim\nRUN pip install --no-cache-dir -r requirements.txt\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n", "resource \"aws_s3_bucket\" \"b\" {}\n",
    "#!/usr/bin/env bash\nset -euo pipefail\necho \"$1\"\n", "The special magic number for key is 1234567.",
    "assert candidate([1, 2, 3]) == 6\n", "```python\nprint('hello world')\n```\n",
]


def qwen_chat_template() -> str:
    """The real Qwen2.5 chat template as TRL ships it (offline)."""
    import trl

    return (Path(trl.__file__).resolve().parent / "chat_templates" / "qwen2_5.jinja").read_text()


def build_tiny_qwen2(out_dir: str | Path, *, seed: int = 0, vocab_size: int = 600,
                     max_positions: int = 4096, hidden: int = 32, layers: int = 2) -> Path:
    """Write a random tiny Qwen2 + tokenizer to ``out_dir`` (HF format) and return the path."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token=None, additional_special_tokens=SPECIAL_TOKENS[1:])
    fast.chat_template = qwen_chat_template()
    fast.model_max_length = max_positions
    fast.save_pretrained(out)
    # transformers picks Qwen2's tokenizer class from the model type; keep the files consistent
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "Qwen2Tokenizer"
    cfg_path.write_text(json.dumps(cfg, indent=1))

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(fast), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=max_positions, tie_word_embeddings=True,
                         bos_token_id=None, eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=fast.pad_token_id)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = [fast.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    model.generation_config.pad_token_id = fast.pad_token_id
    model.save_pretrained(out)
    return out
