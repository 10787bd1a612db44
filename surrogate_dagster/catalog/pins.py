"""Pin catalog entries to commit shas: resolve a branch head on the hub, rewrite one YAML line.

`sources.yaml` is edited as text, not re-dumped, so its comments and layout survive: only the
`revision:` line of the named entry changes (or is inserted after its `hf_id:` line). The file is
read with plain YAML here, not through the validated model, because the point of this module is
to repair entries the model refuses (unpinned ones). No Dagster imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from .loader import parse_yaml
from .models import is_pinned

# The hub client's interface, duck-typed: current_revision(hf_id, ref) -> sha.
OFFLINE_NOTE = "offline-mirror pin, NOT a Hub sha: re-resolve online before the first production run"

_ENTRY = re.compile(r"^(?P<indent>\s*)-\s+name:\s*(?P<name>[A-Za-z0-9_]+)\s*(#.*)?$")
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][\w-]*):(?P<rest>.*)$")
_SECTION = re.compile(r"^[A-Za-z_][\w-]*:")  # a top-level key ends the entry list


@dataclass(frozen=True)
class PinChange:
    name: str
    hf_id: str
    old: str | None
    new: str
    ref: str


def catalog_entries(text: str) -> dict[str, dict]:
    """name -> raw entry (sources and helpers) of a sources.yaml text, unvalidated."""
    data = parse_yaml(text) or {}  # a repeated key is refused here too: which entry would be pinned?
    return {e["name"]: e for section in ("sources", "helpers") for e in data.get(section) or []
            if isinstance(e, dict) and "name" in e}


def offline_mirror_pins(text: str) -> list[str]:
    """The entries of a sources.yaml text whose revision line carries OFFLINE_NOTE, in file order."""
    lines = text.splitlines()
    out = []
    for name in catalog_entries(text):
        start, end = _entry_span(lines, name)
        if any(OFFLINE_NOTE in line and line.lstrip().startswith("revision:") for line in lines[start:end]):
            out.append(name)
    return out


def _entry_span(lines: list[str], name: str) -> tuple[int, int]:
    """[start, end) line range of the list entry `- name: <name>`."""
    start = None
    for i, line in enumerate(lines):
        m = _ENTRY.match(line)
        if start is None:
            if m and m.group("name") == name:
                start = i
            continue
        if m or _SECTION.match(line):
            # Comment lines right above the next entry belong to that entry.
            end = i
            while end - 1 > start and lines[end - 1].lstrip().startswith("#"):
                end -= 1
            return start, end
    if start is None:
        raise KeyError(f"no entry `- name: {name}` in the catalog")
    return start, len(lines)


def set_revision(text: str, name: str, sha: str, note: str | None = None) -> str:
    """`text` with entry `name` pinned to `sha`; every other line is kept byte for byte.

    The line gets `# <note>` when a note is given, and keeps its old comment otherwise.
    """
    if not is_pinned(sha):
        raise ValueError(f"{sha!r} is not a 40-hex commit sha")
    lines = text.splitlines(keepends=True)
    start, end = _entry_span(lines, name)
    field_indent = None
    hf_line = None
    for i in range(start, end):
        body = lines[i].rstrip("\n")
        if i == start:
            field_indent = len(body) - len(body.lstrip()) + 2  # "- " opens the first field
            continue
        m = _KEY.match(body)
        if not m:
            continue
        if m.group("key") == "hf_id":
            hf_line = i
        if m.group("key") == "revision":
            old_comment = ""
            if "#" in m.group("rest"):
                old_comment = "  #" + m.group("rest").split("#", 1)[1].rstrip()
            comment = f"  # {note}" if note else old_comment
            lines[i] = f"{m.group('indent')}revision: {sha}{comment}\n"
            return "".join(lines)
    if hf_line is None:
        raise KeyError(f"entry {name!r} has no hf_id line")
    comment = f"  # {note}" if note else ""
    lines.insert(hf_line + 1, f"{' ' * field_indent}revision: {sha}{comment}\n")
    return "".join(lines)


def pin_sources(path: Path, hub, names: list[str] | None = None, ref: str = "main",
                offline: bool = False, today: date | None = None) -> list[PinChange]:
    """Resolve `ref` of each named entry (default: every unpinned one) and rewrite `path`.

    An offline hub's shas are the fixture mirror's, so those lines are marked with OFFLINE_NOTE;
    online pins note the ref and the day they were resolved.
    """
    text = path.read_text(encoding="utf-8")
    entries = catalog_entries(text)
    if names:
        unknown = [n for n in names if n not in entries]
        if unknown:
            raise KeyError(f"not in {path}: {unknown}")
        todo = names
    else:
        todo = [n for n, e in entries.items() if not is_pinned(str(e.get("revision") or "main"))]
    changes = []
    for name in todo:
        entry = entries[name]
        sha = hub.current_revision(entry["hf_id"], ref)
        note = OFFLINE_NOTE if offline else f"{ref} of {entry['hf_id']} on {(today or date.today()).isoformat()}"
        text = set_revision(text, name, sha, note)
        changes.append(PinChange(name, entry["hf_id"], entry.get("revision"), sha, ref))
    if changes:
        path.write_text(text, encoding="utf-8")
    return changes
