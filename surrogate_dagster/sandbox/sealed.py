"""Test snippets split into what runs inside the sandbox (probes) and what stays on the host (verdicts).

``plan_test`` parses a test snippet (never executes it) and rewrites every ``assert`` into a probe
call: only the sub-expressions that need the candidate's code (calls to its functions, names bound
at run time) go into the sandbox, where their values are encoded as plain data (``plain.py``). The
rest of the assertion, with its expected values, stays on the host: the sandbox never sees them,
so a candidate cannot read them back, and ``AssertPlan.holds`` evaluates the assertion over the
decoded values with a small interpreter of whitelisted, side-effect-free operations and typed
equality. Nothing the candidate controls executes on the host.

Before that, ``shapes.normalize`` rewrites the snippet into the statements it would run: loops over
tables the host can evaluate unrolled, helpers / ``check(candidate)`` / ``test_*`` functions
specialized per call, unittest classes turned into asserts, ``if __name__ == '__main__':`` taken,
expected-exception idioms turned into raises-checks (the sandbox says what was raised, the host
decides).

An assertion is *sealed* when the candidate cannot make it hold without producing the expected
values: it is reached exactly once when the test runs to its end (``shapes.Shape.straight``, so
its report is required), every comparison has a side computed on the host, no comparison runs
inside the sandbox, and no value it probes was computed in the sandbox by a comparison or by a
function of the test's that compares (``ok = f(x) == 4; assert ok`` is not sealed: the candidate's
objects decided ``==``). A test is sealed when it has assertions and all are sealed; others
(loops over run-time values, comparisons of two run-time values, tests without assertions) would
rest on the sandbox reporting honestly: they fail unless the caller trusts the sandbox
(``trust_unsealed``), and their code is then not sent into the sandbox at all.

What enters the sandbox: the test's statements with each assertion replaced by its probes. The
host side of a sealed comparison (its expected value) never does; a module-level name the host
evaluates is sent only when sandbox code uses it (an input), and a mutable one that code could
change in place is not evaluated on the host at all (``nums = [3, 1]; sort(nums); assert nums ==
[1, 3]`` probes ``nums``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from surrogate_dagster.sandbox.hosteval import (  # noqa: F401 - host_eval, HostEvalError: this module's API
    HostEvalError,
    _bindings,
    _Splitter,
    host_eval,
)
from surrogate_dagster.sandbox.shapes import _exposed, _immutable, normalize

PROBE_FN = "__sbx_probe__"
RAISES_PROBE_FN = "__sbx_raises__"
def _decides(node: ast.AST) -> bool:
    """A comparison, boolean operator or ``not`` anywhere under ``node``: evaluated in the sandbox,
    it answers whatever the candidate's objects want."""
    return any(isinstance(n, (ast.Compare, ast.BoolOp)) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
               for n in ast.walk(node))


_OVERRIDABLE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)


@dataclass
class _Taint:
    names: set[str] = field(default_factory=set)  # values computed in the sandbox by a comparison
    funcs: set[str] = field(default_factory=set)  # the test's functions that compare (verdict helpers)
    classes: set[str] = field(default_factory=set)  # the test's classes whose methods compare

    def in_probe(self, p: ast.expr) -> bool:
        loads = {n.id for n in ast.walk(p) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if loads & (self.names | self.funcs):
            return True
        root = p
        while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        return isinstance(root, ast.Name) and root.id in self.classes


def _taint(tree: ast.Module) -> _Taint:
    """What of the test computes a verdict in the sandbox (see the module docstring)."""
    tt = _Taint()
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr))]
    changed = True
    while changed:
        changed = False
        for d in defs:
            bucket = tt.classes if isinstance(d, ast.ClassDef) else tt.funcs
            if d.name in bucket or d.name.startswith("__sbx_fn"):
                continue
            compares = any(isinstance(n, ast.Compare) and any(isinstance(o, _OVERRIDABLE) for o in n.ops)
                           for n in ast.walk(d))
            uses = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in (tt.funcs | tt.names)
                       for n in ast.walk(d))
            if compares or uses:
                bucket.add(d.name)
                changed = True
        for a in assigns:
            value = a.value
            if value is None:
                continue
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if names <= tt.names:
                continue
            if _decides(value) or any(isinstance(n, ast.Name) and n.id in (tt.names | tt.funcs) for n in ast.walk(value)):
                tt.names |= names
                changed = True
    return tt


def _seals(host: ast.expr, probes: list[ast.expr], taint: _Taint | None = None) -> bool:
    if any(_decides(p) for p in probes):
        return False  # a comparison inside the sandbox answers whatever the candidate wants
    if taint is not None and any(taint.in_probe(p) for p in probes):
        return False  # the value probed is a verdict the sandbox computed

    def probe_free(n: ast.AST) -> bool:
        return not any(isinstance(m, ast.Name) and m.id.startswith("__p") for m in ast.walk(n))

    for n in ast.walk(host):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(not probe_free(a) and not probe_free(b) for a, b in zip(sides, sides[1:])):
                return False
    return True


@dataclass
class AssertPlan:
    """One assertion: its host-side expression over probe placeholders ``__p0..`` (or, for a
    raises-check, the exception classes it accepts: its one probe value is the MRO of what the
    sandbox code raised, None when nothing was)."""

    source: str
    host: ast.expr | None
    n_probes: int
    sealed: bool
    env: dict[str, Any] = field(default_factory=dict)
    raises: Any = None  # shapes.RaisesSpec

    def holds(self, values: list[Any]) -> bool:
        """Whether the assertion holds for these (decoded) probe values."""
        if len(values) != self.n_probes:
            raise HostEvalError("wrong number of values")
        if self.raises is not None:
            mro = values[0]
            if mro is None:
                return False
            if type(mro) is not list or not all(type(m) is str for m in mro):
                raise HostEvalError("malformed exception report")
            return self.raises.matches(mro)
        env = {**self.env, **{f"__p{i}": v for i, v in enumerate(values)}}
        return bool(host_eval(self.host, env))

    def failure(self, values: list[Any]) -> str:
        """Why the assertion does not hold for these values."""
        if self.raises is not None:
            got = values[0]
            what = "nothing" if got is None else str(got[0]).removeprefix("builtins.") if got else "?"
            return f"AssertionError: expected {self.raises.describe()} to be raised, got {what}"
        return f"AssertionError: {self.source} (got {', '.join(repr(v)[:80] for v in values)})"


@dataclass
class TestPlan:
    """A test snippet rewritten for the sandbox plus the host's half of each assertion."""

    child_source: str
    asserts: list[AssertPlan]
    straight: list[bool]  # per assertion: reached exactly once when the test runs to its end

    @property
    def sealed(self) -> bool:
        return bool(self.asserts) and all(a.sealed and s for a, s in zip(self.asserts, self.straight))


def _host_bound(tree: ast.Module, solution_names: set[str]) -> tuple[dict[str, Any], dict[int, str]]:
    """Module-level ``NAME = <host-evaluable>`` bound once: the host knows its value. A mutable
    value that the snippet hands to other code (a call's argument, a method's object, a
    subscript store) is left to the sandbox: that code may change it in place."""
    counts = _bindings(tree)
    shadowed = set(counts)
    bound: dict[str, Any] = {}
    host_assigns: dict[int, str] = {}
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            sp = _Splitter(bound, shadowed - {name} - set(bound))
            if counts.get(name) == 1 and name not in solution_names and sp.host_only(stmt.value):
                try:
                    value = host_eval(stmt.value, dict(bound))
                except Exception:  # noqa: BLE001 - left to the sandbox
                    continue
                if not _immutable(value) and _exposed(name, tree.body):
                    continue
                bound[name] = value
                host_assigns[i] = name
    return bound, host_assigns


def plan_test(source: str, solution_names: set[str] = frozenset(), start_id: int = 0) -> TestPlan:
    """Rewrite ``source`` (a test snippet) for the sandbox. Assertion ids start at ``start_id``.

    ``solution_names``: names the candidate's code binds at top level; a module-level assignment
    in the test to one of them is left to the sandbox. Whitelisted functions (``sorted``, ``len``,
    ``math.isclose``...) mean the builtins on the host even if the candidate redefines them: the
    test's author meant those."""
    parsed = ast.parse(source)
    shape = normalize(parsed, _host_bound(parsed, solution_names)[0], set(solution_names))
    tree = shape.tree
    counts = _bindings(tree)
    shadowed = set(counts)
    bound, host_assigns = _host_bound(tree, solution_names)
    shadowed -= set(bound)
    taint = _taint(tree)

    plans: list[AssertPlan] = []
    straight: list[bool] = []

    class Rewrite(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.stmt:
            sp = _Splitter(bound, shadowed)
            host = sp.split(node.test)
            k = start_id + len(plans)
            plans.append(AssertPlan(ast.unparse(node.test)[:200], host, len(sp.probes),
                                    _seals(host, sp.probes, taint), dict(bound)))
            straight.append(id(node) in shape.straight)
            # generators are consumed inside (their items are the values)
            thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                    defaults=[]),
                                 body=ast.Call(ast.Name("list", ast.Load()), [p], []) if isinstance(p, ast.GeneratorExp)
                                 else p) for p in sp.probes]
            return ast.Expr(ast.Call(ast.Name(PROBE_FN, ast.Load()),
                                     [ast.Constant(k), ast.List(thunks, ast.Load())], []))

        def visit_With(self, node: ast.With) -> Any:
            spec = shape.raises.get(id(node))
            if spec is None:
                return self.generic_visit(node)
            k = start_id + len(plans)
            plans.append(AssertPlan(f"raises {spec.source}"[:200], None, 1, True, raises=spec))
            straight.append(id(node) in shape.straight)
            fn = f"__sbx_r{k}"
            body = [self.visit(s) for s in node.body] or [ast.Pass()]
            return [ast.FunctionDef(name=fn, args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                                kw_defaults=[], kwarg=None, defaults=[]),
                                    body=body, decorator_list=[], returns=None, type_comment=None),
                    ast.Expr(ast.Call(ast.Name(RAISES_PROBE_FN, ast.Load()),
                                      [ast.Constant(k), ast.Name(fn, ast.Load())], []))]

    new_body = []
    for i, stmt in enumerate(tree.body):
        if i in host_assigns:
            continue  # decided below: kept only if the sandbox needs the name
        out = Rewrite().visit(stmt)
        new_body += out if isinstance(out, list) else [out]
    # expected values the host already holds are left out, unless code in the sandbox uses them
    child = ast.Module(body=new_body, type_ignores=[])
    used = {n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    keep = [tree.body[i] for i, name in host_assigns.items() if name in used]
    child.body = keep + new_body
    ast.fix_missing_locations(child)
    return TestPlan(ast.unparse(child), plans, straight)


def top_level_names(code: str) -> set[str]:
    """Names a module binds at top level (parsed, not executed)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for stmt in tree.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.alias):
                out.add((n.asname or n.name).split(".")[0])
    return out
