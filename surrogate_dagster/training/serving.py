"""How a checkpoint is served: its LoRA adapter on the base (``adapter``), or merged (``merged``).

Pure rules, no I/O beyond reading one JSON file. Production serves checkpoints with vLLM
(``vllm serve --enable-lora --lora-modules``, inference/server.py); vLLM loads an adapter only if
its PEFT ``adapter_config.json`` passes the checks in ``vllm/lora/peft_helper.py``
(``PEFTHelper._validate_features`` / ``validate_legal``) and its module names are among the
model's LoRA-capable modules (``vllm/lora/models.py``, ``from_local_checkpoint``). The rules, as
in vllm-project/vllm@e745bafffc44744aa601169f8c6f325e47ca7cd5 ``vllm/lora/peft_helper.py``:

- ``use_dora``: refused ("vLLM does not yet support DoRA.");
- ``modules_to_save``: must be empty ("vLLM only supports modules_to_save being None.");
- ``r`` <= the server's ``--max-lora-rank`` ("LoRA rank ... is greater than max_lora_rank");
- ``bias`` other than ``"none"`` needs ``--enable-lora-bias`` (off here);
- ``r``, ``lora_alpha``, ``target_modules`` present (``PEFTHelper.from_dict``), and the targets
  within the model's LoRA modules: for Qwen2 the packed ``qkv_proj`` (q/k/v), ``o_proj``,
  ``gate_up_proj`` (gate/up), ``down_proj``.

A ``rank_pattern`` rank over the limit is refused here too (vLLM checks ``r`` only, then cannot fit
the larger matrices into its ``max_lora_rank`` slots).

Anything else is served merged: the trainer merges the adapter into its base (PEFT
``merge_and_unload``, via axolotl merge-lora, tokenizer included) and stores it as ``merged/``
beside ``adapter/``. The same decision picks what the trainer stores, what the evals and sampling
load (evals/checkpoints.py) and what is pushed (training/publish.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# Qwen2's LoRA-capable linear layers in vLLM (packed_modules_mapping + the unpacked names PEFT uses).
QWEN2_LORA_MODULES = frozenset({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
# vllm serve's own default for --max-lora-rank is 16; inference/server.py passes the profile's
# serving.max_lora_rank (64, the stages' lora_r).
DEFAULT_MAX_LORA_RANK = 64

Form = Literal["adapter", "merged"]


@dataclass(frozen=True)
class ServingLimits:
    """What the inference server accepts (the profile's ``phases.evals.inference``)."""

    max_lora_rank: int = DEFAULT_MAX_LORA_RANK
    lora_modules: frozenset[str] = field(default=QWEN2_LORA_MODULES)
    bias_enabled: bool = False

    @classmethod
    def from_inference(cls, inference: Any) -> "ServingLimits":
        """From an inference settings object or dict; absent keys keep the defaults."""
        get = inference.get if isinstance(inference, dict) else (lambda k, d=None: getattr(inference, k, d))
        return cls(max_lora_rank=int(get("max_lora_rank", None) or DEFAULT_MAX_LORA_RANK),
                   bias_enabled=bool(get("enable_lora_bias", False)))


@dataclass(frozen=True)
class ServingDecision:
    form: Form
    reasons: tuple[str, ...]  # why merged; empty for an adapter

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) or "plain LoRA within the server's limits"


def _target_modules(value: Any) -> tuple[set[str] | None, str | None]:
    """The module names, or (None, why) when vLLM cannot be shown to accept them from the config."""
    if value == "all-linear":
        return set(QWEN2_LORA_MODULES), None  # PEFT expands it to every linear layer but lm_head
    if isinstance(value, str):
        return None, f"target_modules is a pattern ({value!r}): vLLM matches module names"
    return {str(m).rsplit(".", 1)[-1] for m in value or ()}, None


def decide(adapter_config: dict[str, Any], limits: ServingLimits = ServingLimits()) -> ServingDecision:
    """``adapter`` if vLLM would load this PEFT adapter under ``limits``, else ``merged`` with why."""
    why: list[str] = []
    peft_type = str(adapter_config.get("peft_type") or "LORA").upper()
    if peft_type != "LORA":
        why.append(f"peft_type {peft_type}: vLLM serves LoRA only")
    if adapter_config.get("use_dora"):
        why.append("DoRA (use_dora): vLLM does not yet support DoRA")
    if adapter_config.get("modules_to_save"):
        why.append(f"modules_to_save {adapter_config['modules_to_save']}: vLLM needs none")
    rank = int(adapter_config.get("r") or 0)
    ranks = [int(r) for r in (adapter_config.get("rank_pattern") or {}).values()]
    if max([rank, *ranks]) > limits.max_lora_rank:
        why.append(f"rank {max([rank, *ranks])} > max_lora_rank {limits.max_lora_rank}")
    if (adapter_config.get("bias") or "none") != "none" and not limits.bias_enabled:
        why.append(f"bias {adapter_config['bias']!r}: the server runs without LoRA bias")
    modules, pattern = _target_modules(adapter_config.get("target_modules"))
    if pattern:
        why.append(pattern)
    elif not modules:
        why.append("no target_modules")
    elif modules - limits.lora_modules:
        why.append(f"target modules {sorted(modules - limits.lora_modules)} are not LoRA modules in vLLM")
    return ServingDecision("merged" if why else "adapter", tuple(why))


def expected_adapter_config(axolotl_config: dict[str, Any]) -> dict[str, Any]:
    """The adapter_config.json fields that decide serving, as PEFT will write them for this axolotl
    config (axolotl's load_lora: lora_r -> r, peft_use_dora -> use_dora, lora_modules_to_save ->
    modules_to_save, lora_target_linear -> all-linear)."""
    targets: Any = list(axolotl_config.get("lora_target_modules") or [])
    if axolotl_config.get("lora_target_linear"):
        targets = "all-linear" if not targets else sorted({*targets, *QWEN2_LORA_MODULES})
    return {"peft_type": "LORA", "r": axolotl_config.get("lora_r") or 8,
            "use_dora": bool(axolotl_config.get("peft_use_dora")),
            "modules_to_save": axolotl_config.get("lora_modules_to_save") or None,
            "bias": "none", "target_modules": targets}


def read_adapter_config(adapter_dir: str | Path) -> dict[str, Any]:
    path = Path(adapter_dir) / "adapter_config.json"
    if not path.is_file():
        raise FileNotFoundError(f"no adapter_config.json in {adapter_dir}")
    return json.loads(path.read_text())
