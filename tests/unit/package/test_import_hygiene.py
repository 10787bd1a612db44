"""Import hygiene, from the source (AST): no private Dagster module is imported anywhere in the
package or the trainer, and the package's modules import each other without a cycle (imports
inside functions count: a deferred import still ties the modules together)."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PACKAGE = "surrogate_dagster"


def _py_files(*roots: str):
    for root in roots:
        base = REPO / root
        if base.exists():
            yield from sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts and ".venv" not in p.parts)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    """Absolute names of every module an import statement in `path` names (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    me = _module_name(path)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(mod)
            out += [f"{mod}.{a.name}" for a in node.names]  # `from pkg import submodule`
    return out


def test_no_private_dagster_imports():
    bad = []
    for path in _py_files(PACKAGE, "trainer"):
        rel = path.relative_to(REPO).as_posix()
        for name in _imports(path):
            if name.startswith("dagster._"):
                bad.append(f"{rel}: {name}")
    assert not bad, "private Dagster imports:\n" + "\n".join(bad)


def test_private_import_finder_finds_a_planted_import(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    (tmp_path / "mod.py").write_text("def f():\n    from dagster._core.definitions import data_version\n")
    assert "dagster._core.definitions" in _imports(tmp_path / "mod.py")


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in _py_files(PACKAGE)}
    graph = {}
    for mod, path in files.items():
        deps = set()
        for name in _imports(path):
            while name and name not in files:  # `pkg.mod.attr` -> the module that defines it
                name = name.rpartition(".")[0]
            if name and name != mod:
                deps.add(name)
        graph[mod] = deps
    return graph



def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    # A package's __init__ importing its own submodules is how packages are built, not a cycle;
    # submodule -> parent package edges are ignored for that reason.
    def edges(m):
        return sorted(d for d in graph[m] if not m.startswith(d + "."))

    color, stack = {}, []

    def visit(m):
        color[m] = 1
        stack.append(m)
        for d in edges(m):
            if color.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in color:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        color[m] = 2
        return None

    for m in sorted(graph):
        if m not in color:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"p": {"p.x"}, "p.x": {"p"}}) is None


# ------------------------------------------------------------------ layers
# The package's top-level parts, lowest first: shared layers, run infrastructure, the shared
# resources, the phases in the order data flows through them, the operations that read every
# phase, and the wiring (code location, CLI). A part imports only parts listed before it (imports
# inside functions count), so the package graph has no cycle and no upward arrow by construction.
LAYERS = (
    "paths", "locks", "metadata", "retries", "memo", "canary", "scrub",  # small shared modules
    "catalog",                                          # typed YAML catalog and profiles
    "settings",                                         # profile models as Dagster resources
    "storage", "hub", "sandbox", "sanitize", "llm", "inference",
    "runtime",                                          # executors, planning, run recovery, k8s
    "resources",                                        # object store and hub resources
    "sources", "curation", "synth", "training", "evals",  # the phases
    "operations",                                       # schedules, sensors, lineage, costs
    "definitions", "cli", "__init__",                   # wiring
)
PHASES = ("sources", "curation", "synth", "training", "evals")


def _part(module: str) -> str | None:
    """The top-level part of the package a module belongs to (None outside the package)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(files: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer module, imported name cut to three parts) for every import of a part that is not
    listed before the importer's own part in LAYERS; an unlisted part is a violation too."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = set()
    for mod, path in files.items():
        mine = _part(mod)
        for name in _imports(path):
            theirs = _part(name)
            if theirs is None or theirs == mine or name == PACKAGE:  # `from package import part` names part too
                continue
            if theirs not in rank or mine not in rank or rank[theirs] >= rank[mine]:
                found.add((mod, ".".join(name.split(".")[:3])))
    return found


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(_module_name(p)) for p in _py_files(PACKAGE)}
    assert parts <= set(LAYERS), f"parts with no place in LAYERS: {sorted(parts - set(LAYERS))}"
    assert list(PHASES) == [p for p in LAYERS if p in PHASES]


def test_each_layer_imports_only_layers_below_it():
    found = layer_violations({_module_name(p): p for p in _py_files(PACKAGE)})
    assert not found, "imports of a layer at or above the importer's:\n" + "\n".join(
        f"{a} -> {b}" for a, b in sorted(found))


def test_layer_checker_finds_planted_upward_imports(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    pkg = tmp_path / PACKAGE
    for sub in ("curation", "evals", "synth", "storage", "runtime"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "curation" / "a.py").write_text("def f():\n    from ..evals.assets import KEY\n")
    (pkg / "evals" / "b.py").write_text("from ..curation import a\nfrom surrogate_dagster.storage import x\n")
    (pkg / "storage" / "c.py").write_text("from surrogate_dagster.synth import s\n")
    (pkg / "runtime" / "d.py").write_text("def g():\n    from ..curation.stage_io import k\n")
    (pkg / "cli.py").write_text("from surrogate_dagster.evals import b\n")
    files = {_module_name(p): p for p in _py_files(PACKAGE)}
    assert layer_violations(files) == {("surrogate_dagster.curation.a", "surrogate_dagster.evals.assets"),
                                       ("surrogate_dagster.storage.c", "surrogate_dagster.synth"),
                                       ("surrogate_dagster.storage.c", "surrogate_dagster.synth.s"),
                                       ("surrogate_dagster.runtime.d", "surrogate_dagster.curation.stage_io")}
