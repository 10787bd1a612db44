"""The DevSecOps eval: the seed (>= 10 per category, every reference passes its validators, no
task's validators accept another task's reference), the LLM expansion's acceptance rules (through
the real LLM client and a local Messages API server), and scoring answers in the sandbox."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.harness import devsecops as D
from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.local_server import MessagesServer
from surrogate_dagster.synth.graders import Grader
from tests.support.scripted_model import ScriptedModel
from tests.unit.evals.test_devsecops_seed import seed


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(trust_unsealed=D.TRUST_UNSEALED)  # as the eval grades


def test_every_reference_passes_and_validators_discriminate(seed, grader):
    cats = D.by_category(seed.tasks)
    items = [(t, t.reference) for t in seed.tasks]
    items += [(t, ts[(i + 1) % len(ts)].reference) for ts in cats.values() for i, t in enumerate(ts)]
    grades = grader.grade_many(items)
    n = len(seed.tasks)
    bad = [(t.id, [c.name for c in g.checks if not c.passed]) for (t, _), g in zip(items[:n], grades[:n]) if not g.passed]
    assert bad == []
    lax = [t.id for (t, _), g in zip(items[n:], grades[n:]) if g.passed]
    assert lax == []


NEW_OK = {"id": "redis-nonroot", "prompt": "Write a Dockerfile for a Redis-backed Celery worker (worker.py) on "
          "python:3.11-slim that installs celery with pip without cache and runs celery as a non-root user.",
          "asserts": ["instructions('FROM')[0].split()[0].startswith('python:3.11')",
                      "any('celery' in r and '--no-cache-dir' in r for r in instructions('RUN'))",
                      "len(instructions('USER')) > 0 and instructions('USER')[-1] not in ('root', '0')"],
          "reference": "```dockerfile\nFROM python:3.11-slim\nWORKDIR /app\nRUN pip install --no-cache-dir "
                       "celery==5.4.0\nCOPY worker.py .\nRUN useradd --no-log-init --uid 10001 worker\nUSER 10001\n"
                       "CMD [\"celery\", \"-A\", \"worker\", \"worker\"]\n```"}
NEW_BAD_REF = {**NEW_OK, "id": "bad-ref", "prompt": "Write a Dockerfile for a PHP 8.3 FPM app that runs as www-data.",
               "asserts": ["instructions('FROM')[0].startswith('php:8.3-fpm')"]}
NEW_VACUOUS = {**NEW_OK, "id": "vacuous", "prompt": "Write a Dockerfile for a Ruby on Rails 7 app with Puma.",
               "asserts": ["len(instructions('FROM')) >= 1"]}
NEW_DUP = {**NEW_OK, "id": "dup"}
NEW_MALFORMED = {"id": "no-reference", "prompt": "Write a Dockerfile.", "asserts": ["True"]}


def _responder(req):
    cat = "dockerfile" if "category 'dockerfile'" in req["messages"][0]["content"] else None
    tasks = [NEW_OK, NEW_BAD_REF, NEW_VACUOUS, NEW_DUP, NEW_MALFORMED] if cat else []
    if not tasks:
        return [{"type": "text", "text": "I would rather not."}], "end_turn", "test"
    return [{"type": "tool_use", "id": "toolu_1", "name": "record_eval_tasks", "input": {"tasks": tasks}}], \
        "tool_use", "test"


def test_expansion_keeps_only_validated_tasks(seed, grader):
    with MessagesServer(_responder) as server:
        client = LLMClient(models={"scenario_writer": "claude-sonnet-4-5"},
                           prices={"claude-sonnet-4-5": {"input": 3.0, "output": 15.0}}, max_tokens=8192,
                           base_url=server.url, api_key_env=None)
        tasks, stats = D.expand(client, grader, seed, target_total=55, max_rounds=1)
    assert stats["kept"]["dockerfile"] == 11 and stats["total"] == 51 and stats["shortfall"] == 4
    new = [t for t in tasks if t.source == "devsecops_eval_llm"]
    assert [t.prompt for t in new] == [NEW_OK["prompt"]] and new[0].id.startswith("dockerfile-llm-011")
    rej = stats["rejected"]
    assert rej["reference_fails"] == 1 and rej["validators_accept_another_tasks_answer"] == 1
    assert rej["near_duplicate"] == 1 and rej["malformed"] == 1 and rej["no_tasks_in_reply"] == 4
    again = D.tasks_from_json(D.tasks_to_json(tasks))
    assert [t.id for t in again] == [t.id for t in tasks]


def test_run_scores_answers_by_category(seed, grader):
    tasks = [D.by_category(seed.tasks)[c][0] for c in D.CATEGORIES]
    answers = {t.prompt: t.reference for t in tasks[:3]}  # right for three categories, prose for two
    rep = D.run(ScriptedModel(lambda req: answers.get(req.messages[1]["content"], "Just use best practices.")),
                grader, tasks, expansion={"target_total": 280})
    assert rep.score == 60.0 and rep.n_items == 5
    assert rep.metrics["pass_rate_by_category"] == {"dockerfile": 100.0, "kubernetes": 100.0, "terraform": 100.0,
                                                    "bash": 0.0, "cve": 0.0}
    assert any("of the 280 target tasks" in n for n in rep.notes)
