"""The synth group's Dagster layer: scenarios and two trace partitions on a temp-dir local profile
against the stand-in Messages server (cache, ledger, a failed batch re-run alone, empty and
budget-stopped partitions), execution-graded pairs with known-good/known-bad completions graded
in the real sandbox, the tiny-Qwen2 and vLLM-server samplers, the checkpoint adapter, config."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dagster import AssetKey, materialize

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.curation.stage_io import write_step
from surrogate_dagster.llm.client import LOCAL_KEY, LLMError
from surrogate_dagster.llm.ledger import spent_in_store
from surrogate_dagster.llm.local_server import Fault, MessagesServer
from surrogate_dagster.llm.standin import StandInModel
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.retries import LLM_RETRY
from surrogate_dagster.sources.adapters.base import AdapterContext, sft_row
from surrogate_dagster.storage import make_object_store
from surrogate_dagster.synth import exec_pairs
from surrogate_dagster.synth.assets import (BATCH_KEYS, SYNTH_ASSETS, exec_graded_pairs, load_exec_graded_pairs,
                                            load_orchestrator_traces, orchestrator_traces, synth_scenarios)
from surrogate_dagster.synth.config import (SCENARIOS_PREFIX, TRACES_PREFIX, load_scenarios, read_pointer,
                                            read_table, resolve_llm, resolve_synth, synth_catalog, write_table_set)
from surrogate_dagster.synth.resource import LLMResource, SynthSettings, synth_resources
from tests.support.smoke_gate import gated_instance

CAT = synth_catalog()
TARGET = 45  # 40 seeds + 5 written by the stand-in: batch-000 (25) and batch-001 (20)
FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01, "max_attempts": 3, "breaker_threshold": 3}


def llm_resource(base_url: str, **kw) -> LLMResource:
    return LLMResource(**resolve_llm({"base_url": base_url, "api_key_env": "SURROGATE_UNSET_KEY_FOR_TESTS",
                                      **FAST, **kw}, CAT).model_dump())


def resources(root, llm: LLMResource, **synth) -> dict:
    return {"object_store": ObjectStoreResource(kind="local", root=str(root)), "llm": llm,
            "synth": SynthSettings(**resolve_synth({"target_count": TARGET, "sample_traces": 2, **synth}, CAT)
                                   .model_dump())}


def md(result, name: str) -> dict:
    return {k: v.value for k, v in result.asset_materializations_for_node(name)[-1].metadata.items()}


@pytest.fixture(scope="module")
def scenario_store(tmp_path_factory):
    """synth_scenarios materialized twice with base_url "local" (the resource runs the stand-in)."""
    root = tmp_path_factory.mktemp("store")
    res = resources(root, llm_resource("local"))
    first = materialize([synth_scenarios], resources=res)
    second = materialize([synth_scenarios], resources=res)
    return root, md(first, "synth_scenarios"), md(second, "synth_scenarios")


def test_scenarios_expanded_deduplicated_tagged_and_cached(scenario_store):
    root, m1, m2 = scenario_store
    assert m1["scenarios"] == TARGET and m1["seeds"] == 40 and m1["generated"] == 5 and m1["shortfall"] == 0
    assert 0 < m1["parallel_3plus_steps"] < TARGET and m1["irreversible"] > 0
    assert "NOT Claude" in m1["backend"] and "| id | task |" in m1["sample"]
    assert m1["batch_usd"] > 0 and m1["llm_calls"] >= 1
    assert m1["batches_filled"].startswith("2 of 20 (batch-000, batch-001")
    # the re-run was served from the cache in the object store: nothing paid, same data
    assert m2["batch_usd"] == 0 and m2["llm_calls"] == 0 and m2["cache_hits"] == m1["llm_calls"]
    store = make_object_store({"kind": "local", "root": str(root)})
    ptr, scen = load_scenarios(store)
    assert len(scen) == TARGET and all(s["parallel"] == (s["independent_steps"] >= 3) for s in scen)
    assert store.list("llm-cache/") and spent_in_store(store, ["scenarios"]) == pytest.approx(m1["batch_usd"])


def test_trace_partitions_fail_alone_rerun_from_cache_and_empty_past_target(scenario_store):
    root, _, _ = scenario_store
    store = make_object_store({"kind": "local", "root": str(root)})
    _, scen = load_scenarios(store)
    b1 = scen[25:]
    standin, seen = StandInModel(), []

    def responder(req):  # remembers which scenario each request was about; judge_2 rejects scen[1]
        seen.append(json.dumps(req["messages"][0]["content"]))
        content, stop, label = standin.respond(req)
        if label == "judge" and req["model"] == CAT["models"]["judge_2"] and scen[1]["task"] in seen[-1]:
            content = [{"type": "tool_use", "id": "toolu_v", "name": "record_verdict",
                        "input": {"accept": False, "score": 2, "reasons": ["nothing was verified"]}}]
        return content, stop, label

    with MessagesServer(responder) as srv:
        res = resources(root, llm_resource(srv.url))
        r0 = materialize([orchestrator_traces], partition_key="batch-000", resources=res)
        m0 = md(r0, "orchestrator_traces")
        assert m0["status"] == "complete" and m0["scenarios"] == 25 and m0["kept"] > 0
        assert m0["rejected"] == 1 and m0["batch_usd"] > 0 and m0["budget_stop"] == "none"
        # scen[1] is rejected by judge_2 on every attempt: sampled again up to the catalog's 3 attempts,
        # then one fresh scenario from the writer takes its place and the batch reaches its target
        assert "| judges_rejected | 3 |" in m0["rejected_by_reason"] and m0["rejections"] == 3
        assert m0["stop_reason"] == "target_reached" and m0["accepted"] == m0["kept"] == 25
        assert m0["fresh_scenarios_drawn"] == 1 and m0["fresh_draws"] == 1
        assert m0["attempts"] == 25 + 2 + 1 and m0["target"] == 25 and m0["traces_the_budget_buys"] > 0
        assert "KEPT synth-scn-" in m0["sample_traces"] and "**assistant**" in m0["sample_traces"]
        assert (f"REJECTED (judges) synth-{scen[1]['id']}: claude-sonnet-5-5: nothing was verified"
                in m0["sample_traces"])
        ptr0 = read_pointer(store, f"{TRACES_PREFIX}/batch-000")
        rej = {r["scenario_id"]: r for r in read_table(store, ptr0, "rejected")}
        assert rej[scen[1]["id"]]["reasons"] == ["claude-sonnet-5-5: nothing was verified"]
        assert json.loads(rej[scen[1]["id"]]["trace"])[1]["content"] == scen[1]["task"]
        fresh = read_table(store, ptr0, "fresh_scenarios")
        assert len(fresh) == 1 and fresh[0]["origin"] == "fresh" and fresh[0]["id"].startswith("fresh-")
        assert f"synth-{fresh[0]['id']}" in {r["id"] for r in read_table(store, ptr0, "rows")}
        v0 = read_pointer(store, f"{TRACES_PREFIX}/batch-000")["version"]

        # batch-001: the service goes down at its 4th scenario -> breaker -> the step fails, and
        # stays down through every step retry (LLM_RETRY) -> the partition fails
        attempts = LLM_RETRY.max_retries + 1
        srv.inject(*[Fault("status", 529, match=lambda q, t=b1[3]["task"]: q["messages"][0]["content"] == t)
                     for _ in range(3 * attempts)])
        n = srv.n_requests
        bad = materialize([orchestrator_traces], partition_key="batch-001", resources=res, raise_on_error=False)
        assert not bad.success
        retried = [e.event_specific_data.error for e in bad.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
        assert len(retried) == attempts - 1
        for failure in (r.cause.message for r in retried):  # each attempt failed fast on the breaker
            assert "circuit" in failure and "Re-run this partition alone" in failure
        paid_calls = srv.n_requests - n - 3 * attempts  # the 529s were not billed
        assert read_pointer(store, f"{TRACES_PREFIX}/batch-001") is None
        led = json.loads(store.get_bytes("llm-ledger/batch-001.json"))
        assert len(led["attempts"]) == attempts and list(led["attempts"].values())[0]["batch_usd"] > 0

        n, k, n_items = srv.n_requests, len(seen), len(srv.batch_items)
        srv.inject(Fault("malformed", match=lambda q, t=b1[5]["task"]: q["messages"][0]["content"] == t))
        r1 = materialize([orchestrator_traces], partition_key="batch-001", resources=res)
        m1 = md(r1, "orchestrator_traces")
        assert m1["status"] == "complete" and m1["scenarios"] == 20 and m1["kept"] > 0
        assert "| synthesis:malformed_reply | 1 |" in m1["rejected_by_reason"]  # one scenario, not the batch
        assert m1["cache_hits"] >= paid_calls > 0  # what the failed attempt bought is not bought again
        # billed calls = direct POSTs + requests answered inside message batches, + the malformed reply
        direct = sum(r.method == "POST" and r.path == "/v1/messages" for r in srv.records[n:])
        assert direct + len(srv.batch_items) - n_items == m1["llm_calls"] + 1
        # the re-run touched batch-001 only
        assert seen[k:] and not any(json.dumps(s["task"])[1:-1] in c for c in seen[k:] for s in scen[:25])
        assert read_pointer(store, f"{TRACES_PREFIX}/batch-000")["version"] == v0

        n = srv.n_requests  # re-running a finished batch pays nothing and sends nothing
        again = md(materialize([orchestrator_traces], partition_key="batch-000", resources=res), "orchestrator_traces")
        assert srv.n_requests == n and again["batch_usd"] == 0 and again["kept"] == m0["kept"]

        empty = md(materialize([orchestrator_traces], partition_key="batch-002", resources=res), "orchestrator_traces")
        assert srv.n_requests == n and empty["scenarios"] == 0 and "EMPTY BATCH" in empty["note"]
        assert "batch-001" in empty["note"]
    rows = load_orchestrator_traces(store)
    assert len(rows) == m0["kept"] + m1["kept"] and {r["source"] for r in rows} == {"synth_orchestrator"}
    assert all(r["kind"] == "sft" and json.loads(r["meta"])["validation"]["verdicts"] for r in rows)
    total = sum(a["batch_usd"] for k in ("scenarios", *BATCH_KEYS) if store.exists(f"llm-ledger/{k}.json")
                for a in json.loads(store.get_bytes(f"llm-ledger/{k}.json"))["attempts"].values())
    assert spent_in_store(store, ["scenarios", *BATCH_KEYS]) == pytest.approx(total)


def test_budget_guard_stops_a_batch_and_says_how_far(scenario_store, tmp_path):
    root, _, _ = scenario_store
    src = make_object_store({"kind": "local", "root": str(root)})
    ptr, scen = load_scenarios(src)
    dst = make_object_store({"kind": "local", "root": str(tmp_path)})  # fresh cache, fresh ledger
    write_table_set(dst, SCENARIOS_PREFIX, ptr["version"], {"scenarios": scen}, {"target": ptr["target"]})
    with MessagesServer() as srv:
        res = resources(tmp_path, llm_resource(srv.url, budget_usd=0.6))
        m = md(materialize([orchestrator_traces], partition_key="batch-000", resources=res), "orchestrator_traces")
    assert m["status"] == "stopped by the budget guard" and "in batch batch-000" in m["budget_stop"]
    assert 0 < m["traces_synthesized"] < 25 and m["spent_total_usd"] <= 0.6
    assert m["how_far"].endswith(f"{m['traces_synthesized']} traces")


# ------------------------------------------------------------------------ execution-graded pairs
IS_PRIME_TESTS = ["assert is_prime(2) == True", "assert is_prime(1) == False", "assert is_prime(9) == False",
                  "assert is_prime(97) == True"]
GOOD_PRIME = "```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n" \
             "    while i * i <= n:\n        if n % i == 0:\n            return False\n" \
             "        i += 1\n    return True\n```"
BAD_PRIME = "```python\ndef is_prime(n):\n    return n % 2 == 1\n```"
GOOD_REV = "```python\ndef reverse_words(s):\n    return ' '.join(s.split()[::-1])\n```"
BAD_REV = "```python\ndef reverse_words(s)\n    return s\n```"  # syntax error: gate fails


def _curated(root) -> None:
    store = make_object_store({"kind": "local", "root": str(root)})
    oci = [sft_row(AdapterContext(source="opencodeinstruct"), "oci-1",
                   [{"role": "user", "content": "Write `is_prime(n)`."}, {"role": "assistant", "content": GOOD_PRIME}],
                   meta={"unit_tests": IS_PRIME_TESTS}),
           sft_row(AdapterContext(source="opencodeinstruct"), "oci-2",
                   [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "hi"}],
                   meta={"unit_tests": []})]
    opc = [sft_row(AdapterContext(source="opc_sft_stage2", config="educational_instruct"), "edu-1",
                   [{"role": "user", "content": "Write `reverse_words(s)`."},
                    {"role": "assistant", "content": GOOD_REV}],
                   meta={"testcase": ["assert reverse_words('a b c') == 'c b a'", "assert reverse_words('x') == 'x'"]}),
           sft_row(AdapterContext(source="opc_sft_stage2", config="evol_instruct"), "evol-1",
                   [{"role": "user", "content": "Explain."}, {"role": "assistant", "content": "ok"}])]
    write_step(store, "curated", "opencodeinstruct", "v1", oci)
    write_step(store, "curated", "opc_sft_stage2", "v1", opc)
    # the catalog's other prompt sources (assets/synth.yaml exec_pairs.sources) curated to no rows
    from surrogate_dagster.synth.exec_pairs import exec_pairs_catalog

    for source in set(exec_pairs_catalog().sources) - {"opencodeinstruct", "opc_sft_stage2"}:
        write_step(store, "curated", source, "v1", [])


def fake_generate(prompts: list[str], n: int, temperature: float) -> list[list[str]]:
    """Known completions: good and bad alternate for the python prompts; the DevSecOps prompt gets
    its reference twice (all equal: no pair) ."""
    from surrogate_dagster.synth.graders import load_devsecops_tasks

    ref = {t.prompt: t.reference for t in load_devsecops_tasks()}
    out = []
    for p in prompts:
        if "is_prime" in p:
            out.append([BAD_PRIME, GOOD_PRIME, BAD_PRIME, GOOD_PRIME][:n])
        elif "reverse_words" in p:
            out.append([GOOD_REV, BAD_REV, GOOD_REV, GOOD_REV][:n])
        else:
            out.append([ref[p]] * n)
    return out


def test_exec_graded_pairs_asset_pairs_best_vs_worst(tmp_path, monkeypatch):
    _curated(tmp_path)
    seen = {}

    def sampler(ref, cfg):
        seen["ref"], seen["cfg"] = ref, cfg
        return fake_generate

    monkeypatch.setattr(exec_pairs, "make_sampler", sampler)
    res = resources(tmp_path, llm_resource("local"), model_dir=str(tmp_path / "model"), max_devsecops_prompts=1)
    refused = materialize([exec_graded_pairs], resources=res, instance=gated_instance(passed=False),
                          raise_on_error=False)
    assert not refused.success and seen == {}  # a failed Day-14 verdict: nothing sampled
    result = materialize([exec_graded_pairs], resources=res, instance=gated_instance())
    m = md(result, "exec_graded_pairs")
    assert seen["cfg"].temperature == 1.0 and seen["cfg"].samples_per_prompt == 4
    assert m["prompts"] == 3 and m["pairs"] == 2 and m["samples_per_prompt"] == 4
    assert "![plot](data:image/png;base64," in m["pass_rate_plot"]
    assert "opencodeinstruct:no_tests" in m["prompts_left_out"] and "opc_sft_stage2:no_tests" in m["prompts_left_out"]
    assert "all_scores_equal" in m["no_pair_by_reason"]
    dist = m["pass_rate_distribution"]
    assert dist["overall"]["completions"] == 12
    assert dist["by_kind"]["python"]["passing_samples_per_prompt"] == {"2": 1, "3": 1}
    rows = {r["prompt"][0]["content"]: r for r in load_exec_graded_pairs(make_object_store(
        {"kind": "local", "root": str(tmp_path)}))}
    prime, rev = rows["Write `is_prime(n)`."], rows["Write `reverse_words(s)`."]
    assert prime["chosen"] == GOOD_PRIME and prime["rejected"] == BAD_PRIME
    assert rev["chosen"] == GOOD_REV and rev["rejected"] == BAD_REV
    for r in (prime, rev):
        meta = json.loads(r["meta"])
        assert r["source"] == "exec_graded" and r["kind"] == "dpo" and meta["chosen_score"] > meta["rejected_score"]
    assert json.loads(rev["meta"])["rejected_grade"]["failed_gate"] == "syntax"


def test_exec_graded_pairs_needs_the_checkpoint(tmp_path):
    _curated(tmp_path)
    res = resources(tmp_path, llm_resource("local"), max_devsecops_prompts=1)
    result = materialize([exec_graded_pairs], resources=res, raise_on_error=False, instance=gated_instance())
    msg = [e for e in result.all_events if e.is_step_failure][0].event_specific_data.error.message
    assert not result.success and "stage1_6_checkpoint has not been materialized" in msg


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2

    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny"), layers=1)


def test_transformers_sampler_k_samples_at_temperature(tiny_model):
    from surrogate_dagster.inference import ModelRef

    s = exec_pairs.TransformersSampler(ModelRef("tiny", str(tiny_model)), batch_size=2, max_new_tokens=12, seed=3)
    out = s(["Write a function that returns the sum.", "Write a Dockerfile.", "hi"], 3, 1.0)
    assert [len(x) for x in out] == [3, 3, 3] and all(isinstance(c, str) for x in out for c in x)
    assert len({c for x in out for c in x}) > 3  # sampled, not greedy copies
    assert exec_pairs.TransformersSampler(ModelRef("tiny", str(tiny_model)), batch_size=2, max_new_tokens=12,
                                          seed=3)(["Write a function that returns the sum.", "Write a Dockerfile.",
                                                   "hi"], 3, 1.0) == out  # seeded: a re-run samples the same


def test_vllm_server_sampler_sends_n_and_temperature(tiny_model):
    from surrogate_dagster.inference import ModelRef

    bodies = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            bodies.append(body)
            data = json.dumps({"choices": [{"index": i, "text": f"c{i}"} for i in reversed(range(body["n"]))]}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        s = exec_pairs.VLLMServerSampler(ModelRef("stage1_6_checkpoint", str(tiny_model), adapter_dir="/x"),
                                         base_url=f"http://127.0.0.1:{httpd.server_address[1]}", max_new_tokens=64)
        assert s(["p1", "p2"], 4, 1.0) == [["c0", "c1", "c2", "c3"]] * 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    b = bodies[0]
    assert b["n"] == 4 and b["temperature"] == 1.0 and b["model"] == "stage1_6_checkpoint" and b["max_tokens"] == 64
    assert b["prompt"].startswith("<|im_start|>") and b["prompt"].endswith("<|im_start|>assistant\n")


def test_checkpoint_adapter_downloads_the_stage_pointers_model(tmp_path):
    store = make_object_store({"kind": "local", "root": str(tmp_path / "s")})
    with pytest.raises(FileNotFoundError, match="stage1_6_checkpoint has not been materialized"):
        exec_pairs.checkpoint_model_ref(store, tmp_path / "d")
    # what training/stage_run.py leaves behind for a merged stage
    store.put_bytes("training/stage1_6/_latest.json",
                    json.dumps({"output_prefix": "runs/s16/fp1", "data_version": "fp1", "merged": True}).encode())
    store.put_bytes("runs/s16/fp1/merged/config.json", b"{}")
    store.put_bytes("runs/s16/fp1/merged/sub/model.safetensors", b"weights")
    store.put_bytes("runs/s16/fp1/adapter/adapter_config.json", b"{}")
    ref = exec_pairs.checkpoint_model_ref(store, tmp_path / "d")
    assert ref.model_dir == str(tmp_path / "d/merged") and ref.adapter_dir is None and ref.revision == "fp1"
    assert (tmp_path / "d/merged/sub/model.safetensors").read_bytes() == b"weights"
    (tmp_path / "d/merged/config.json").write_text("kept")  # same tree in the store: not downloaded again
    exec_pairs.checkpoint_model_ref(store, tmp_path / "d")
    assert (tmp_path / "d/merged/config.json").read_text() == "kept"
    store.put_bytes("training/stage1_6/_latest.json",
                    json.dumps({"output_prefix": "runs/s16/fp1", "data_version": "fp1", "merged": False}).encode())
    with pytest.raises(ValueError, match="base_model_dir"):
        exec_pairs.checkpoint_model_ref(store, tmp_path / "e")
    ref = exec_pairs.checkpoint_model_ref(store, tmp_path / "e", base_model_dir="/models/base")
    assert ref.model_dir == "/models/base" and (tmp_path / "e/adapter/adapter_config.json").is_file()


def test_profiles_and_config_validation(monkeypatch):
    local, prod = (synth_resources(load_profile(p)) for p in ("local", "production"))
    assert local["llm"].base_url == "local" and local["synth"].target_count == 50
    assert prod["llm"].base_url is None and prod["llm"].api_key_env == "ANTHROPIC_API_KEY"
    assert prod["synth"].target_count == 500 and len(BATCH_KEYS) == 20 and BATCH_KEYS[-1] == "batch-019"
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        resolve_llm({"api_key_env": "sk-ant-api03-xyz"}, CAT)
    with pytest.raises(ValueError, match="no price for model 'claude-x'"):
        resolve_llm({"models": {"planner": "claude-x"}}, CAT)
    with pytest.raises(ValueError, match="base_url"):
        resolve_llm({"base_url": "anthropic"}, CAT)
    with pytest.raises(ValueError, match="exceeds the catalog"):
        resolve_synth({"target_count": 501}, CAT)
    with pytest.raises(RuntimeError, match="not running"):
        _ = llm_resource("local").endpoint
    monkeypatch.setenv("SURROGATE_TEST_KEY", "sk-real-secret")
    with llm_resource("local", api_key_env="SURROGATE_TEST_KEY").serving() as llm:
        client = llm.make_client(cache_store=None)
        assert client.base_url.startswith("http://127.0.0.1:") and client._sdk.api_key == LOCAL_KEY  # never sent
    remote = llm_resource("https://api.example.invalid", api_key_env="SURROGATE_TEST_KEY")
    assert remote.make_client(cache_store=None)._sdk.api_key == "sk-real-secret"
    monkeypatch.delenv("SURROGATE_TEST_KEY")
    with pytest.raises(LLMError, match="set the environment variable SURROGATE_TEST_KEY"):
        remote.make_client(cache_store=None)
    assert {a.key for a in SYNTH_ASSETS} == {AssetKey("synth_scenarios"), AssetKey("orchestrator_traces"),
                                              AssetKey("exec_graded_pairs"), AssetKey("curated_orchestrator_traces"),
                                              AssetKey("curated_exec_graded_pairs")}
