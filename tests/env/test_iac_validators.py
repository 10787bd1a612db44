"""checkov in the sandbox: known-bad Terraform, Kubernetes and Dockerfile samples fail the listed
checks, good ones pass, and the grader scores the bad ones lower."""

from __future__ import annotations


import pytest
import yaml

from surrogate_dagster.sandbox.iac import IacScanner, checkov_python
from surrogate_dagster.synth.graders import Grader, GradingTask, iac_checks, load_devsecops_tasks


needs_checkov = pytest.mark.skipif(checkov_python() is None, reason="checkov venv absent (.venv-checkov): make setup")

BAD_TF = '''resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
  acl    = "public-read-write"
}

resource "aws_security_group" "ssh" {
  name = "ssh"
  ingress {
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
'''
GOOD_TF = '''resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
}

resource "aws_security_group" "ssh" {
  name = "ssh"
  ingress {
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/8"]
  }
}
'''
BAD_K8S = '''apiVersion: v1
kind: Pod
metadata:
  name: debug
spec:
  hostNetwork: true
  containers:
    - name: shell
      image: busybox:latest
      securityContext:
        privileged: true
'''
GOOD_K8S = '''apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 10001
  containers:
    - name: web
      image: nginx:1.27.0
      securityContext:
        allowPrivilegeEscalation: false
'''
BAD_DOCKERFILE = "FROM ubuntu:latest\nADD app.tar.gz /app\nEXPOSE 22\nCMD [\"/app/run\"]\n"
GOOD_DOCKERFILE = ("FROM python:3.12-slim\nCOPY app /app\nRUN useradd --uid 10001 app\nUSER 10001\n"
                   "EXPOSE 8000\nCMD [\"python\", \"/app/main.py\"]\n")


@needs_checkov
def test_checkov_fails_the_bad_samples_and_passes_the_good_ones():
    scanner = IacScanner(iac_checks())
    out = scanner.scan({"bad/main.tf": BAD_TF, "good/main.tf": GOOD_TF,
                        "bad/manifest.yaml": BAD_K8S, "good/manifest.yaml": GOOD_K8S,
                        "bad/Dockerfile": BAD_DOCKERFILE, "good/Dockerfile": GOOD_DOCKERFILE})
    rules = {k: {f.rule for f in v} for k, v in out.items()}
    assert {"CKV_AWS_20", "CKV_AWS_57", "CKV_AWS_24"} <= rules["bad/main.tf"]
    assert {"CKV_K8S_16", "CKV_K8S_19", "CKV_K8S_14", "CKV_K8S_23"} <= rules["bad/manifest.yaml"]
    assert {"CKV_DOCKER_1", "CKV_DOCKER_4", "CKV_DOCKER_7", "CKV_DOCKER_3"} <= rules["bad/Dockerfile"]
    assert rules["good/main.tf"] == rules["good/manifest.yaml"] == rules["good/Dockerfile"] == set()
    assert all(f.tool == "checkov" and f.severity == "warning" and f.line >= 1 for v in out.values() for f in v)
    # only the listed checks count: with none listed for a framework, its files are not scanned
    assert IacScanner({"terraform": ["CKV_AWS_41"]}).scan({"bad/main.tf": BAD_TF, "bad/Dockerfile": BAD_DOCKERFILE}) \
        == {"bad/main.tf": [], "bad/Dockerfile": []}


@needs_checkov
def test_grader_scores_checkov_findings_as_lint():
    grader = Grader(workers=2, iac=IacScanner(iac_checks()))
    fence = {"terraform": "hcl", "kubernetes": "yaml", "dockerfile": "dockerfile"}
    samples = {"terraform": (GOOD_TF, BAD_TF), "kubernetes": (GOOD_K8S, BAD_K8S),
               "dockerfile": (GOOD_DOCKERFILE, BAD_DOCKERFILE)}
    items = []
    for kind, (good, bad) in samples.items():
        task = GradingTask(id=f"iac-{kind}", kind=kind, prompt="Write it.", meta={"k8s_version": "1.30.0"})
        items += [(task, f"```{fence[kind]}\n{good}```"), (task, f"```{fence[kind]}\n{bad}```")]
    grades = grader.grade_many(items)
    for kind, good, bad in zip(samples, grades[0::2], grades[1::2]):
        ck_good = next(c for c in good.checks if c.name == "checkov")
        ck_bad = next(c for c in bad.checks if c.name == "checkov")
        assert ck_good.passed and ck_good.score == 1.0, (kind, ck_good.detail)
        assert not ck_bad.passed and ck_bad.role == "lint" and ck_bad.score < 1.0, kind
        assert good.score > bad.score and not bad.passed, kind


@needs_checkov
def test_every_training_reference_passes_checkov_and_the_default_grader_runs_without_it():
    tasks = [t for t in load_devsecops_tasks() if t.kind in ("terraform", "kubernetes", "dockerfile")]
    grades = Grader(workers=2, iac=IacScanner(iac_checks())).grade_many([(t, t.reference) for t in tasks])
    assert len(tasks) >= 9
    for t, g in zip(tasks, grades):
        assert "checkov" in [c.name for c in g.checks] and g.score == 1.0 and g.passed, (t.id, g.checks)
    # without a scanner (the DevSecOps eval) there is no checkov check
    plain = Grader(workers=2).grade(tasks[0], tasks[0].reference)
    assert "checkov" not in [c.name for c in plain.checks]
