"""Plain data across the sandbox boundary: encoder (runs inside), strict decoder and typed equality.

A value leaves the sandbox only as a tagged JSON tree of builtin types (None, bool, int, float,
complex, str, bytes, list, tuple, set, frozenset, dict). The decoder on the host rebuilds exactly
those types and nothing else, so no object of the candidate's can reach a comparison: a custom
``__eq__`` never runs outside the sandbox. ``typed_eq`` then compares type-for-type, recursively
(``True`` is not ``1``; a list is not a tuple); only int and float compare across types, as in
the tests' own ``==``.

The values are the candidate's, so the host's work on them is bounded: every decoded node counts
against a per-run cap and a per-sample clock (:class:`Budget`); number texts are capped; a set or
dict is only built once its elements are known not to share hash values in bulk (ints, floats and
tuples hash predictably: 26,000 ints of one hash made a set that cost seconds, growing
quadratically); and ``typed_eq`` compares sets and dicts by sorting canonical keys, without hashing.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from typing import Any

MAX_DEPTH = 64

# Source of the encoder, executed inside the sandbox before any candidate code (it binds the
# builtins it uses at that moment; patching them later changes nothing here).
ENCODER_SOURCE = r'''
def _make_encoder(_type=type, _repr=repr, _str=str, _len=len, _list=list, _TypeError=TypeError):
    _plain = {bool: "bool", int: "int", float: "float", complex: "complex", str: "str", bytes: "bytes"}
    def enc(v, depth=0):
        if depth > 64:
            raise _TypeError("value nested too deep")
        t = _type(v)
        if v is None:
            return ["none"]
        tag = _plain.get(t)
        if tag == "bool":
            return ["bool", v]
        if tag == "int":
            return ["int", _str(v)]
        if tag == "float":
            return ["float", _repr(v)]
        if tag == "complex":
            return ["complex", _repr(v.real), _repr(v.imag)]
        if tag == "str":
            return ["str", v]
        if tag == "bytes":
            return ["bytes", v.hex()]
        if t is list or t is tuple or t is set or t is frozenset:
            return [t.__name__, [enc(x, depth + 1) for x in v]]
        if t is dict:
            return ["dict", [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]]
        raise _TypeError("not plain data: %s.%s" % (t.__module__, t.__qualname__))
    return enc
_sbx_encode = _make_encoder()
del _make_encoder
'''


class BadValue(ValueError):
    """An encoded value that is not a well-formed plain-data tree (or one too large to judge)."""


class HostBudgetExceeded(RuntimeError):
    """The host's work on one sample ran past its time budget: the sample fails, with this reason."""


# -- the host's work on one sample, bounded ----------------------------------------------------
MAX_NODES = 250_000  # decoded values of one run, all together
MAX_INT_DIGITS = 4300  # CPython's default int_max_str_digits: int() of longer text is refused anyway
MAX_FLOAT_CHARS = 64  # repr() of any float is far shorter
MAX_HASH_TIES = 8  # distinct elements of one set / dict keys that may share a hash value


class Budget:
    """What one sample may cost the host: decoded nodes (``max_nodes``) and CPU-bound time
    (``seconds``; None = no clock). ``tick`` is called per unit of work; the clock is read every
    512 ticks. Installed for the duration of a judgement with :func:`budget_scope`."""

    def __init__(self, seconds: float | None = None, max_nodes: int = MAX_NODES) -> None:
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.nodes_left = max_nodes
        self.max_nodes = max_nodes
        self._ticks = 0

    def tick(self, n: int = 1) -> None:
        self._ticks += n
        if self._ticks >= 512:
            self._ticks = 0
            self.check()

    def check(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise HostBudgetExceeded(f"host time budget of {self.seconds:g} s per sample exceeded")

    def node(self) -> None:
        self.nodes_left -= 1
        if self.nodes_left < 0:
            raise BadValue(f"values too large: over {self.max_nodes} nodes in one run")
        self.tick()


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("sbx_budget", default=None)
_UNBOUNDED = Budget(None, max_nodes=1 << 62)


def current_budget() -> Budget:
    """The budget of the judgement in progress (an unbounded one outside any)."""
    return _BUDGET.get() or _UNBOUNDED


@contextlib.contextmanager
def budget_scope(b: Budget):
    token = _BUDGET.set(b)
    try:
        yield b
    finally:
        _BUDGET.reset(token)


def check_hash_spread(items: list) -> None:
    """Refuse ``items`` as set elements / dict keys when more than MAX_HASH_TIES distinct ones share
    a hash value: a set or dict of them costs the host time quadratic in their number (ints,
    floats and tuples of them hash predictably, so a candidate can make them collide). The hashes
    are sorted, never put in a table; duplicates (equal elements) do not count. Unhashable items
    raise TypeError, as set() would."""
    b = current_budget()
    keyed = sorted([(hash(x), i) for i, x in enumerate(items)])
    b.tick(len(keyed))
    run_start = 0
    for j in range(1, len(keyed) + 1):
        if j < len(keyed) and keyed[j][0] == keyed[run_start][0]:
            continue
        if j - run_start > MAX_HASH_TIES:  # a long run of one hash: count its distinct members
            b.check()
            reps: list[Any] = []
            for _, i in keyed[run_start:j]:
                x = items[i]
                for r in reps:
                    if x == r:
                        break
                else:
                    reps.append(x)
                    if len(reps) > MAX_HASH_TIES:
                        raise BadValue(f"{len(reps)}+ distinct elements share one hash value "
                                       "(a set of them would cost quadratic time)")
            b.tick(j - run_start)
        run_start = j


def safe_set(items: Any, kind: type = set) -> Any:
    """``kind(items)`` (set or frozenset) once the items passed :func:`check_hash_spread`."""
    lst = list(items)
    check_hash_spread(lst)
    return kind(lst)


def safe_dict(pairs: Any) -> dict:
    """``dict(pairs)`` once the keys passed :func:`check_hash_spread`."""
    if isinstance(pairs, dict):
        return dict(pairs)
    lst = [tuple(p) for p in pairs]
    if any(len(p) != 2 for p in lst):
        raise ValueError("dictionary update sequence element has the wrong length")
    check_hash_spread([k for k, _ in lst])
    return dict(lst)


def decode(x: Any, depth: int = 0) -> Any:
    """Rebuild a value from its tagged tree; only builtin plain types come out. Every node counts
    against the current :class:`Budget`; sets and dict keys go through :func:`check_hash_spread`."""
    if depth > MAX_DEPTH or type(x) is not list or not x or type(x[0]) is not str:
        raise BadValue("malformed value")
    current_budget().node()
    tag, args = x[0], x[1:]
    try:
        if tag == "none" and not args:
            return None
        if tag == "bool" and len(args) == 1 and type(args[0]) is bool:
            return args[0]
        if tag == "int" and len(args) == 1 and type(args[0]) is str:
            if len(args[0].lstrip("-")) > MAX_INT_DIGITS:
                raise BadValue(f"int of over {MAX_INT_DIGITS} digits")
            return int(args[0])
        if tag == "float" and len(args) == 1 and type(args[0]) is str and len(args[0]) <= MAX_FLOAT_CHARS:
            return float(args[0])
        if tag == "complex" and len(args) == 2 and all(type(a) is str and len(a) <= MAX_FLOAT_CHARS for a in args):
            return complex(float(args[0]), float(args[1]))
        if tag == "str" and len(args) == 1 and type(args[0]) is str:
            return args[0]
        if tag == "bytes" and len(args) == 1 and type(args[0]) is str:
            return bytes.fromhex(args[0])
        if tag in ("list", "tuple", "set", "frozenset") and len(args) == 1 and type(args[0]) is list:
            items = [decode(i, depth + 1) for i in args[0]]
            if tag == "list":
                return items
            if tag == "tuple":
                return tuple(items)
            return safe_set(items, set if tag == "set" else frozenset)
        if tag == "dict" and len(args) == 1 and type(args[0]) is list:
            pairs = []
            for kv in args[0]:
                if type(kv) is not list or len(kv) != 2:
                    raise BadValue("malformed dict item")
                pairs.append((decode(kv[0], depth + 1), decode(kv[1], depth + 1)))
            return safe_dict(pairs)
    except BadValue:
        raise
    except (TypeError, ValueError) as e:  # unhashable key, bad number text, ...
        raise BadValue(str(e)[:200]) from None
    raise BadValue(f"unknown tag {tag!r}")


def _ckey(v: Any) -> tuple:
    """A sort key for a hashable plain value, equal for two values exactly when ``typed_eq`` says
    they are equal (numbers by value, int and float alike; bool apart), so sets and dicts compare
    by sorting, without hashing the candidate's values."""
    current_budget().tick()
    t = type(v)
    if v is None:
        return (0,)
    if t is bool:
        return (1, v)
    if t is int:
        return (2, v)
    if t is float:
        return (3, id(v)) if v != v else (2, v)  # NaN equals nothing, itself included
    if t is complex:
        return (4, v.real, v.imag)
    if t is str:
        return (5, v)
    if t is bytes:
        return (6, v)
    if t is tuple:
        return (7, tuple(_ckey(x) for x in v))
    if t is frozenset:
        return (8, tuple(sorted(_ckey(x) for x in v)))
    raise TypeError(f"unhashable plain value: {t.__name__}")


def typed_eq(a: Any, b: Any) -> bool:
    """``a == b`` with the types required to match, recursively (int/float may mix, bool not).
    Linear in the values' size (sets and dicts: n log n), never hashing their elements."""
    current_budget().tick()
    ta, tb = type(a), type(b)
    if ta is not tb:
        return ta in (int, float) and tb in (int, float) and a == b
    if ta in (list, tuple):
        return len(a) == len(b) and all(typed_eq(x, y) for x, y in zip(a, b))
    if ta in (set, frozenset):
        return len(a) == len(b) and sorted(map(_ckey, a)) == sorted(map(_ckey, b))
    if ta is dict:
        if len(a) != len(b):
            return False
        ia = sorted(((_ckey(k), k) for k in a), key=lambda p: p[0])
        ib = sorted(((_ckey(k), k) for k in b), key=lambda p: p[0])
        return all(x[0] == y[0] and typed_eq(a[x[1]], b[y[1]]) for x, y in zip(ia, ib))
    if ta is float and math.isnan(a) and math.isnan(b):
        return False  # as ==
    return a == b


def typed_in(x: Any, container: Any) -> bool:
    """``x in container`` with typed equality for the elements (substring for str/bytes)."""
    if type(container) in (str, bytes):
        return x in container
    if type(container) is dict:
        container = list(container)
    return any(typed_eq(x, y) for y in container)
