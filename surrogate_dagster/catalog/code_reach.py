"""What code computes an asset, read from the source: the definitions its function reaches.

Starting from one top-level definition (an asset's function, or the factory that builds a family
of assets), `reach` follows every name the definition's body uses (its annotations and
decorators left out: they type and register the function, they do not compute its output):

- a name defined at the top of the same module (a helper function, a class, a constant) is
  reached and followed in turn;
- a name imported from a module of this package (at module level or inside the function) is
  looked up in that module and followed there, through re-exports (`from .engine import X` in a
  package's `__init__`); a name that is itself a module (`from . import heuristics`) reaches all
  of that module's definitions;
- a sibling module run by path rather than imported (`Path(__file__).with_name("x_runner.py")`:
  a script another interpreter runs, such as a grader in its own venv) reaches all of that
  module's definitions, as if imported whole.

Layers that store, record or schedule bytes without deciding them (`OPAQUE_LAYERS`) are not
followed: an edit there changes no row. Every other layer is (the phases, the sanitizer, the
sandbox, the LLM and inference clients, the hub client).

Each reached definition is digested in parsed form (`ast.dump`), so comments and layout do not
count and any change to code or docstrings does. `module_digests` folds them per module.

`config_attributes` reports which attributes of a configuration object (a module-level name
such as `CURATION`) the reached code reads, or `None` when some reached code uses the object
whole: the asset's config hash then covers only those sections.

`local_reads` does the same for a name that is not module-level, a resource parameter such as
`curation`: the attributes read on that name anywhere in the reached code (`curation.ner_model`
in the asset, `curation.workers` in a helper taking `curation`), so a profile setting counts for
exactly the assets whose code reads it.

Pure logic: files are read from the package directory, never imported.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

OPAQUE_LAYERS = frozenset({"paths", "metadata", "retries", "memo", "scrub", "catalog", "storage", "runtime",
                           "resources"})
WHOLE = None  # config_attributes: the object is used as a whole


@dataclass(frozen=True)
class ModuleIndex:
    """Top-level definitions and imports of one module file."""

    name: str                                   # dotted, relative to the package ("curation.assets")
    defs: dict[str, ast.AST]                    # name -> FunctionDef / ClassDef / Assign node
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, attribute or None)


@dataclass
class Reach:
    """The definitions reached from an entry point, and the config attributes read on the way."""

    nodes: dict[tuple[str, str], ast.AST] = field(default_factory=dict)  # (module, name) -> node
    config_reads: dict[tuple[str, str], set[str] | None] = field(default_factory=dict)
    local_reads: dict[str, set[str]] = field(default_factory=dict)  # local name -> attributes read

    def module_digests(self) -> dict[str, str]:
        """{module: hash of its reached definitions}, sorted by module."""
        by_module: dict[str, list[tuple[str, str]]] = {}
        for (mod, name), node in self.nodes.items():
            by_module.setdefault(mod, []).append((name, _digest(node)))
        return {m: hashlib.sha256(repr(sorted(v)).encode()).hexdigest() for m, v in sorted(by_module.items())}


def _digest(node: ast.AST) -> str:
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()


def _module_file(root: Path, module: str) -> Path | None:
    rel = Path(*module.split("."))
    if (root / rel / "__init__.py").is_file():
        return root / rel / "__init__.py"
    if (root / rel).with_suffix(".py").is_file():
        return (root / rel).with_suffix(".py")
    return None


def _resolve(current: str, is_package: bool, level: int, module: str | None, package: str) -> str | None:
    """The package-relative dotted name an import names, or None when it is outside the package."""
    if level:
        base = current.split(".") if is_package else current.split(".")[:-1]
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join(base + ([module] if module else [])) if (base or module) else ""
    if module == package:
        return ""
    if module and module.startswith(package + "."):
        return module[len(package) + 1:]
    return None


def _import_targets(node: ast.AST, current: str, is_package: bool, package: str) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    if isinstance(node, ast.ImportFrom):
        mod = _resolve(current, is_package, node.level, node.module, package)
        if mod is None:
            return out
        for a in node.names:
            if a.name != "*":
                out[a.asname or a.name] = (mod, a.name)
    elif isinstance(node, ast.Import):
        for a in node.names:
            mod = _resolve(current, is_package, 0, a.name, package)
            if mod is not None and a.asname:
                out[a.asname] = (mod, None)
    return out


@functools.lru_cache(maxsize=None)
def index_module(root: Path, package: str, module: str) -> ModuleIndex | None:
    """The index of a package module (None when there is no such file)."""
    path = _module_file(root, module)
    if path is None:
        return None
    tree = ast.parse(path.read_bytes(), filename=str(path))
    is_package = path.name == "__init__.py"
    defs: dict[str, ast.AST] = {}
    imports: dict[str, tuple[str, str | None]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defs[n.id] = stmt
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.update(_import_targets(stmt, module, is_package, package))
        elif isinstance(stmt, ast.If):  # `if TYPE_CHECKING:` imports and guarded definitions
            for sub in stmt.body + stmt.orelse:
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    imports.update(_import_targets(sub, module, is_package, package))
    return ModuleIndex(module, defs, imports)


def _layer(module: str) -> str:
    return module.split(".", 1)[0]


def _body_nodes(node: ast.AST):
    """The nodes of a definition that compute something: decorators and annotations left out."""
    skip: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip.update(id(d) for d in n.decorator_list)
            if n.returns is not None:
                skip.add(id(n.returns))
        elif isinstance(n, ast.ClassDef):
            skip.update(id(d) for d in n.decorator_list)
        elif isinstance(n, ast.arg) and n.annotation is not None:
            skip.add(id(n.annotation))
        elif isinstance(n, ast.AnnAssign):
            skip.add(id(n.annotation))
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


def reach(root: Path, package: str, module: str, name: str,
          config_objects: frozenset[tuple[str, str]] = frozenset(), local_names: frozenset[str] = frozenset()) -> Reach:
    """Every definition reached from `module`'s top-level `name`; `config_objects` are the
    (module, name) pairs of configuration objects whose attribute reads are recorded, `local_names`
    the parameter or variable names whose attribute reads are (`Reach.local_reads`)."""
    out = Reach(local_reads={n: set() for n in local_names})
    todo: list[tuple[str, str]] = [(module, name)]
    while todo:
        mod, nm = todo.pop()
        target = _lookup(root, package, mod, nm, set())
        if target is None:
            continue
        tmod, tname = target
        if tname is None:  # a whole module
            idx = index_module(root, package, tmod)
            todo.extend((tmod, d) for d in idx.defs) if idx else None
            continue
        if (tmod, tname) in out.nodes:
            continue
        idx = index_module(root, package, tmod)
        node = idx.defs[tname]
        out.nodes[(tmod, tname)] = node
        path = _module_file(root, tmod)
        is_package = path is not None and path.name == "__init__.py"
        local_imports = dict(idx.imports)
        body = list(_body_nodes(node))
        for n in body:  # imports inside the definition
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                local_imports.update(_import_targets(n, tmod, is_package, package))
        attr_bases = {id(n.value) for n in body if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        todo.extend((script, None) for script in _scripts_by_path(root, tmod, is_package, body))
        for n in body:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                ref = _ref(local_imports, idx, tmod, n.id)
                if ref is None:
                    continue
                todo.append(ref)
                origin = _lookup(root, package, ref[0], ref[1], set())
                if origin in config_objects and id(n) not in attr_bases:
                    out.config_reads[origin] = WHOLE
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                ref = _ref(local_imports, idx, tmod, n.value.id)
                if ref is None:
                    if n.value.id in out.local_reads:
                        out.local_reads[n.value.id].add(n.attr)
                    continue
                origin = _lookup(root, package, ref[0], ref[1], set())
                if origin in config_objects:
                    reads = out.config_reads.setdefault(origin, set())
                    if reads is not WHOLE:
                        reads.add(n.attr)
    return out


def _scripts_by_path(root: Path, module: str, is_package: bool, body) -> list[str]:
    """Sibling modules named by file in `.with_name("<module>.py")` calls among `body`'s nodes."""
    parent = module if is_package else module.rpartition(".")[0]
    out = []
    for n in body:
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "with_name"
                and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)
                and n.args[0].value.endswith(".py")):
            sibling = ".".join(filter(None, (parent, n.args[0].value[:-3])))
            if _module_file(root, sibling) is not None and _layer(sibling) not in OPAQUE_LAYERS:
                out.append(sibling)
    return out


def _ref(imports: dict[str, tuple[str, str | None]], idx: ModuleIndex, module: str, name: str):
    if name in imports:
        return imports[name]
    if name in idx.defs:
        return (module, name)
    return None


def _lookup(root: Path, package: str, module: str, name: str | None, seen: set) -> tuple[str, str | None] | None:
    """Where `module.name` is defined: (module, name), (submodule, None) for a module, or None
    outside the followed layers."""
    if (module, name) in seen or _layer(module) in OPAQUE_LAYERS or module == "":
        if module == "" and name and _module_file(root, name) and _layer(name) not in OPAQUE_LAYERS:
            return (name, None)
        return None
    seen.add((module, name))
    if name is None:
        return (module, None) if _module_file(root, module) else None
    sub = f"{module}.{name}"
    idx = index_module(root, package, module)
    if idx is None:
        return None
    if name in idx.defs:
        return (module, name)
    if name in idx.imports:
        m, a = idx.imports[name]
        return _lookup(root, package, m, a, seen)
    if _module_file(root, sub):
        return None if _layer(sub) in OPAQUE_LAYERS else (sub, None)
    return None
