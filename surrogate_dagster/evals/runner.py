"""Run one benchmark on one checkpoint: catalog + profile settings -> harness -> EvalReport (Dagster-free).

The profile's per-benchmark overrides (smaller subsets, shorter answers, local RULER lengths) are
applied here and every one of them is written into the report's notes, so a reader knows exactly
what ran.
"""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Sequence

from ..storage import ObjectStore
from ..storage.layout import EVAL_GROUNDTRUTH
from .config import TIER1, EvalCatalog, EvalsProfile, ruler_not_run
from .harness import bfcl, humaneval_plus, livecodebench, mbpp_plus, ruler
from .harness.common import EvalReport, safe_loads
from .harness.evalplus_core import EVALPLUS_VERSION, EvalPlusConfig, compute_groundtruth
from ..inference import InferenceClient


@dataclass
class EvalEnv:
    """What a benchmark run needs besides the model."""

    catalog: EvalCatalog
    prof: EvalsProfile
    store: ObjectStore
    log: Callable[[str], None] = print
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def sandbox(self):
        from ..sandbox import Sandbox

        return Sandbox()

    def override(self, bench: str):
        return self.prof.overrides.get(bench)

    def notes_for(self, bench: str) -> list[str]:
        o = self.override(bench)
        if o is None:
            return []
        set_fields = {k: v for k, v in o.model_dump().items() if v is not None and v != {}}
        return [f"profile override ({'offline' if self.prof.offline else 'online'} profile): {set_fields}"]

    def groundtruth(self, dataset: str) -> Callable[[dict, str], dict[str, bytes]]:
        """Expected outputs cached in the object store by dataset hash (computed once, in the sandbox)."""

        def get(problems: dict, key: str) -> dict[str, bytes]:
            okey = f"{EVAL_GROUNDTRUTH}/{dataset}/{key[:32]}-evalplus{EVALPLUS_VERSION}.pkl"
            cached = safe_loads(self.store.get_bytes(okey)) if self.store.exists(okey) else {}
            missing = {t: p for t, p in problems.items() if t not in cached}
            if missing:  # only the tasks not computed before; the cache grows to the whole dataset
                self.log(f"{dataset}: computing expected outputs of {len(missing)} canonical solutions (once)")
                cached.update(compute_groundtruth(self.sandbox, dataset, missing, workers=self.prof.sandbox_workers,
                                                  log=self.log))
                self.store.put_bytes(okey, pickle.dumps(cached, protocol=4))
            return {t: cached[t] for t in problems}

        return get


def _pick(value, default):
    return default if value is None else value


def run_tier1(bench: str, client: InferenceClient, env: EvalEnv) -> EvalReport:
    """One Tier-1 benchmark on one checkpoint."""
    if bench not in TIER1:
        raise ValueError(f"{bench!r} is not a Tier-1 benchmark")
    cfg = env.catalog.bench(bench)
    o = env.override(bench)
    get = (lambda k: getattr(o, k)) if o else (lambda k: None)
    bdir = env.prof.benchmarks_path()
    work = env.prof.work_path(bench)
    if bench in ("humaneval_plus", "mbpp_plus"):
        ep = EvalPlusConfig(dataset="humaneval" if bench == "humaneval_plus" else "mbpp",
                            max_new_tokens=_pick(get("max_new_tokens"), cfg.max_new_tokens),
                            max_items=get("max_items"), workers=env.prof.sandbox_workers)
        if bench == "humaneval_plus":
            rep = humaneval_plus.run(client, env.sandbox, ep, offline=env.prof.offline, work_dir=work,
                                     groundtruth=env.groundtruth("humaneval"), log=env.log)
        else:
            rep = mbpp_plus.run(client, env.sandbox, ep, offline=env.prof.offline, work_dir=work,
                                offline_file=bdir / cfg.offline_file, groundtruth=env.groundtruth("mbpp"), log=env.log)
    elif bench == "livecodebench":
        rep = livecodebench.run(client, env.sandbox, offline=env.prof.offline, cutoff=_pick(get("cutoff"), cfg.cutoff),
                                standin_file=bdir / cfg.standin_file, release=cfg.release, files=cfg.files,
                                revision=cfg.revision, max_new_tokens=_pick(get("max_new_tokens"), cfg.max_new_tokens),
                                max_items=get("max_items"), timeout_s=cfg.timeout_s,
                                cache_dir=str(env.prof.work_path("hf_cache")), log=env.log)
    elif bench == "bfcl":
        skip = get("skip") or {}
        unknown = [c for c in skip if c not in cfg.categories]
        if unknown:
            raise ValueError(f"profile override bfcl.skip names categories that are not run: {unknown}")
        rep = bfcl.run(client, bdir / "BFCL", categories=[c for c in cfg.categories if c not in skip],
                       max_per_category=get("max_per_category"),
                       max_new_tokens=_pick(get("max_new_tokens"), cfg.max_new_tokens),
                       max_tokens_cap=get("max_new_tokens"),  # only a profile's override caps bfcl-eval's
                       not_run={**cfg.not_run, **{c: f"profile override: {why}" for c, why in skip.items()}},
                       work_dir=work, log=env.log)
    else:
        length = _pick(get("length"), cfg.length)
        label = get("length_label") or (f"{bench.split('_')[1].upper()} (runbook length)" if length == cfg.length
                                        else f"profile length {length} (runbook: {cfg.length})")
        not_run = ruler_not_run(cfg, env.prof, bench)
        rep = ruler.run(client, tasks=[t for t in ruler.RULER_TASKS if t not in not_run], not_run=not_run,
                        length=length, label=label,
                        samples_per_task=_pick(get("samples_per_task"), cfg.samples_per_task),
                        timeout_s=_pick(get("timeout_s"), cfg.timeout_s), request_timeout_s=cfg.request_timeout_s,
                        concurrency=cfg.concurrency, work_dir=work, cache_dir=env.prof.work_path("ruler_cache"),
                        offline=env.prof.offline, log=env.log)
    rep.notes = env.notes_for(bench) + rep.notes
    return rep


def sample_prompts(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """``n`` random prompts (the conversation up to the first assistant turn) from SFT rows."""
    cands = []
    for r in rows:
        msgs = r.get("messages") or r.get("prompt") or []
        head = []
        for m in msgs:
            if m.get("role") == "assistant":
                break
            head.append({"role": m["role"], "content": m["content"]})
        if any(m["role"] == "user" for m in head):
            cands.append({"id": f"{r.get('source', '')}:{r.get('id')}", "messages": head})
    rng = random.Random(seed)
    rng.shuffle(cands)
    return cands[:n]
