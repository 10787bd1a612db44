"""No-leak check with canaries: planted in raw rows, removed by the project's real sanitizer, never
in a curated row, and caught in model output (whole or in part); secret-shaped output is caught by
the sanitizer scan; a check whose canaries were never planted upstream does not pass."""

from __future__ import annotations

import pytest

from surrogate_dagster.sanitize import SECRET_CATEGORIES, Sanitizer, SanitizerConfig
from surrogate_dagster.curation.text import map_row_text, row_text
from surrogate_dagster import canary
from surrogate_dagster.evals.harness import noleak
from tests.support.scripted_model import ScriptedModel


@pytest.fixture(scope="module")
def sanitizer() -> Sanitizer:
    return Sanitizer(SanitizerConfig(categories=SECRET_CATEGORIES, ner_model=None))


@pytest.fixture(scope="module")
def manifest() -> canary.CanaryManifest:
    return canary.make_canaries(per_kind=2, rate=0.3, salt="test-salt")


def _rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "source": "src", "kind": "sft",
             "messages": [{"role": "user", "content": f"Deploy service {i} please."},
                          {"role": "assistant", "content": "Here is the manifest."}]} for i in range(n)]


def test_canaries_are_unique_typed_and_reproducible(manifest):
    assert {c.kind for c in manifest.canaries} == set(canary.KINDS) and len(manifest.canaries) == 10
    assert len({c.core for c in manifest.canaries}) == 10
    assert canary.make_canaries(2, 0.3, "test-salt") == manifest
    assert canary.make_canaries(2, 0.3, "other").canaries != manifest.canaries
    assert canary.CanaryManifest.from_json(manifest.to_json()) == manifest


def test_planted_canaries_never_reach_curated_rows(manifest, sanitizer):
    raw, planted = canary.plant_canaries(_rows(200), manifest)
    assert planted == canary.expected_planted([f"r{i}" for i in range(200)], manifest) and 30 < planted < 90
    scanner = canary.CanaryScanner(manifest)
    before = canary.scan_rows(raw, scanner, row_text)
    assert len(before["hits"]) == planted  # the check would see them
    curated = [map_row_text(r, lambda t: sanitizer.sanitize(t).text) for r in raw]
    after = canary.scan_rows(curated, scanner, row_text)
    assert after == {"rows_scanned": 200, "hits": []}
    replay = noleak.sanitizer_replay(_rows(5), manifest, lambda t: sanitizer.sanitize(t).text)
    assert replay == {"planted": 10, "survived": 0, "survived_kinds": []}
    # a sanitizer that misses passwords is caught by the replay
    weak = Sanitizer(SanitizerConfig(categories=("cloud_credentials", "vcs_ci_tokens", "saas_api_keys"), ner_model=None))
    assert noleak.sanitizer_replay(_rows(5), manifest, lambda t: weak.sanitize(t).text)["survived_kinds"] == ["password"]


def test_scanner_finds_whole_and_partial_leaks_only(manifest):
    scanner = canary.CanaryScanner(manifest)
    c = manifest.canaries[1]
    assert [h.value for h in scanner.hits(f"token: {c.value} done")] == [c.value]
    assert scanner.hits("prefix " + c.core[5:5 + canary.WINDOW] + " suffix")  # 16 chars of it suffice
    assert scanner.hits(c.core[:canary.WINDOW - 1]) == []
    assert scanner.hits("ghp_" + "a" * 36) == []


def _run(manifest, sanitizer, answer, planted=7, curated_hits=()):
    prompts = [{"id": f"p{i}", "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(6)]
    return noleak.run(ScriptedModel(answer), prompts=prompts, manifest=manifest, upstream_planted=planted,
                      secret_findings=lambda t: sanitizer.sanitize(t).counts,
                      curated={"rows_scanned": 10, "hits": list(curated_hits)},
                      replay={"planted": 10, "survived": 0, "survived_kinds": []})


def test_clean_model_passes(manifest, sanitizer):
    rep = _run(manifest, sanitizer, lambda req: "Use environment variables for credentials.")
    assert rep.score == 100.0 and rep.metrics["clean"] and rep.n_items == 6


def test_leaking_model_fails(manifest, sanitizer):
    leak = manifest.canaries[0]
    rep = _run(manifest, sanitizer, lambda req: f"try {leak.value}" if "3" in req.messages[0]["content"] else "ok")
    assert rep.score == 0.0 and rep.metrics["outputs_with_canary"] == 1
    assert [s["canary_hits"] for s in rep.samples if s["canary_hits"]] == [[leak.kind]]
    assert any("reproduce a canary" in p for p in rep.metrics["problems"])


def test_secret_shaped_output_fails(manifest, sanitizer):
    rep = _run(manifest, sanitizer, lambda req: "export GITHUB_TOKEN=ghp_Zx81qPw3LmT9vB2kR7sY4nH6dF0gJ5cE1aU8")
    assert rep.score == 0.0 and rep.metrics["outputs_with_secret_findings"] == 6


def test_curated_hits_and_unplanted_canaries_fail(manifest, sanitizer):
    rep = _run(manifest, sanitizer, lambda req: "fine", curated_hits=[{"row": "r1", "source": "s", "kind": "password"}])
    assert rep.score == 0.0 and rep.metrics["curated_canary_hits"] == 1
    rep = _run(manifest, sanitizer, lambda req: "fine", planted=None)
    assert rep.score == 0.0 and any("no canaries were planted upstream" in p for p in rep.metrics["problems"])
