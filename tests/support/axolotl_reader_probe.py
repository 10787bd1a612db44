"""Run axolotl's own dataset preparation on one rendered stage config and dump what it produced.

    .venv-trainer/bin/python tests/support/axolotl_reader_probe.py <axolotl.yaml> <out.json> [<axolotl.yaml> <out.json> ...]

Runs in the trainer environment (axolotl 0.19), several configs in one process (axolotl's import is
most of the cost). Each config goes through ``load_cfg`` and then
``load_datasets`` (SFT) or ``load_preference_datasets`` (``rl: dpo``), the calls ``axolotl
preprocess`` makes. For DPO the prepared prompt/chosen/rejected strings are then tokenized by TRL's
``DPOTrainer._prepare_dataset``, the step the DPO trainer runs on axolotl's dataset before training.

The JSON holds, per prepared row, the decoded token sequences:
- SFT: ``input`` (all input_ids), ``trained`` (each maximal run of labels != -100, decoded) and
  ``label_mismatches`` (positions whose label is neither -100 nor the input id);
- DPO: axolotl's ``prompt``/``chosen``/``rejected`` strings, and TRL's ``prompt_ids``/
  ``chosen_ids``/``rejected_ids`` decoded, with whether each completion ends in the EOS id.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# `datasets` saves prepared data through a spawn pool, whose workers re-import this file as
# __main__: everything heavy is imported inside functions and the entry point is guarded.


def _decode(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _runs(labels: list[int]) -> list[tuple[int, int]]:
    """Maximal [start, end) runs of trained positions (label != -100)."""
    out, start = [], None
    for i, lab in enumerate(labels + [-100]):
        if lab != -100 and start is None:
            start = i
        elif lab == -100 and start is not None:
            out.append((start, i))
            start = None
    return out


def sft_rows(cfg) -> list[dict]:
    from axolotl.common.datasets import load_datasets
    from axolotl.loaders import load_tokenizer

    meta = load_datasets(cfg=cfg)
    tokenizer = load_tokenizer(cfg)
    rows = []
    for ex in meta.train_dataset:
        ids, labels = list(ex["input_ids"]), list(ex["labels"])
        rows.append({
            "input": _decode(tokenizer, ids),
            "trained": [_decode(tokenizer, ids[a:b]) for a, b in _runs(labels)],
            "label_mismatches": sum(1 for i, lab in zip(ids, labels) if lab not in (-100, i)),
            "n_tokens": len(ids),
        })
    return rows


def dpo_rows(cfg) -> list[dict]:
    from types import SimpleNamespace

    from axolotl.common.datasets import load_preference_datasets
    from axolotl.loaders import load_tokenizer
    from trl import DPOConfig, DPOTrainer

    meta = load_preference_datasets(cfg=cfg)
    tokenizer = load_tokenizer(cfg)
    prepared = meta.train_dataset
    # TRL's tokenization of a DPO dataset reads only the tokenizer from the trainer; a full trainer
    # (model, reference, optimizer) adds nothing to what is tokenized.
    args = DPOConfig(output_dir=str(Path(cfg.output_dir)), max_length=cfg.sequence_len,
                     dataset_num_proc=None, report_to=[], use_cpu=True)
    tokenized = DPOTrainer._prepare_dataset(SimpleNamespace(_tokenizer=tokenizer), prepared, tokenizer, args,
                                            "train")
    eos = tokenizer.eos_token_id
    rows = []
    for text, tok in zip(prepared, tokenized):
        rows.append({
            "prompt": text["prompt"], "chosen": text["chosen"], "rejected": text["rejected"],
            "prompt_ids": _decode(tokenizer, tok["prompt_ids"]),
            "chosen_ids": _decode(tokenizer, tok["chosen_ids"]),
            "rejected_ids": _decode(tokenizer, tok["rejected_ids"]),
            "chosen_ends_with_eos": bool(tok["chosen_ids"]) and tok["chosen_ids"][-1] == eos,
            "rejected_ends_with_eos": bool(tok["rejected_ids"]) and tok["rejected_ids"][-1] == eos,
        })
    return rows


def probe(cfg_path: str, out_path: str) -> None:
    from axolotl.cli.config import load_cfg
    from axolotl.utils.trainer import disable_datasets_caching

    cfg = load_cfg(cfg_path, is_preprocess=True)
    cfg.is_preprocess = True
    with disable_datasets_caching():
        rows = dpo_rows(cfg) if cfg.rl else sft_rows(cfg)
    result = {"rl": getattr(cfg.rl, "value", cfg.rl) if cfg.rl else None, "sample_packing": bool(cfg.sample_packing),
              "datasets": [{k: ds.get(k) for k in ("type", "field_messages", "roles_to_train", "train_on_eos",
                                                   "field_chosen", "field_rejected")} for ds in cfg.datasets],
              "rows": rows}
    Path(out_path).write_text(json.dumps(result, ensure_ascii=False, indent=1))


def main(argv: list[str]) -> None:
    os.environ["AXOLOTL_IS_PREPROCESS"] = "1"  # as `axolotl preprocess` sets it
    os.environ.setdefault("AXOLOTL_DO_NOT_TRACK", "1")  # no telemetry upload from a test
    if not argv or len(argv) % 2:
        raise SystemExit("usage: axolotl_reader_probe.py <axolotl.yaml> <out.json> [...]")
    for cfg_path, out_path in zip(argv[::2], argv[1::2]):
        probe(cfg_path, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])
