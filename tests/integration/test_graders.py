"""Graders score real executions and lint runs; pairs take best vs worst.

One batch grades everything (semgrep runs once per batch), so the file stays well under 60 s.
"""

from __future__ import annotations

import json

import pytest

from surrogate_dagster.synth.graders import Grader, load_devsecops_tasks, task_from_opencodeinstruct
from surrogate_dagster.synth.pairs import make_pair, pass_rate_summary, scored_from_grades
from tests.unit.synth.test_grading_logic import GOOD

OCI_ROW = {"id": "oci-1", "input": "Write `is_prime(n)`.",
           "unit_tests": json.dumps(["assert is_prime(2) == True", "assert is_prime(1) == False",
                                     "assert is_prime(9) == False", "assert is_prime(97) == True",
                                     "assert is_prime(-7) == False", "assert is_prime(("])}
PARTIAL = "```python\ndef is_prime(n):\n    return n % 2 == 1 or n == 2\n```"  # 9 and 1 and -7 wrong
INSECURE = "```python\ndef is_prime(n):\n    n = eval(str(n))\n    if n < 2:\n        return False\n" \
           "    return all(n % i for i in range(2, int(n ** 0.5) + 1))\n```"
LOOPS = "```python\ndef is_prime(n):\n    while True:\n        pass\n```"
SYNTAX = "```python\ndef is_prime(n)\n    return True\n```"
PROSE = "I would use trial division up to the square root."

BAD_DEVSECOPS = {
    "dockerfile-flask-gunicorn": "```dockerfile\nFROM python\nRUN curl -s https://x.sh | sh\n"
                                 "COPY . .\nCMD python app.py\n```",
    "bash-top-words": "```bash\ncat $1 | sort | uniq -c\n```",
    "terraform-private-s3": "```hcl\nresource \"aws_s3_bucket\" \"b\" {\n  bucket = \"acme-logs\"\n"
                            "  acl    = \"public-read\"\n}\n```",
    "kubernetes-hardened-deployment": "```yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\n"
                                      "spec:\n  replicas: 3\n  bogusField: 1\n```",
    "kubernetes-db-networkpolicy": "```yaml\nkind: [unclosed\n```",
}


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader()


@pytest.fixture(scope="module")
def batch(grader: Grader):
    """Grade python samples, every DevSecOps reference and a bad answer per kind in one batch."""
    py = task_from_opencodeinstruct(OCI_ROW)
    dso = load_devsecops_tasks()
    by_id = {t.id: t for t in dso}
    items = [(py, c) for c in (GOOD, PARTIAL, INSECURE, LOOPS, SYNTAX, PROSE)]
    items += [(t, t.reference) for t in dso]
    items += [(by_id[k], v) for k, v in BAD_DEVSECOPS.items()]
    grades = grader.grade_many(items)
    return py, dso, items, grades


def test_python_scores_follow_the_tests(batch) -> None:
    py, _, _, grades = batch
    assert py.meta["tests_dropped"] == 1 and len(py.tests) == 5
    good, partial, insecure, loops, syntax, prose = grades[:6]
    assert good.score == 1.0 and good.passed
    tests = {c.name: c for c in partial.checks}["tests"]
    assert tests.detail["passed"] == 2 and tests.detail["total"] == 5 and not partial.passed
    assert insecure.score < good.score and not insecure.passed  # all tests pass, eval() is flagged
    assert {c.name: c for c in insecure.checks}["tests"].score == 1.0
    assert any(f["rule"] == "py-eval-exec-dynamic" for f in {c.name: c for c in insecure.checks}["semgrep"].detail["findings"])
    assert loops.score == 0.0 and {c.name: c for c in loops.checks}["tests"].detail["errors"] == ["timeout"] * 5
    assert (syntax.score, syntax.failed_gate) == (0.0, "syntax")
    assert prose.failed_gate == "syntax" and prose.score == 0.0


def test_devsecops_references_pass_and_bad_answers_do_not(batch) -> None:
    _, dso, items, grades = batch
    refs = grades[6:6 + len(dso)]
    kinds = {t.kind for t in dso}
    assert kinds == {"dockerfile", "bash", "terraform", "kubernetes"}
    for t, g in zip(dso, refs):
        assert g.passed and g.score == 1.0, (t.id, [(c.name, c.score, c.detail) for c in g.checks if c.score < 1])
    bad = dict(zip(BAD_DEVSECOPS, grades[6 + len(dso):]))
    ref_score = {t.id: g.score for t, g in zip(dso, refs)}
    for tid, g in bad.items():
        assert g.score < ref_score[tid] and not g.passed, tid
    docker = {c.name: c for c in bad["dockerfile-flask-gunicorn"].checks}
    assert {f["rule"] for f in docker["semgrep"].detail["findings"]} >= {"docker-curl-pipe-shell"}
    assert {f["rule"] for f in docker["hadolint"].detail["findings"]} >= {"DL3006"}
    assert {c.name: c for c in bad["bash-top-words"].checks}["cases"].score < 1
    tf = {c.name: c for c in bad["terraform-private-s3"].checks}
    assert any(f["rule"] == "tf-s3-public-acl" for f in tf["semgrep"].detail["findings"])
    assert bad["kubernetes-hardened-deployment"].failed_gate == "schema"
    assert bad["kubernetes-db-networkpolicy"].failed_gate == "parse"


def test_pairs_take_best_and_worst(batch) -> None:
    py, _, items, grades = batch
    completions = [c for _, c in items[:4]]
    scored = scored_from_grades(completions, grades[:4])
    row, reason = make_pair(py.id, py.prompt, scored, task_source=py.source)
    assert reason is None and row["kind"] == "dpo"
    assert row["chosen"] == GOOD and row["rejected"] == LOOPS
    meta = json.loads(row["meta"])
    assert meta["chosen_score"] == 1.0 and meta["rejected_score"] == 0.0 and meta["k"] == 4
    assert row["prompt"] == [{"role": "user", "content": py.prompt}]
    summary = pass_rate_summary([scored])
    assert summary["completions"] == 4 and summary["passing_samples_per_prompt"] == {1: 1}
    assert summary["pairable_prompts"] == 1 and summary["pass_rate"] == 0.25
