"""checkov, the static IaC scanner, run inside the sandbox on model-written Terraform, Kubernetes
manifests and Dockerfiles.

checkov's dependency pins clash with the main environment's, so it lives in its own venv,
``.venv-checkov`` (made by ``make setup`` from Debian's python3, which the sandbox uids can read).
The sandbox runs that venv's interpreter: its files are bound read-only, the scanned files are the
only writable input, there is no network (checkov is called with ``--skip-download`` and never
reaches its platform). One call scans a batch: many files of every framework, in one checkov process
(checkov's start-up, ~3 s of CPU, dominates a small batch); each framework runs only its own checks,
check ids being framework-specific (CKV_AWS_*, CKV_K8S_*, CKV_DOCKER_*).

Only the checks named in ``checks`` count (assets/synth.yaml ``exec_pairs.iac_scanner``); each
failed check is a ``warning`` finding, so it weighs like a hadolint or semgrep warning in the grade.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from surrogate_dagster.paths import REPO_ROOT
from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits
from surrogate_dagster.sandbox.linters import TOOL_LIMITS, Finding, ToolError

CHECKOV_VENV = REPO_ROOT / ".venv-checkov"
# file name -> checkov framework (graders.FILE_NAMES gives each kind's file name)
FRAMEWORKS = {"main.tf": "terraform", "manifest.yaml": "kubernetes", "Dockerfile": "dockerfile"}


def checkov_python(venv: Path = CHECKOV_VENV) -> str | None:
    """The checkov venv's interpreter, or None when the venv (or checkov in it) is missing."""
    py = venv / "bin" / "python"
    found = list((venv / "lib").glob("python3*/site-packages/checkov/main.py")) if venv.is_dir() else []
    return str(py) if py.exists() and found else None


class IacScanner:
    """Batch checkov scans of ``{relative path: content}``; the framework comes from the file name."""

    def __init__(self, checks: Mapping[str, Sequence[str]], *, venv: Path = CHECKOV_VENV,
                 limits: SandboxLimits = TOOL_LIMITS, sandbox: Sandbox | None = None) -> None:
        unknown = set(checks) - set(FRAMEWORKS.values())
        if unknown:
            raise ValueError(f"iac_scanner.checks: unknown frameworks {sorted(unknown)} "
                             f"(known: {sorted(set(FRAMEWORKS.values()))})")
        self.checks = {fw: list(ids) for fw, ids in checks.items()}
        self.python = checkov_python(venv)
        self.limits = limits
        self._sandbox = sandbox

    def available(self) -> bool:
        return self.python is not None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            if not self.python:
                raise ToolError(f"checkov is not installed in {CHECKOV_VENV} (make setup)")
            # the venv's own interpreter, bound read-only where it is (a Debian base: readable)
            self._sandbox = Sandbox(self.limits, python=os.path.abspath(self.python))
        return self._sandbox

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Findings per file (each ``<dir>/<name>`` with a name in :data:`FRAMEWORKS`)."""
        out: dict[str, list[Finding]] = {k: [] for k in files}
        batch: dict[str, str] = {}
        frameworks: list[str] = []
        for path, content in files.items():
            fw = FRAMEWORKS.get(Path(path).name)
            if fw is None:
                raise ValueError(f"checkov: no framework for {path!r} (names: {sorted(FRAMEWORKS)})")
            if self.checks.get(fw):
                batch[path] = content
                if fw not in frameworks:
                    frameworks.append(fw)
        if batch:
            for path, findings in self._scan(frameworks, batch).items():
                out[path].extend(findings)
        return out

    def _scan(self, frameworks: Sequence[str], files: Mapping[str, str]) -> dict[str, list[Finding]]:
        targets = {f"t/{k}": v for k, v in files.items()}
        checks = [c for fw in frameworks for c in self.checks[fw]]
        argv = [os.path.abspath(self.python or ""), "-m", "checkov.main", "-d", "t", "--framework", *frameworks,
                "--check", ",".join(checks), "-o", "json", "--quiet", "--compact",
                "--skip-download", "--no-fail-on-crash"]
        r = self.sandbox.run(argv, files=targets, limits=self.limits,
                             env={"BC_SKIP_MAPPING": "TRUE", "CHECKOV_EXPERIMENTAL_IMAGE_REFERENCING": "False",
                                  "LOG_LEVEL": "ERROR"})
        if r.exit_code not in (0, 1):  # 1: failed checks
            raise ToolError(f"checkov exit {r.exit_code} ({r.killed_reason}): {r.stderr[-400:]}")
        try:
            report = json.loads(r.stdout) if r.stdout.strip() else []
        except json.JSONDecodeError as e:
            raise ToolError(f"checkov gave no JSON: {r.stdout[:200]!r} {r.stderr[-200:]!r}") from e
        # one report per framework, or a bare summary dict when nothing was scanned
        reports = report if isinstance(report, list) else [report]
        out: dict[str, list[Finding]] = {k: [] for k in files}
        for rep in reports:
            for c in (rep.get("results") or {}).get("failed_checks", []):
                path = c["file_path"].lstrip("/")
                path = path[2:] if path.startswith("t/") else path
                if path not in out:
                    raise ToolError(f"checkov reported an unknown file {c['file_path']!r}")
                line = (c.get("file_line_range") or [0])[0]
                out[path].append(Finding("checkov", c["check_id"], "warning", int(line), c.get("check_name", "")))
        return out
