"""Validate stage configs with axolotl's own schema, plus the checks the schema does not make.

    python -m surrogate_trainer.validate assets/stages/*.yaml     # prints one JSON line per file

axolotl's ``validate_config`` accepts things that then do nothing (PITFALLS "The runbook's
configs"): unknown top-level keys are dropped (``liger_kernel``, ``push_to_hub``,
``system_prompt``), and a DPO dataset ``type: dpo`` validates but loads as None. So besides the
schema this reports every key that did not survive validation, and resolves each dataset type to
a real axolotl prompt strategy. Exit status 1 if any file fails.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def _aliases() -> dict[str, str]:
    """axolotl schema aliases (e.g. ``model_config`` is stored as ``overrides_of_model_config``)."""
    from axolotl.utils.schemas.config import AxolotlInputConfig

    return {f.alias: name for name, f in AxolotlInputConfig.model_fields.items() if f.alias}


def _dataset_type_problems(cfg: dict, validated) -> list[str]:
    problems = []
    for i, ds in enumerate(cfg.get("datasets") or []):
        ds_type = ds.get("type")
        if not ds_type:
            problems.append(f"datasets[{i}] has no type")
            continue
        if cfg.get("rl") in ("dpo", "ipo"):
            from axolotl.prompt_strategies.dpo import load

            if load(ds_type, validated, dataset_idx=i) is None:
                problems.append(f"datasets[{i}].type {ds_type!r} is not an axolotl DPO strategy "
                                "(it would load as None and train on nothing)")
        elif importlib.util.find_spec(f"axolotl.prompt_strategies.{ds_type.split('.')[0]}") is None:
            problems.append(f"datasets[{i}].type {ds_type!r} is not an axolotl prompt strategy")
    return problems


def validate_stage(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate one config dict; returns {ok, errors, dropped}."""
    from axolotl.cli.config import prepare_plugins
    from axolotl.utils.config import validate_config
    from axolotl.utils.dict import DictDefault

    cfg = DictDefault(copy.deepcopy(raw))
    try:
        prepare_plugins(cfg)
        validated = validate_config(cfg)
    except Exception as exc:  # the schema's verdict is the result here, reported per file
        return {"ok": False, "errors": [f"{type(exc).__name__}: {exc}"], "dropped": []}
    aliases = _aliases()
    dropped = sorted(k for k, v in raw.items()
                     if v is not None and k not in validated and aliases.get(k) not in validated)
    errors = [f"key {k!r} is silently ignored by axolotl 0.19" for k in dropped]
    errors += _dataset_type_problems(raw, validated)
    return {"ok": not errors, "errors": errors, "dropped": dropped}


def main(argv: list[str]) -> int:
    failed = 0
    for name in argv:
        raw = yaml.safe_load(Path(name).read_text(encoding="utf-8"))
        result = {"file": name, **validate_stage(raw)}
        failed += not result["ok"]
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
