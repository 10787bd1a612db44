"""Test snippets split into what runs inside the sandbox (probes) and what stays on the host (verdicts).

``plan_test`` parses a test snippet (never executes it) and rewrites every ``assert`` into a probe
call: only the sub-expressions that need the candidate's code (calls to its functions, names bound
at run time) go into the sandbox, where their values are encoded as plain data (``plain.py``). The
rest of the assertion, with its expected values, stays on the host: the sandbox never sees them,
so a candidate cannot read them back, and ``AssertPlan.holds`` evaluates the assertion over the
decoded values with a small interpreter of whitelisted, side-effect-free operations and typed
equality. Nothing the candidate controls executes on the host.

An assertion is *sealed* when the candidate cannot make it hold without producing the expected
values: it sits in straight-line code (so it must report exactly once), every comparison has a
side computed on the host, and no comparison runs inside the sandbox. A test whose assertions are
all sealed is sealed; others (assertions in loops or ``try`` blocks, comparisons of two run-time
values, tests without assertions) rely on the sandbox reporting honestly and are listed as such.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any

PROBE_FN = "__sbx_probe__"
_MAX_LEN = 1_000_000  # cap on sequences the host builds (range, repetition)

_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple,
          "dict": dict, "set": set, "frozenset": frozenset, "bytes": bytes, "complex": complex}


def _range(*a: int) -> list[int]:
    if len(range(*a)) > _MAX_LEN:
        raise ValueError("range too long to evaluate on the host")
    return list(range(*a))


_FUNCS = {"abs": abs, "len": len, "sorted": sorted, "round": round, "min": min, "max": max,
          "sum": sum, "all": all, "any": any, "isinstance": isinstance, "type": type, "range": _range,
          **_TYPES}
_MATH = {"isclose": math.isclose, "sqrt": math.sqrt, "inf": math.inf, "pi": math.pi, "e": math.e,
         "nan": math.nan, "floor": math.floor, "ceil": math.ceil, "fabs": math.fabs}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
        ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}


class HostEvalError(ValueError):
    """The host-side part of an assertion cannot be evaluated over the values that came back."""


def _guarded_bin(op: type, a: Any, b: Any) -> Any:
    # the expression is the dataset's, the operands may be the candidate's: keep the host's work small
    if op is ast.Pow and isinstance(b, int) and abs(b) > 4096 and isinstance(a, (int, float)) and abs(a) > 1:
        raise HostEvalError("exponent too large to evaluate on the host")
    if op is ast.Mult:
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_LEN:
                raise HostEvalError("repetition too large to evaluate on the host")
    return _BIN[op](a, b)


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    from surrogate_dagster.sandbox.plain import typed_eq, typed_in

    if isinstance(op, ast.Eq):
        return typed_eq(a, b)
    if isinstance(op, ast.NotEq):
        return not typed_eq(a, b)
    if isinstance(op, ast.In):
        return typed_in(a, b)
    if isinstance(op, ast.NotIn):
        return not typed_in(a, b)
    if isinstance(op, ast.Is):
        return a is b
    if isinstance(op, ast.IsNot):
        return a is not b
    return {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge}[type(op)](a, b)


def host_eval(node: ast.AST, env: dict[str, Any]) -> Any:
    """Evaluate an expression built only from nodes ``_host_ok`` accepts, over plain values."""
    t = type(node)
    if t is ast.Constant:
        return node.value
    if t is ast.Name:
        if node.id in env:
            return env[node.id]
        return _FUNCS[node.id]
    if t is ast.Attribute:
        return _MATH[node.attr]
    if t in (ast.List, ast.Tuple, ast.Set):
        items = [host_eval(e, env) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[t](items)
    if t is ast.Dict:
        return {host_eval(k, env): host_eval(v, env) for k, v in zip(node.keys, node.values)}
    if t is ast.UnaryOp:
        return _UNARY[type(node.op)](host_eval(node.operand, env))
    if t is ast.BinOp:
        return _guarded_bin(type(node.op), host_eval(node.left, env), host_eval(node.right, env))
    if t is ast.BoolOp:
        is_and = isinstance(node.op, ast.And)
        v: Any = None
        for e in node.values:
            v = host_eval(e, env)
            if bool(v) != is_and:
                return v
        return v
    if t is ast.Compare:
        left = host_eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = host_eval(comp, env)
            if not _compare(op, left, right):
                return False
            left = right
        return True
    if t is ast.IfExp:
        return host_eval(node.body if host_eval(node.test, env) else node.orelse, env)
    if t is ast.Subscript:
        return host_eval(node.value, env)[host_eval(node.slice, env)]
    if t is ast.Slice:
        return slice(*(None if p is None else host_eval(p, env) for p in (node.lower, node.upper, node.step)))
    if t is ast.Call:
        fn = host_eval(node.func, env)
        return fn(*[host_eval(a, env) for a in node.args],
                  **{k.arg: host_eval(k.value, env) for k in node.keywords})
    raise HostEvalError(f"cannot evaluate {t.__name__} on the host")


_STRUCT = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.BoolOp,
           ast.Compare, ast.IfExp, ast.Subscript, ast.Slice)


def _is_safe_call(node: ast.Call, shadowed: set[str]) -> bool:
    f = node.func
    if isinstance(f, ast.Name):
        ok = f.id in _FUNCS and f.id not in shadowed
    else:
        ok = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math" \
            and f.attr in _MATH and "math" not in shadowed
    return ok and not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords)


def _is_safe_leaf(node: ast.AST, bound: dict[str, Any], shadowed: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in bound or (node.id in _TYPES and node.id not in shadowed)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math" \
        and node.attr in _MATH and "math" not in shadowed


class _Splitter:
    """Splits one assertion's expression into host structure and sandbox probes."""

    def __init__(self, bound: dict[str, Any], shadowed: set[str]) -> None:
        self.bound, self.shadowed = bound, shadowed
        self.probes: list[ast.expr] = []

    def host_only(self, node: ast.AST) -> bool:
        """True when ``node`` needs nothing from the sandbox."""
        if isinstance(node, (ast.Name, ast.Attribute)):
            return _is_safe_leaf(node, self.bound, self.shadowed)
        if isinstance(node, ast.Call):
            return _is_safe_call(node, self.shadowed) and all(
                self.host_only(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            return False
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            return False
        if isinstance(node, _STRUCT):
            return all(self.host_only(c) for c in ast.iter_child_nodes(node)
                       if not isinstance(c, (ast.operator, ast.cmpop, ast.boolop, ast.unaryop, ast.expr_context)))
        return False

    def split(self, node: ast.expr) -> ast.expr:
        """``node`` with each maximal sandbox-needing part replaced by a probe placeholder."""
        if self.host_only(node):
            return node
        combinable = isinstance(node, _STRUCT) or (isinstance(node, ast.Call) and _is_safe_call(node, self.shadowed))
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            combinable = False
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            combinable = False
        if not combinable:
            self.probes.append(node)
            return ast.Name(id=f"__p{len(self.probes) - 1}", ctx=ast.Load())
        new = type(node)(**{f: getattr(node, f) for f in node._fields})
        for name, value in ast.iter_fields(node):
            if isinstance(node, ast.Call) and name == "func":
                continue  # a whitelisted function, called on the host
            if isinstance(value, ast.expr):
                setattr(new, name, self.split(value))
            elif isinstance(value, list):
                setattr(new, name, [self._split_item(v) for v in value])
        return new

    def _split_item(self, v: object) -> object:
        if isinstance(v, ast.expr):
            return self.split(v)
        if isinstance(v, ast.keyword):
            return ast.keyword(arg=v.arg, value=self.split(v.value))
        return v


def _seals(host: ast.expr, probes: list[ast.expr]) -> bool:
    if any(isinstance(n, (ast.Compare, ast.BoolOp)) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
           for p in probes for n in ast.walk(p)):
        return False  # a comparison inside the sandbox answers whatever the candidate wants

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
    """One assertion: its host-side expression over probe placeholders ``__p0..``."""

    source: str
    host: ast.expr
    n_probes: int
    sealed: bool
    env: dict[str, Any] = field(default_factory=dict)

    def holds(self, values: list[Any]) -> bool:
        """Whether the assertion holds for these (decoded) probe values."""
        if len(values) != self.n_probes:
            raise HostEvalError("wrong number of values")
        env = {**self.env, **{f"__p{i}": v for i, v in enumerate(values)}}
        return bool(host_eval(self.host, env))


@dataclass
class TestPlan:
    """A test snippet rewritten for the sandbox plus the host's half of each assertion."""

    child_source: str
    asserts: list[AssertPlan]
    straight: list[bool]  # per assertion: reached exactly once when the test runs to its end

    @property
    def sealed(self) -> bool:
        return bool(self.asserts) and all(a.sealed and s for a, s in zip(self.asserts, self.straight))


def _bindings(tree: ast.AST) -> dict[str, int]:
    """How often each name is bound anywhere in the snippet (assignments, args, defs, imports...)."""
    counts: dict[str, int] = {}

    def add(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            add(n.id)
        elif isinstance(n, ast.arg):
            add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(n.name)
        elif isinstance(n, ast.alias):
            add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                add(name)
    return counts


def plan_test(source: str, solution_names: set[str] = frozenset(), start_id: int = 0) -> TestPlan:
    """Rewrite ``source`` (a test snippet) for the sandbox. Assertion ids start at ``start_id``.

    ``solution_names``: names the candidate's code binds at top level; a module-level assignment
    in the test to one of them is left to the sandbox. Whitelisted functions (``sorted``, ``len``,
    ``math.isclose``...) mean the builtins on the host even if the candidate redefines them: the
    test's author meant those."""
    tree = ast.parse(source)
    counts = _bindings(tree)
    shadowed = set(counts)
    bound: dict[str, Any] = {}
    host_assigns: dict[int, str] = {}
    for i, stmt in enumerate(tree.body):  # module-level NAME = <host-evaluable> bound once: host knows it
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            sp = _Splitter(bound, shadowed - {name} - set(bound))
            if counts.get(name) == 1 and name not in solution_names and sp.host_only(stmt.value):
                try:
                    bound[name] = host_eval(stmt.value, dict(bound))
                    host_assigns[i] = name
                except Exception:  # noqa: BLE001 - left to the sandbox
                    pass
    shadowed -= set(bound)

    test_fns = [s.name for s in tree.body if isinstance(s, ast.FunctionDef) and s.name.startswith("test_")]
    loads = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    called_once = {f for f in test_fns if counts.get(f) == 1 and f not in loads and not
                   next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == f).args.args}
    straight_ids: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assert):
            straight_ids.add(id(stmt))
        elif isinstance(stmt, ast.FunctionDef) and stmt.name in called_once and not stmt.decorator_list:
            straight_ids.update(id(s) for s in stmt.body if isinstance(s, ast.Assert))

    plans: list[AssertPlan] = []
    straight: list[bool] = []

    class Rewrite(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.stmt:
            sp = _Splitter(bound, shadowed)
            host = sp.split(node.test)
            k = start_id + len(plans)
            plans.append(AssertPlan(ast.unparse(node.test)[:200], host, len(sp.probes),
                                    _seals(host, sp.probes), dict(bound)))
            straight.append(id(node) in straight_ids)
            # generators are consumed inside (their items are the values)
            thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                    defaults=[]),
                                 body=ast.Call(ast.Name("list", ast.Load()), [p], []) if isinstance(p, ast.GeneratorExp)
                                 else p) for p in sp.probes]
            return ast.Expr(ast.Call(ast.Name(PROBE_FN, ast.Load()),
                                     [ast.Constant(k), ast.List(thunks, ast.Load())], []))

    new_body = []
    for i, stmt in enumerate(tree.body):
        if i in host_assigns:
            continue  # decided below: kept only if the sandbox needs the name
        new_body.append(Rewrite().visit(stmt))
    # expected values the host already holds are left out, unless code in the sandbox uses them
    child = ast.Module(body=new_body, type_ignores=[])
    used = {n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    keep = [tree.body[i] for i, name in host_assigns.items() if name in used]
    child.body = keep + new_body + [ast.Expr(ast.Call(ast.Name(f, ast.Load()), [], [])) for f in sorted(called_once)]
    # pytest-style functions defined but taking fixtures are still called, as before, and fail
    child.body += [ast.Expr(ast.Call(ast.Name(f, ast.Load()), [], [])) for f in sorted(set(test_fns) - called_once)
                   if f not in loads and counts.get(f) == 1]
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
