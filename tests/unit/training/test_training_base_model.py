"""The base model: the local tiny Qwen2 (built from the mixtures) and the production pin check."""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.catalog.models import HubConfig
from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.training.base_model import build_tiny_base, hub_model_revision
from surrogate_dagster.training.config import load_training_catalog
from surrogate_dagster.training.refs import BASE_POINTER
from surrogate_dagster.training.tiny_base import TOOL_TOKENS, qwen2_5_chat_template

CATALOG = load_training_catalog()
TEXT = 'def add(a, b):\n    return a + b  # été\n<tool_call>\n{"name": "code_exec", "arguments": {}}\n</tool_call>'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("base")
    store = LocalObjectStore(root / "store", fsync=False)
    for i, name in enumerate(CATALOG.base_model.tiny.tokenizer_mixtures):
        rows = [{"messages": [{"role": "user", "content": f"write add number {j}"},
                              {"role": "assistant", "content": TEXT.replace("add", f"add{j}")}]}
                if "sft" in name else
                {"messages": [{"role": "user", "content": f"fix {j}"}],
                 "chosen": {"role": "assistant", "content": f"return {j}"},
                 "rejected": {"role": "assistant", "content": f"return -{j}"}} for j in range(60)]
        write_mixture(store, MixtureBuild.from_rows(name.removesuffix("_mixture"), rows, {"t": len(rows)}, {}, f"v{i}"), "card")
    first = build_tiny_base(store, CATALOG)
    again = build_tiny_base(store, CATALOG)
    model_dir = root / "model"
    for key in store.list(first.prefix + "/"):
        store.get_file(key, model_dir / key.rsplit("/", 1)[1])
    return store, first, again, model_dir


def test_tiny_base_is_stored_versioned_and_reused(built):
    store, first, again, _ = built
    assert not first.reused and again.reused and again.data_version == first.data_version
    assert json.loads(store.get_bytes(BASE_POINTER)) == {"prefix": first.prefix, "data_version": first.data_version}
    assert first.mixtures == {n: f"v{i}" for i, n in enumerate(CATALOG.base_model.tiny.tokenizer_mixtures)}
    assert first.parameters < 1_000_000


def test_tokenizer_survives_reload_with_qwen2s_pre_tokenizer(built):
    """AutoTokenizer rebuilds Qwen2's normalizer and split for model_type qwen2 (PITFALLS): same ids."""
    from tokenizers import Tokenizer
    from transformers import AutoConfig, AutoTokenizer

    _, _, _, model_dir = built
    tok = AutoTokenizer.from_pretrained(model_dir)
    raw = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert type(tok).__name__ == "Qwen2Tokenizer"
    assert tok(TEXT)["input_ids"] == raw.encode(TEXT).ids
    assert tok.decode(tok(TEXT)["input_ids"]) == TEXT
    for special in ["<|im_start|>", "<|im_end|>", "<|endoftext|>", *TOOL_TOKENS]:
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1, special
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.chat_template == qwen2_5_chat_template()
    rendered = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert rendered.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    config = AutoConfig.from_pretrained(model_dir)
    assert config.model_type == "qwen2" and config.rope_parameters["rope_theta"] == 1_000_000.0
    assert config.vocab_size >= len(tok) and config.eos_token_id == tok.eos_token_id


def test_hub_pin_check_offline(tmp_path):
    spec = CATALOG.base_model
    repo = tmp_path / "mirror" / "models" / spec.hf_id
    repo.mkdir(parents=True)
    (repo / "revision.txt").write_text("f" * 40 + "\n")
    cfg = HubConfig(mode="offline", mirror_dir=str(tmp_path / "mirror"), push_dir=str(tmp_path / "p"), org="axentx")
    with pytest.raises(LookupError, match="no revision"):
        hub_model_revision(spec, cfg)
    (repo / f"@{spec.revision}").mkdir()
    assert hub_model_revision(spec, cfg) == {"pinned": spec.revision, "main": "f" * 40}
    with pytest.raises(FileNotFoundError):
        hub_model_revision(spec.model_copy(update={"hf_id": "Qwen/absent"}), cfg)
