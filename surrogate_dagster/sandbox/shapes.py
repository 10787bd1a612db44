"""Test snippets rewritten so that each assertion runs at a place where the host knows how often.

Datasets write tests in many shapes: loops over literal tables, helpers called once per case,
HumanEval's ``check(candidate)``, ``test_*`` functions, unittest classes, asserts under
``if __name__ == '__main__':``, ``all(... for ...)``. In those shapes an assertion runs zero or
many times depending on what only the sandbox sees, so the host cannot require its report: a
candidate that shadows ``range`` makes a loop run zero times, and one that stops the reports of
a loop passes it. :func:`normalize` rewrites a snippet, before it is planned
(``sealed.plan_test``), into the statements the test would run, computing on the host what the
host can know:

- a ``for`` over an iterable the host can evaluate (literals, names bound once to literals,
  ``range``, ``zip``, ``enumerate``, ``reversed``, ``sorted``, ``list``, ``tuple``, ``d.items()``,
  ``d.keys()``, ``d.values()``) is unrolled: one copy of the body per item, each loop variable
  replaced by its value (or, for a mutable value the body hands to other code, assigned it first);
- ``assert all(<expr> for <vars> in <iterable>)`` over such an iterable becomes one assert per item;
- an ``if`` whose test the host can evaluate keeps the branch taken; ``__name__`` is
  ``'__main__'``: tests run as a script would run them (the candidate's code is its own module);
- a function of the snippet called as a statement (a helper, ``check(candidate)``, a called
  ``test_*()``; an uncalled ``test_*`` is called at the end, as pytest would, once per
  ``pytest.mark.parametrize`` case) becomes a copy specialized to that call, defined where the
  call was: parameters replaced by the call's arguments (host values, or names);
- a helper whose body is one ``return <expr>``, called inside an assertion with host values or
  names, is replaced by its expression (``assert check(2, 2)`` -> ``assert add(2, 2) == 2 + 2``);
- a unittest.TestCase class becomes one test function per test method (setUp first, tearDown
  last, ``self.x`` a local, ``self.assertEqual(a, b)`` -> ``assert a == b`` and the other
  assert methods alike); ``unittest.main()`` and the runner calls go;
- ``try: <calls>; assert False`` / ``except E: pass`` (or ``else: assert False``),
  ``with pytest.raises(E):``, ``with self.assertRaises(E):`` and ``self.assertRaises(E, f, *args)``
  become a raises-check: the sandbox reports which exception, if any, the calls raised, and the
  host decides whether it is an ``E``.

Each assertion (and raises-check) reached at a place that runs exactly once when the test runs to
its end is listed in ``Shape.straight``: the host then requires exactly one report for it. What
the rules do not cover stays as written; its assertions are not straight and the test is unsealed
(``sealed.py``). Nothing here executes the snippet; values come from ``hosteval.host_eval``.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from surrogate_dagster.sandbox.hosteval import _bindings, _Splitter, host_eval

UNROLL_MAX = 2000  # statements the rewriting may produce per test (beyond it, shapes stay as written)
VALUE_NODES_MAX = 5000  # AST nodes of one substituted value
MAX_DEPTH = 8  # nested specializations / inlinings

RAISES_FN = "__sbx_expect_raises__"  # marks a raises-check in the normalized tree
_BUILTIN_EXC = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
                and issubclass(getattr(builtins, n), BaseException)}
_ITER_FUNCS = {"zip", "enumerate", "reversed", "sorted", "list", "tuple"}
_READ_ATTRS = {"items", "keys", "values", "get", "copy", "count", "index"}  # methods that leave a value as it was


@dataclass
class RaisesSpec:
    """What a raises-check accepts: exception classes by name. ``exact`` names are builtins
    ("builtins.ValueError", matched against the raised class's whole MRO); others (the
    solution's or a module's classes) match a class of that name in the MRO."""

    names: list[tuple[str, bool]]
    source: str

    def matches(self, mro: list[str]) -> bool:
        for name, exact in self.names:
            if exact and name in mro:
                return True
            if not exact and any(m.rsplit(".", 1)[-1] == name for m in mro):
                return True
        return False

    def describe(self) -> str:
        return " or ".join(n.removeprefix("builtins.") for n, _ in self.names)


@dataclass
class Shape:
    tree: ast.Module
    straight: set[int] = field(default_factory=set)  # id() of Assert / raises-check nodes
    raises: dict[int, RaisesSpec] = field(default_factory=dict)  # id() of a raises-check With node
    notes: list[str] = field(default_factory=list)  # what was rewritten (for diagnostics)


class _Refuse(Exception):
    """This shape is not rewritten (the statement stays as written)."""


# -- small AST helpers ------------------------------------------------------------------------
def _names_loaded(node: ast.AST) -> Counter:
    return Counter(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _scope_loads(stmts: list[ast.stmt]) -> Counter:
    """Names loaded by ``stmts`` in their own scope (nested def and class bodies left out)."""
    out: Counter = Counter()
    stack: list[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] += 1
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack += n.decorator_list + (n.args.defaults + n.args.kw_defaults if not isinstance(n, ast.ClassDef)
                                         else n.bases)
            continue
        stack += list(ast.iter_child_nodes(n))
    return out


def _names_bound(nodes: Any) -> set[str]:
    """Every name bound anywhere under ``nodes`` (assignment targets, args, defs, imports,
    comprehension targets, except-as, global/nonlocal)."""
    out: set[str] = set()
    for root in (nodes if isinstance(nodes, list) else [nodes]):
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.arg):
                out.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.alias):
                out.add((n.asname or n.name).split(".")[0])
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                out.update(n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif isinstance(n, ast.MatchAs) and n.name:
                out.add(n.name)
    return out


def _target_names(t: ast.AST) -> list[str] | None:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        out: list[str] = []
        for e in t.elts:
            sub = _target_names(e)
            if sub is None:
                return None
            out += sub
        return out
    return None


def _destructure(t: ast.AST, value: Any, out: dict[str, Any]) -> None:
    if isinstance(t, ast.Name):
        out[t.id] = value
        return
    try:
        items = list(value)
    except TypeError:
        raise _Refuse("item does not unpack") from None
    if len(items) != len(t.elts):
        raise _Refuse("item does not unpack")
    for e, v in zip(t.elts, items):
        _destructure(e, v, out)


def _immutable(v: Any) -> bool:
    if v is None or type(v) in (bool, int, float, complex, str, bytes):
        return True
    if type(v) in (tuple, frozenset):
        return all(_immutable(x) for x in v)
    return False


def value_ast(v: Any, budget: list[int] | None = None) -> ast.expr:
    """An expression that evaluates to ``v`` (plain data only); _Refuse otherwise."""
    budget = budget if budget is not None else [VALUE_NODES_MAX]
    budget[0] -= 1
    if budget[0] < 0:
        raise _Refuse("value too large to substitute")
    t = type(v)
    if v is None or t in (bool, int, str, bytes):
        return ast.Constant(v)
    if t is float:
        if v != v or v in (float("inf"), float("-inf")):
            raise _Refuse("non-finite float")
        return ast.Constant(v)
    if t is complex:
        return ast.Call(ast.Name("complex", ast.Load()), [value_ast(v.real, budget), value_ast(v.imag, budget)], [])
    if t is list:
        return ast.List([value_ast(x, budget) for x in v], ast.Load())
    if t is tuple:
        return ast.Tuple([value_ast(x, budget) for x in v], ast.Load())
    if t is set:
        if not v:
            return ast.Call(ast.Name("set", ast.Load()), [], [])
        return ast.Set([value_ast(x, budget) for x in v])
    if t is frozenset:
        return ast.Call(ast.Name("frozenset", ast.Load()), [ast.List([value_ast(x, budget) for x in v], ast.Load())], [])
    if t is dict:
        return ast.Dict([value_ast(k, budget) for k in v], [value_ast(x, budget) for x in v.values()])
    raise _Refuse(f"cannot write a {t.__name__} as a literal")


class _Subst(ast.NodeTransformer):
    def __init__(self, env: dict[str, ast.expr]) -> None:
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.env:
            return copy.deepcopy(self.env[node.id])
        return node


def _subst(node: Any, env: dict[str, ast.expr]) -> Any:
    node = copy.deepcopy(node)
    if not env:
        return node
    if isinstance(node, list):
        return [_Subst(env).visit(n) for n in node]
    return _Subst(env).visit(node)


def _walk_outside_asserts(root: ast.AST):
    stack = [root]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Assert):
            continue
        yield n
        stack += list(ast.iter_child_nodes(n))


def _exposed(name: str, nodes: list[ast.AST]) -> bool:
    """Whether ``name`` reaches code that could change its value in place before an assertion
    reads it: an argument of a call (other than a handful of builtins that only read), the object
    of an attribute, a subscript or attribute store, a with item, in a statement other than an
    assertion (``assert f(h) == h`` compares with ``h`` as written, as it always has)."""
    readers = {"len", "sorted", "list", "tuple", "set", "frozenset", "dict", "min", "max", "sum", "all", "any",
               "str", "repr", "print", "abs", "round", "isinstance", "type", "enumerate", "zip", "reversed",
               "int", "float", "bool"}
    for root in nodes:
        for n in _walk_outside_asserts(root):
            if isinstance(n, ast.Call):
                f = n.func
                reader = isinstance(f, ast.Name) and f.id in readers
                if not reader:
                    for a in [*n.args, *(k.value for k in n.keywords)]:
                        if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(a)):
                            return True
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name:
                if not (isinstance(n.ctx, ast.Load) and n.attr in _READ_ATTRS):
                    return True
            elif isinstance(n, (ast.Subscript, ast.Starred)) and not isinstance(n.ctx, ast.Load):
                if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.value)):
                    return True
            elif isinstance(n, ast.withitem):
                if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.context_expr)):
                    return True
            elif isinstance(n, (ast.Yield, ast.YieldFrom, ast.Return)) and n.value is not None:
                if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.value)):
                    return True
    return False


def _has(nodes: list[ast.AST], kinds: tuple, *, into_loops: bool = True, into_defs: bool = False) -> bool:
    """Whether a node of ``kinds`` occurs in ``nodes`` (not descending into nested defs/lambdas
    unless ``into_defs``; not into nested loops unless ``into_loops``)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if not into_defs and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if not into_loops and isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
            stack += n.orelse  # the else of a nested loop is ours; its body is not
            continue
        stack += list(ast.iter_child_nodes(n))
    return False


def _is_false_const(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and not e.value and not isinstance(e.value, str) or \
        isinstance(e, ast.Constant) and e.value == ""


def _is_fail(st: ast.stmt) -> bool:
    """``assert False``, ``raise AssertionError(...)``, ``pytest.fail(...)``, ``self.fail(...)``."""
    if isinstance(st, ast.Assert):
        return _is_false_const(st.test)
    if isinstance(st, ast.Raise) and st.exc is not None:
        e = st.exc.func if isinstance(st.exc, ast.Call) else st.exc
        return isinstance(e, ast.Name) and e.id == "AssertionError"
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        f = st.value.func
        return isinstance(f, ast.Attribute) and f.attr == "fail" and isinstance(f.value, ast.Name) \
            and f.value.id in ("pytest", "self")
    return False


def _trivial_handler(body: list[ast.stmt]) -> bool:
    for st in body:
        if isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name) \
                and st.value.func.id == "print":
            continue
        if isinstance(st, ast.Assert) and isinstance(st.test, ast.Constant) and st.test.value is True:
            continue
        return False
    return True


# -- unittest ---------------------------------------------------------------------------------
def _cmp(a: ast.expr, op: ast.cmpop, b: ast.expr) -> ast.expr:
    return ast.Compare(a, [op], [b])


def _call(name: str, *args: ast.expr) -> ast.expr:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


_UT_TWO = {"assertEqual": ast.Eq, "assertEquals": ast.Eq, "assertNotEqual": ast.NotEq,
           "assertNotEquals": ast.NotEq, "assertIs": ast.Is, "assertIsNot": ast.IsNot, "assertIn": ast.In,
           "assertNotIn": ast.NotIn, "assertGreater": ast.Gt, "assertGreaterEqual": ast.GtE,
           "assertLess": ast.Lt, "assertLessEqual": ast.LtE, "assertListEqual": ast.Eq,
           "assertTupleEqual": ast.Eq, "assertDictEqual": ast.Eq, "assertSetEqual": ast.Eq,
           "assertMultiLineEqual": ast.Eq}


def _ut_assert(method: str, args: list[ast.expr], kw: dict[str, ast.expr]) -> ast.expr:
    """The assertion a unittest assert method makes, as an expression (msg dropped)."""
    kw.pop("msg", None)
    if method in _UT_TWO and len(args) in (2, 3) and not kw:
        return _cmp(args[0], _UT_TWO[method](), args[1])
    if method in ("assertTrue", "assert_") and len(args) in (1, 2) and not kw:
        return args[0]
    if method == "assertFalse" and len(args) in (1, 2) and not kw:
        return ast.UnaryOp(ast.Not(), args[0])
    if method in ("assertIsNone", "assertIsNotNone") and len(args) in (1, 2) and not kw:
        return _cmp(args[0], ast.Is() if method == "assertIsNone" else ast.IsNot(), ast.Constant(None))
    if method in ("assertIsInstance", "assertNotIsInstance") and len(args) in (2, 3) and not kw:
        e = _call("isinstance", args[0], args[1])
        return e if method == "assertIsInstance" else ast.UnaryOp(ast.Not(), e)
    if method == "assertSequenceEqual" and len(args) in (2, 3) and not kw:
        return _cmp(_call("list", args[0]), ast.Eq(), _call("list", args[1]))
    if method == "assertCountEqual" and len(args) in (2, 3) and not kw:
        return _cmp(_call("sorted", args[0]), ast.Eq(), _call("sorted", args[1]))
    if method in ("assertAlmostEqual", "assertNotAlmostEqual", "assertAlmostEquals") and len(args) in (2, 3, 4):
        a, b = args[0], args[1]
        places = args[2] if len(args) >= 3 else kw.pop("places", ast.Constant(7))
        delta = kw.pop("delta", None)
        if kw:
            raise _Refuse("unknown keyword")
        diff = _call("abs", ast.BinOp(a, ast.Sub(), b))
        near = _cmp(diff, ast.LtE(), delta) if delta is not None else \
            _cmp(ast.Call(ast.Name("round", ast.Load()), [diff, places], []), ast.Eq(), ast.Constant(0))
        e = ast.BoolOp(ast.Or(), [_cmp(copy.deepcopy(a), ast.Eq(), copy.deepcopy(b)), near])
        return e if method != "assertNotAlmostEqual" else ast.UnaryOp(ast.Not(), e)
    raise _Refuse(f"unittest method {method} not rewritten")


def _check_exc_type(e: ast.expr) -> None:
    for x in (e.elts if isinstance(e, ast.Tuple) else [e]):
        if not isinstance(x, (ast.Name, ast.Attribute)) or (isinstance(x, ast.Name) and x.id == "AssertionError"):
            raise _Refuse("exception type")


class _SelfRewrite(ast.NodeTransformer):
    """``self.x`` -> ``_self_x``; assert methods -> assert statements; anything else of self refuses."""

    def __init__(self, self_name: str) -> None:
        self.s = self_name

    def _is_self(self, n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == self.s

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        c = node.value
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Call) \
                and isinstance(c.func.value.func, ast.Name) and c.func.value.func.id == "super" \
                and c.func.attr in ("setUp", "tearDown"):
            return ast.Pass()  # TestCase's own setUp/tearDown do nothing
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and self._is_self(c.func.value):
            m = c.func.attr
            args = [self.visit(a) for a in c.args]
            kw = {k.arg: self.visit(k.value) for k in c.keywords if k.arg}
            if len(kw) != len(c.keywords) or any(isinstance(a, ast.Starred) for a in args):
                raise _Refuse("starred arguments")
            if m == "fail":
                return ast.Assert(ast.Constant(False), None)
            if m == "assertRaises" and len(args) >= 2:
                _check_exc_type(args[0])
                body = [ast.Expr(ast.Call(args[1], args[2:], [ast.keyword(k, v) for k, v in kw.items()]))]
                return ast.With([ast.withitem(_call(RAISES_FN, args[0]), None)], body)
            if m.startswith("assert") or m.startswith("fail"):
                return ast.Assert(_ut_assert(m, args, kw), None)
        return self.generic_visit(node)

    def visit_With(self, node: ast.With) -> Any:
        if len(node.items) == 1:
            item = node.items[0]
            c = item.context_expr
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and self._is_self(c.func.value) \
                    and c.func.attr == "subTest" and item.optional_vars is None:
                out: list[ast.stmt] = []  # a sub-test: its body (a failure fails the test, as there)
                for st in node.body:
                    res = self.visit(st)
                    out += res if isinstance(res, list) else [res]
                for a in [*c.args, *(k.value for k in c.keywords)]:
                    self.visit(a)  # self used in the labels refuses, as anywhere
                return out or [ast.Pass()]
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and self._is_self(c.func.value) \
                    and c.func.attr == "assertRaises" and len(c.args) == 1 and not c.keywords:
                if item.optional_vars is not None:
                    raise _Refuse("assertRaises as a context with a name")
                _check_exc_type(c.args[0])
                return ast.With([ast.withitem(_call(RAISES_FN, self.visit(c.args[0])), None)],
                                [self.visit(s) for s in node.body])
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if self._is_self(node.value):
            if node.attr.startswith("assert") or node.attr in ("fail", "skipTest", "subTest"):
                raise _Refuse(f"self.{node.attr} used as a value")
            return ast.Name(f"_self_{node.attr}", node.ctx)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.s:
            raise _Refuse("self used as a value")
        return node


def _is_testcase_base(b: ast.expr, from_unittest: set[str]) -> bool:
    if isinstance(b, ast.Attribute) and b.attr == "TestCase" and isinstance(b.value, ast.Name) and b.value.id == "unittest":
        return True
    return isinstance(b, ast.Name) and b.id in from_unittest and b.id == "TestCase"


def _convert_testcase(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    methods: dict[str, ast.FunctionDef] = {}
    for st in cls.body:
        if isinstance(st, ast.FunctionDef):
            if st.decorator_list or len(st.args.args) != 1 or st.args.vararg or st.args.kwarg or \
                    st.args.kwonlyargs or st.args.posonlyargs:
                raise _Refuse("method shape")
            methods[st.name] = st
        elif isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
            continue
        else:
            raise _Refuse("class body holds more than methods")
    if cls.decorator_list or cls.keywords or any(not (m.startswith("test") or m in ("setUp", "tearDown"))
                                                 for m in methods):
        raise _Refuse("helper methods or class decorators")
    out = []
    for name, m in methods.items():
        if not name.startswith("test"):
            continue
        body: list[ast.stmt] = []
        for part in (methods.get("setUp"), m, methods.get("tearDown")):
            if part is None:
                continue
            rw = _SelfRewrite(part.args.args[0].arg)
            for st in part.body:
                res = rw.visit(copy.deepcopy(st))
                body += res if isinstance(res, list) else [res]
        if _has(body, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
            raise _Refuse("return in a test method")
        out.append(ast.FunctionDef(name=f"__sbx_ut_{cls.name}_{name}", args=_no_args(), body=body or [ast.Pass()],
                                   decorator_list=[], returns=None, type_comment=None))
    return out


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


_UT_RUNNERS = {"main", "TextTestRunner", "TestLoader", "TestSuite", "defaultTestLoader", "makeSuite", "TestResult",
               "TextTestResult"}


def _unittest_runner_stmt(st: ast.stmt, dropped_names: set[str]) -> bool:
    """Statements that only run unittest's machinery (main, runners, loaders, suites)."""
    if not isinstance(st, (ast.Expr, ast.Assign)):
        return False
    for n in ast.walk(st.value):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "unittest" \
                and n.attr in _UT_RUNNERS:
            return True
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in dropped_names:
            return True
    return False


def _pytest_main(st: ast.stmt) -> bool:
    """``pytest.main(...)`` as a statement: the host runs the test functions itself."""
    if not isinstance(st, ast.Expr) or not isinstance(st.value, ast.Call):
        return False
    f = st.value.func
    return isinstance(f, ast.Attribute) and f.attr == "main" and isinstance(f.value, ast.Name) and f.value.id == "pytest"


# -- the rewriting ------------------------------------------------------------------------------
class _Normalizer:
    def __init__(self, tree: ast.Module, bound: dict[str, Any], solution_names: set[str]) -> None:
        self.bound = bound
        self.solution_names = set(solution_names)
        self.counts = _bindings(tree)
        self.shadowed = set(self.counts) - set(bound)
        self.loads = _names_loaded(tree)
        self.shape = Shape(tree)
        self.budget = UNROLL_MAX
        self.n_fn = 0
        self.depth = 0
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.expr_funcs: dict[str, ast.FunctionDef] = {}
        self.scopes: list[list[ast.stmt]] = [tree.body]

    # values the host can compute
    def _splitter(self) -> _Splitter:
        return _Splitter(self.bound, self.shadowed)

    def host_value(self, node: ast.expr) -> Any:
        """The value of ``node`` computed on the host; _Refuse when it needs the sandbox."""
        if isinstance(node, ast.Name) and node.id == "__name__" and "__name__" not in self.counts:
            return "__main__"
        if isinstance(node, ast.Compare) and any(isinstance(s, ast.Name) and s.id == "__name__"
                                                 for s in [node.left, *node.comparators]):
            node = _Subst({"__name__": ast.Constant("__main__")}).visit(copy.deepcopy(node)) \
                if "__name__" not in self.counts else node
        if not self._splitter().host_only(node):
            raise _Refuse("needs the sandbox")
        try:
            return host_eval(node, dict(self.bound))
        except Exception as e:  # noqa: BLE001 - left to the sandbox
            raise _Refuse(f"host cannot evaluate: {e}") from None

    def iter_values(self, node: ast.expr) -> list[Any]:
        """The items a ``for`` over ``node`` walks, computed on the host."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ITER_FUNCS \
                and node.func.id not in self.shadowed and not any(isinstance(a, ast.Starred) for a in node.args):
            fn = node.func.id
            kw = {k.arg: self.host_value(k.value) for k in node.keywords if k.arg}
            if len(kw) != len(node.keywords):
                raise _Refuse("** arguments")
            if fn == "enumerate":
                if not 1 <= len(node.args) <= 2 or set(kw) - {"start"}:
                    raise _Refuse("enumerate shape")
                start = self.host_value(node.args[1]) if len(node.args) == 2 else kw.get("start", 0)
                if type(start) is not int:
                    raise _Refuse("enumerate start")
                return list(enumerate(self.iter_values(node.args[0]), start))
            args = [self.iter_values(a) for a in node.args]
            try:
                if fn == "zip":
                    return list(zip(*args, **kw))
                if fn == "reversed":
                    return list(reversed(args[0]))
                if fn == "sorted":
                    return sorted(args[0], **kw) if not kw or set(kw) <= {"reverse"} else self._refuse()
                return list(args[0])
            except TypeError as e:
                raise _Refuse(str(e)) from None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
                and not node.keywords and node.func.attr in ("items", "keys", "values"):
            d = self.host_value(node.func.value)
            if type(d) is not dict:
                raise _Refuse("not a dict")
            return [tuple(p) for p in d.items()] if node.func.attr == "items" else list(getattr(d, node.func.attr)())
        v = self.host_value(node)
        if type(v) in (list, tuple, str, bytes, dict, set, frozenset):
            return list(v)
        raise _Refuse("not iterable on the host")

    @staticmethod
    def _refuse() -> Any:
        raise _Refuse("unsupported")

    def _spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _Refuse("the test unrolls into too many statements")

    # bindings of loop variables / parameters
    def bind(self, names: dict[str, Any], body: list[ast.stmt], env: dict[str, ast.expr]
             ) -> tuple[dict[str, ast.expr], list[ast.stmt]]:
        """Substitution for immutable values (and mutable ones the body only reads); an assignment
        at the top for a mutable value the body hands to other code."""
        env = dict(env)
        pre: list[ast.stmt] = []
        for name, value in names.items():
            if isinstance(value, ast.expr):  # a name passed through (check(add))
                env[name] = value
                continue
            lit = value_ast(value)
            if _immutable(value) or not _exposed(name, body):
                env[name] = lit
            else:
                pre.append(ast.Assign([ast.Name(name, ast.Store())], lit))
                env.pop(name, None)
        return env, pre

    # statements
    def block(self, stmts: list[ast.stmt], env: dict[str, ast.expr], straight: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in stmts:
            out += self.stmt(st, env, straight)
        return out

    def stmt(self, st: ast.stmt, env: dict[str, ast.expr], straight: bool) -> list[ast.stmt]:
        if isinstance(st, ast.Assert):
            return self.assert_(st, env, straight)
        if isinstance(st, ast.For):
            if straight:
                try:
                    return self.unroll(st, env)
                except _Refuse as e:
                    self.shape.notes.append(f"loop kept: {e}")
            return [self.opaque(st, env)]
        if isinstance(st, ast.If):
            try:
                taken = bool(self.host_value(_subst(st.test, env)))
            except _Refuse:
                return [self.opaque(st, env)]
            return self.block(st.body if taken else st.orelse, env, straight)
        if isinstance(st, ast.Try):
            return self.try_(st, env, straight)
        if isinstance(st, ast.With):
            return self.with_(st, env, straight)
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name) \
                and st.value.func.id in self.funcs and st.value.func.id not in env and straight:
            try:
                return self.specialize(st.value, env)
            except _Refuse as e:
                self.shape.notes.append(f"call kept: {e}")
        if isinstance(st, ast.FunctionDef) and st.name in self.funcs and self.depth == 0:
            return [st]  # decided at the end: dropped when every call was specialized
        return [self.opaque(st, env)]

    def opaque(self, st: ast.stmt, env: dict[str, ast.expr]) -> ast.stmt:
        """A statement kept as written (substituted), its assertions not straight (helpers inside
        assertions still inlined)."""
        new = _subst(st, env)
        for n in ast.walk(new):
            if isinstance(n, ast.Assert):
                n.test = self.inline_exprs(n.test)
        return new

    def assert_(self, st: ast.Assert, env: dict[str, ast.expr], straight: bool) -> list[ast.stmt]:
        a = _subst(st, env)
        a.test = self.inline_exprs(a.test)
        t = a.test
        if straight and isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "all" \
                and "all" not in self.shadowed and len(t.args) == 1 and not t.keywords \
                and isinstance(t.args[0], (ast.GeneratorExp, ast.ListComp)) and len(t.args[0].generators) == 1:
            try:
                return self.unroll_all(t.args[0], a.msg, straight)
            except _Refuse as e:
                self.shape.notes.append(f"all() kept: {e}")
        if straight:
            self.shape.straight.add(id(a))
        return [a]

    def unroll_all(self, comp: ast.GeneratorExp | ast.ListComp, msg: ast.expr | None, straight: bool) -> list[ast.stmt]:
        gen = comp.generators[0]
        names = _target_names(gen.target)
        if names is None or gen.is_async or _has([comp.elt, *gen.ifs], (ast.NamedExpr,), into_defs=True):
            raise _Refuse("comprehension shape")
        items = self.iter_values(gen.iter)
        self._spend(len(items))
        out: list[ast.stmt] = []
        for item in items:
            vals: dict[str, Any] = {}
            _destructure(gen.target, item, vals)
            env = {k: value_ast(v) for k, v in vals.items()}
            if not all(bool(self.host_value(_subst(c, env))) for c in gen.ifs):
                continue
            a = ast.Assert(self.inline_exprs(_subst(comp.elt, env)), copy.deepcopy(msg))
            if straight:
                self.shape.straight.add(id(a))
            out.append(a)
        return out or [ast.Pass()]

    def unroll(self, st: ast.For, env: dict[str, ast.expr]) -> list[ast.stmt]:
        names = _target_names(st.target)
        if names is None:
            raise _Refuse("loop target is not names")
        if _has(st.body, (ast.Break, ast.Continue), into_loops=False) or \
                _has(st.body, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
            raise _Refuse("break / continue / return in the loop")
        if set(names) & _names_bound(st.body):
            raise _Refuse("the body rebinds a loop variable")
        inside = _scope_loads(st.body)
        total = _scope_loads(self.scopes[-1])
        if any(total[n] > inside[n] for n in names):
            raise _Refuse("a loop variable is used outside the loop")
        it = _subst(st.iter, env)
        items = self.iter_values(it)
        size = sum(1 for _ in ast.walk(ast.Module(body=st.body, type_ignores=[])))
        self._spend(len(items) * max(1, len(st.body)))
        if len(items) * size > 50 * UNROLL_MAX:
            raise _Refuse("the unrolled loop would be too large")
        out: list[ast.stmt] = []
        for item in items:
            vals: dict[str, Any] = {}
            _destructure(st.target, item, vals)
            new_env, pre = self.bind(vals, st.body, env)
            out += pre + self.block(st.body, new_env, True)
        out += self.block(st.orelse, env, True)
        self.shape.notes.append(f"loop unrolled: {len(items)} items")
        return out or [ast.Pass()]

    def try_(self, st: ast.Try, env: dict[str, ast.expr], straight: bool) -> list[ast.stmt]:
        # the expected-exception idiom
        body, orelse = st.body, st.orelse
        calls = None
        if not st.finalbody and st.handlers and all(_trivial_handler(h.body) for h in st.handlers):
            if not orelse and len(body) >= 2 and _is_fail(body[-1]) and not _has(body[:-1], (ast.Assert,)):
                calls = body[:-1]
            elif len(orelse) == 1 and _is_fail(orelse[0]) and body and not _has(body, (ast.Assert,)):
                calls = body
        if calls is not None:
            try:
                types = [h.type for h in st.handlers]
                spec = self.raises_spec(types)
                node = ast.With([ast.withitem(_call(RAISES_FN), None)], _subst(calls, env))
                self.shape.raises[id(node)] = spec
                if straight:
                    self.shape.straight.add(id(node))
                return [node]
            except _Refuse as e:
                self.shape.notes.append(f"try kept: {e}")
        # otherwise: body, else and finally run once (an exception on the way fails the test);
        # handlers only on an exception
        new = ast.Try(body=self.block(body, env, straight), handlers=[self.opaque(h, env) for h in st.handlers],
                      orelse=self.block(orelse, env, straight), finalbody=self.block(st.finalbody, env, straight))
        if not new.body:
            new.body = [ast.Pass()]
        return [new]

    def raises_spec(self, types: list[ast.expr | None]) -> RaisesSpec:
        names: list[tuple[str, bool]] = []
        src = []
        for t in types:
            if t is None:
                names.append(("builtins.BaseException", True))
                src.append("BaseException")
                continue
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                src.append(ast.unparse(e))
                if isinstance(e, ast.Name):
                    if e.id == "AssertionError":
                        raise _Refuse("expects an AssertionError")
                    builtin = e.id in _BUILTIN_EXC and e.id not in self.counts and e.id not in self.solution_names
                    names.append((f"builtins.{e.id}" if builtin else e.id, builtin))
                elif isinstance(e, ast.Attribute):
                    names.append((e.attr, False))
                else:
                    raise _Refuse("exception type is an expression")
        return RaisesSpec(names, ", ".join(src))

    def with_(self, st: ast.With, env: dict[str, ast.expr], straight: bool) -> list[ast.stmt]:
        if len(st.items) == 1:
            c = st.items[0].context_expr
            is_ut = isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == RAISES_FN
            is_pytest = isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "raises" \
                and isinstance(c.func.value, ast.Name) and c.func.value.id == "pytest" and len(c.args) == 1 \
                and not c.keywords and st.items[0].optional_vars is None
            if (is_ut or is_pytest) and not _has(st.body, (ast.Assert,)):
                try:
                    spec = self.raises_spec([c.args[0]])
                    node = ast.With([ast.withitem(_call(RAISES_FN), None)], _subst(st.body, env))
                    self.shape.raises[id(node)] = spec
                    if straight:
                        self.shape.straight.add(id(node))
                    return [node]
                except _Refuse as e:
                    self.shape.notes.append(f"raises kept: {e}")
            if is_ut:
                return [self.opaque(ast.Expr(ast.Call(ast.Name("__sbx_unconverted__", ast.Load()), [], [])), env)]
        # a with body runs once; the context may swallow an exception (then a straight assert
        # after it is missing: the test fails, as it should when the code raised)
        new = ast.With([_subst(i, env) for i in st.items], self.block(st.body, env, straight))
        return [new]

    # functions
    def specialize(self, call: ast.Call, env: dict[str, ast.expr]) -> list[ast.stmt]:
        fn = self.funcs[call.func.id]
        if self.depth >= MAX_DEPTH:
            raise _Refuse("nested too deep")
        params = self.bind_call(fn, call, env)
        body = copy.deepcopy(fn.body)
        if any(isinstance(s, ast.Return) for s in body[:-1]) or \
                _has(body[:-1] + ([] if isinstance(body[-1], ast.Return) else body[-1:]), (ast.Return,)):
            raise _Refuse("returns before its end")
        if _has(body, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal, ast.Await)):
            raise _Refuse("a generator, or global / nonlocal names")
        new_env, pre = self.bind(params, body, {})
        self.depth += 1
        self.scopes.append(body)
        try:
            self._spend(len(body))
            new_body = pre + self.block(body, new_env, True)
        finally:
            self.depth -= 1
            self.scopes.pop()
        self.n_fn += 1
        name = f"__sbx_fn{self.n_fn}"
        self.shape.notes.append(f"{fn.name}() specialized")
        return [ast.FunctionDef(name=name, args=_no_args(), body=new_body or [ast.Pass()], decorator_list=[],
                                returns=None, type_comment=None),
                ast.Expr(ast.Call(ast.Name(name, ast.Load()), [], []))]

    def bind_call(self, fn: ast.FunctionDef, call: ast.Call, env: dict[str, ast.expr]) -> dict[str, Any]:
        """Parameter -> host value (or a Name passed through) for ``call`` of ``fn``."""
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or fn.decorator_list:
            raise _Refuse("signature")
        params = [p.arg for p in a.posonlyargs + a.args]
        if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
            raise _Refuse("starred arguments")
        given: dict[str, ast.expr] = {}
        for p, x in zip(params, call.args):
            given[p] = _subst(x, env)
        if len(call.args) > len(params):
            raise _Refuse("too many arguments")
        for k in call.keywords:
            if k.arg not in params or k.arg in given:
                raise _Refuse("keyword")
            given[k.arg] = _subst(k.value, env)
        defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
        for p in params:
            if p not in given:
                if p not in defaults:
                    raise _Refuse("missing argument")
                given[p] = copy.deepcopy(defaults[p])
        bound_in_body = _names_bound(fn.body)
        if set(params) & bound_in_body:
            raise _Refuse("the body rebinds a parameter")
        out: dict[str, Any] = {}
        for p, x in given.items():
            try:
                out[p] = self.host_value(x)
            except _Refuse:
                if isinstance(x, ast.Name) and x.id not in bound_in_body:
                    out[p] = ast.Name(x.id, ast.Load())
                else:
                    raise
        return out

    def inline_exprs(self, e: ast.expr) -> ast.expr:
        """Calls of one-expression helpers inside an assertion replaced by their expression."""
        if not self.expr_funcs:
            return e
        outer = self

        class _Inline(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:
                node = self.generic_visit(node)
                f = node.func
                if not (isinstance(f, ast.Name) and f.id in outer.expr_funcs) or outer.depth >= MAX_DEPTH:
                    return node
                fn = outer.expr_funcs[f.id]
                try:
                    params = outer.bind_call(fn, node, {})
                    ret = fn.body[-1].value
                    env: dict[str, ast.expr] = {}
                    for p, v in params.items():
                        if isinstance(v, ast.expr):
                            env[p] = v
                        elif _immutable(v) or not _exposed(p, [ret]):
                            env[p] = value_ast(v)
                        else:
                            raise _Refuse("mutable argument handed on")
                except _Refuse:
                    return node
                outer.depth += 1
                try:
                    return self.visit(_subst(ret, env))
                finally:
                    outer.depth -= 1

        return _Inline().visit(e)


def _parametrize_calls(fn: ast.FunctionDef, host_value) -> list[list[Any]] | None:
    """The argument lists ``pytest.mark.parametrize`` decorators give ``fn`` (None: not that shape)."""
    cases: list[dict[str, Any]] = [{}]
    for d in fn.decorator_list:
        if not (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"
                and len(d.args) == 2 and not d.keywords):
            return None
        names = host_value(d.args[0])
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        values = host_value(d.args[1])
        if not isinstance(names, (list, tuple)) or not isinstance(values, (list, tuple)):
            return None
        rows = [dict(zip(names, v if len(names) > 1 else [v])) for v in values]
        cases = [{**c, **r} for c in cases for r in rows]
    params = [p.arg for p in fn.args.args]
    if any(set(c) != set(params) for c in cases):
        return None
    return [[c[p] for p in params] for c in cases]


def normalize(tree: ast.Module, bound: dict[str, Any], solution_names: set[str] = frozenset()) -> Shape:
    """``tree`` (a parsed test snippet) rewritten; ``bound``: module-level names the host knows."""
    tree = copy.deepcopy(tree)
    # unittest classes -> test functions; its runners dropped
    from_unittest = {(a.asname or a.name) for st in tree.body if isinstance(st, ast.ImportFrom)
                     and st.module == "unittest" for a in st.names}
    body: list[ast.stmt] = []
    converted: set[str] = set()
    for st in tree.body:
        if isinstance(st, ast.ClassDef) and any(_is_testcase_base(b, from_unittest) for b in st.bases):
            try:
                body += _convert_testcase(st)
                converted.add(st.name)
                continue
            except _Refuse:
                pass
        body.append(st)

    dropped = set(converted)

    class _DropRunners(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            for fld, value in ast.iter_fields(node):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    kept = []
                    for s in value:
                        if _unittest_runner_stmt(s, dropped) or _pytest_main(s) or (
                                isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                                and isinstance(s.value.func, ast.Name) and s.value.func.id == "main"
                                and "main" in from_unittest):
                            if isinstance(s, ast.Assign):
                                dropped.update(_names_bound(s.targets))
                            continue
                        kept.append(self.visit(s))
                    setattr(node, fld, kept or [ast.Pass()])
                elif isinstance(value, list):
                    for v in value:
                        if isinstance(v, ast.AST):
                            self.visit(v)
                elif isinstance(value, ast.AST):
                    self.visit(value)
            return node

    tree = ast.Module(body=body, type_ignores=[])
    tree = _DropRunners().visit(tree)
    n = _Normalizer(tree, bound, solution_names)
    # the snippet's functions: statement-callable ones and one-expression helpers
    loads = n.loads
    for st in tree.body:
        if isinstance(st, ast.FunctionDef) and n.counts.get(st.name) == 1:
            if not st.decorator_list:
                n.funcs[st.name] = st
                if len(st.body) == 1 and isinstance(st.body[0], ast.Return) and st.body[0].value is not None:
                    n.expr_funcs[st.name] = st
    # uncalled test functions are called at the end (pytest's collection), parametrized per case
    tail: list[ast.stmt] = []
    for st in tree.body:
        if isinstance(st, ast.FunctionDef) and (st.name.startswith("test_") or st.name.startswith("__sbx_ut_")) \
                and loads[st.name] == 0 and n.counts.get(st.name) == 1:
            if st.decorator_list:
                cases = None
                try:
                    cases = _parametrize_calls(st, n.host_value)
                except _Refuse:
                    cases = None
                if cases is None:
                    continue
                plain = copy.deepcopy(st)
                plain.decorator_list = []
                n.funcs[st.name] = plain
                for args in cases:
                    try:
                        tail.append(ast.Expr(ast.Call(ast.Name(st.name, ast.Load()), [value_ast(v) for v in args], [])))
                    except _Refuse:
                        break
            else:
                tail.append(ast.Expr(ast.Call(ast.Name(st.name, ast.Load()), [], [])))
    tree.body += tail
    n.loads = _names_loaded(tree)
    n.scopes = [tree.body]
    out = n.block(tree.body, {}, True)
    # a function every call of which was specialized is dropped; others stay (not straight)
    result = ast.Module(body=out, type_ignores=[])
    left = _names_loaded(result)
    final = []
    for st in out:
        if isinstance(st, ast.FunctionDef) and st.name in n.funcs and not st.name.startswith("__sbx_fn"):
            if left[st.name] == 0 or (left[st.name] == _names_loaded(st)[st.name]):
                continue
            final.append(n.opaque(n.funcs[st.name], {}))  # (a parametrized one without its decorators)
            continue
        final.append(st)
    n.shape.tree = ast.Module(body=final or [ast.Pass()], type_ignores=[])
    ast.fix_missing_locations(n.shape.tree)
    return n.shape
