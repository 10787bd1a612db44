"""The Hub model card of a stage: what it was trained from, on what, with what, and where it lives."""

from __future__ import annotations

from typing import Any


def model_card(*, repo_id: str, title: str, stage: str, base_model: str, base_revision: str | None,
               reference_model: str | None, datasets: dict[str, str], config_hash: str,
               fingerprint: str, summary: dict[str, Any], lora: dict[str, Any], loss: list[str],
               artifact_uri: str, merged_uri: str | None) -> str:
    """Markdown with YAML front matter (private repo, PEFT adapter, lineage in the body)."""
    base_line = f"{base_model}" + (f" @ `{base_revision}`" if base_revision else "")
    front = ["---", "library_name: peft", f"base_model: {base_model}", "private: true",
             "tags: [surrogate-1, axolotl, lora, code]", "---", ""]
    body = [
        f"# {repo_id}", "", f"{title} of Surrogate-1 v2 (Phase A runbook), trained by surrogate_dagster "
        "with axolotl 0.19 under Dagster Pipes.", "",
        "## Lineage", "",
        f"- stage: `{stage}`, config hash `{config_hash}` (stage file + executor overrides), run `{fingerprint}`",
        f"- base model: {base_line}",
        f"- reference model (DPO): {reference_model or 'n/a (SFT stage)'}",
        "- datasets (asset @ data version):",
        *[f"  - `{name}` @ `{version}`" for name, version in sorted(datasets.items())],
        f"- adapter: `{artifact_uri}`" + (f"; merged policy: `{merged_uri}`" if merged_uri else ""),
        "", "## Training", "",
        "| | |", "|---|---|",
        f"| steps | {summary.get('global_step')} |",
        f"| resumed from step | {summary.get('resumed_from_step') or '-'} |",
        f"| final loss | {summary.get('final_loss')} |",
        f"| tokens/s | {summary.get('tokens_per_s')} |",
        f"| device | {summary.get('device')} |",
        f"| wall time (s) | {summary.get('wall_s')} |",
        "", "## Adapter", "", "| | |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in lora.items()],
        "", "## Loss", "", ", ".join(loss) or "-", "",
    ]
    return "\n".join(front + body)
