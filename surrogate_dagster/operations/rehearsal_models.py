"""Tiny stand-ins for production's models, under production's repo ids, for a rehearsal's local Hub.

The production profile downloads three kinds of model repo: the base model
(``assets/training.yaml``'s ``hf_id`` at its pinned ``revision``), the PII NER ``bigcode/starpii``
(``phases.curation.ner_model: hf:bigcode/starpii``) and one Stack-Edu classifier per scored
language (``HuggingFaceTB/stack-edu-classifier-<lang>``, ``edu_scorer: stack-edu``). A rehearsal
runs that profile unchanged against ``hub/local_server.py``; ``build_rehearsal_models(models_dir)``
writes what that server serves in their place, laid out like the Hub's URL space:

    <models_dir>/<org>/<name>/revision.txt     the commit ``main`` points at
    <models_dir>/<org>/<name>/<files>          config, tokenizer and safetensors weights

The base model's revision.txt is its production pin, so the pin resolves on the local Hub; every
other repo's is the content hash of its files (sha1 over each relative path and the SHA-256 of
its bytes), so it changes exactly when the files do.

What each stand-in keeps of the real model, so the code that loads it takes the same path:

- base model: ``training.tiny_base.build_tiny_qwen2`` (Qwen2ForCausalLM, Qwen2's tokenizer rules,
  the real Qwen2.5 chat template), its BPE learnt from the fixture mirror's rows, shaped by
  ``base_model.tiny`` like the local profile's tiny base.
- ``bigcode/starpii``: a BERT token classifier (StarPII is a fine-tuned StarEncoder, a BERT) with
  StarPII's label set (``STARPII_ID2LABEL``) and a byte-level BPE tokenizer with StarEncoder's
  special tokens. Its classifier weights are zero and its bias favours ``O``, so it tags nothing:
  a randomly initialised NER would tag noise as names, and the sanitizer would redact it.
- ``HuggingFaceTB/stack-edu-classifier-<lang>``: BERT with a one-output regression head (the real
  classifiers' shape: ``num_labels=1``, ``problem_type: regression``) whose weights are zero and
  whose bias is ``EDU_SCORE`` (3.5), so every block scores 3.5: above production's threshold 3,
  and the quality filter's other rules (AST validity, heuristics) decide what is dropped.

Deterministic: the same fixtures give byte-identical files (seeded initialisation, sorted
inputs), hence the same shas. Cheap: 7.3 MB in all, about a second once torch and transformers
are imported (the first call in a process also pays those imports, several seconds).

CLI: ``python -m surrogate_dagster.operations.rehearsal_models OUT_DIR`` prints each repo id and
its sha.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..curation.quality.edu_classifier import STACK_EDU_MODELS
from ..paths import resolve_repo_path
from ..training.config import load_training_catalog
from ..training.tiny_base import TinySpec, build_tiny_qwen2

STARPII_ID = "bigcode/starpii"
# StarPII's id2label: "O" and a B-/I- pair per class, classes in alphabetical order (AMBIGUOUS
# marks spans its annotators could not decide on). The repo is gated and no copy of its config is
# kept here; the NER backend refuses a model none of whose labels it maps (sanitize/ner.py), so a
# real StarPII without a NAME label would fail at load instead of tagging nothing.
STARPII_CLASSES = ("AMBIGUOUS", "EMAIL", "IP_ADDRESS", "KEY", "NAME", "PASSWORD", "USERNAME")
STARPII_ID2LABEL = {0: "O", **{1 + 2 * i + j: f"{p}-{c}" for i, c in enumerate(STARPII_CLASSES)
                               for j, p in enumerate(("B", "I"))}}
EDU_SCORE = 3.5
# StarEncoder's special tokens (bigcode/starencoder; StarPII and Stack-Edu's classifiers share them).
ENCODER_SPECIALS = {"pad_token": "<pad>", "cls_token": "<cls>", "sep_token": "<sep>", "mask_token": "<mask>",
                    "unk_token": "<|endoftext|>"}
ENCODER_VOCAB = 1024
ENCODER_MAX_POSITIONS = 1024  # StarEncoder's context: the Stack-Edu scorer truncates to 1024 tokens
REHEARSAL_BASE_VOCAB = 8192
SAMPLE_MAX_CHARS = 2_000_000  # the whole fixture mirror (~0.93M chars): the tokenizers see every source
DEFAULT_MIRROR = "fixtures/hub"


def fixture_texts(mirror_dir: str | Path = DEFAULT_MIRROR, max_chars: int = SAMPLE_MAX_CHARS) -> list[str]:
    """Every string in the mirror's rows, files and rows in sorted order, up to ``max_chars``:
    the sample the stand-ins' tokenizers learn from (code, chat turns, tool calls)."""
    texts, total = [], 0
    for path in sorted((resolve_repo_path(mirror_dir) / "datasets").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # the mirror keeps a few broken rows on purpose (quarantine tests)
            for text in _strings(row):
                texts.append(text)
                total += len(text)
                if total >= max_chars:
                    return texts
    return texts


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def content_sha(root: Path) -> str:
    """sha1 over each file's relative path and SHA-256 (revision.txt and ``@<sha>/`` left out)."""
    digest = hashlib.sha1(usedforsecurity=False)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != "revision.txt" and not rel.startswith("@"):
            digest.update(rel.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return digest.hexdigest()


def encoder_tokenizer(texts: Iterable[str], vocab_size: int = ENCODER_VOCAB):
    """A byte-level BPE tokenizer (StarEncoder's kind) learnt from ``texts``, with StarEncoder's
    special tokens and ``<cls> ... <sep>`` around every sequence, as a fast tokenizer (the NER
    pipeline's entity offsets need one)."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    specials = list(dict.fromkeys(ENCODER_SPECIALS.values()))
    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    cls, sep = ENCODER_SPECIALS["cls_token"], ENCODER_SPECIALS["sep_token"]
    raw.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B {sep}",
        special_tokens=[(cls, raw.token_to_id(cls)), (sep, raw.token_to_id(sep))])
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, model_max_length=ENCODER_MAX_POSITIONS,
                                  **ENCODER_SPECIALS)
    return tok


def _bert_config(tok, **kw):
    from transformers import BertConfig

    return BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=ENCODER_MAX_POSITIONS,
                      pad_token_id=tok.pad_token_id, **kw)


def build_starpii(tok, out_dir: Path, seed: int = 0) -> None:
    """The StarPII stand-in (see the module docstring): StarPII's labels, always ``O``."""
    import torch
    from transformers import BertForTokenClassification

    config = _bert_config(tok, id2label=dict(STARPII_ID2LABEL),
                          label2id={v: k for k, v in STARPII_ID2LABEL.items()})
    torch.manual_seed(seed)
    model = BertForTokenClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(-8.0)
        model.classifier.bias[config.label2id["O"]] = 8.0
    _save(model, tok, out_dir)


def build_edu_classifier(tok, out_dir: Path, seed: int = 0, score: float = EDU_SCORE) -> None:
    """A Stack-Edu classifier stand-in: one regression output, ``score`` for every input."""
    import torch
    from transformers import BertForSequenceClassification

    config = _bert_config(tok, num_labels=1, problem_type="regression")
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(score)
    _save(model, tok, out_dir)


def _save(model, tok, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)


def edu_repo_ids() -> list[str]:
    """One Stack-Edu classifier repo per language the scorer uses (TSX shares TypeScript's)."""
    return sorted(set(STACK_EDU_MODELS.values()))


def build_rehearsal_models(models_dir: str | Path, mirror_dir: str | Path = DEFAULT_MIRROR,
                           texts: list[str] | None = None) -> dict[str, str]:
    """Write the stand-ins (module docstring) into ``models_dir``; returns repo id -> sha (its
    revision.txt). Repos already there are replaced whole. ``texts``: the tokenizers' sample
    (default: ``fixture_texts(mirror_dir)``)."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a bar per saved file says nothing about seventeen tiny repos
    models = Path(models_dir)
    models.mkdir(parents=True, exist_ok=True)
    sample = texts if texts is not None else fixture_texts(mirror_dir)
    base = load_training_catalog().base_model
    torch.set_num_threads(1)  # tiny ops: one thread, and the same bytes on every machine
    shas: dict[str, str] = {}

    def publish(repo_id: str, build, sha: str | None = None) -> None:
        # Built beside its place, then moved in: a reader (a running server) never sees half a repo.
        target = models / repo_id
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        build(tmp)
        sha = sha or content_sha(tmp)
        (tmp / "revision.txt").write_text(sha + "\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
        shas[repo_id] = sha

    # The local tiny base's shape, with a larger vocabulary: the local one learns its 2,048 tokens
    # from the curated mixtures themselves, this one from the raw mirror, and at 2,048 its long tool
    # traces ran past the CPU recipe's sequence_len (2 of 29 tool_sft rows over 2,048 tokens; the
    # mixture gate allows 5%). Qwen2.5's own vocabulary is 151,646.
    spec = dataclasses.replace(TinySpec(**base.tiny.model_dump(include=set(TinySpec.__dataclass_fields__))),
                               vocab_size=REHEARSAL_BASE_VOCAB)
    publish(base.hf_id, lambda d: build_tiny_qwen2(sample, d, spec), sha=base.revision)
    tok = encoder_tokenizer(sample)
    publish(STARPII_ID, lambda d: build_starpii(tok, d))
    for repo_id in edu_repo_ids():
        # a seed per language: the encoders differ like the real ones do (and so do their shas)
        seed = int.from_bytes(hashlib.sha256(repo_id.encode()).digest()[:4], "big")
        publish(repo_id, lambda d, seed=seed: build_edu_classifier(tok, d, seed=seed))
    return dict(sorted(shas.items()))


def main(argv: list[str] | None = None) -> None:
    """Build into OUT_DIR and print one ``<repo id> <sha>`` line per repo, then the time taken."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", help="the models_dir a local Hub server serves")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="the offline mirror the tokenizers learn from")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    shas = build_rehearsal_models(args.out_dir, args.mirror)
    for repo_id, sha in shas.items():
        print(f"{repo_id} {sha}")
    print(f"{len(shas)} model repos in {time.monotonic() - t0:.1f} s under {args.out_dir}")


if __name__ == "__main__":
    main()
