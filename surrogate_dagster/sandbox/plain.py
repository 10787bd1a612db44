"""Plain data across the sandbox boundary: encoder (runs inside), strict decoder and typed equality.

A value leaves the sandbox only as a tagged JSON tree of builtin types (None, bool, int, float,
complex, str, bytes, list, tuple, set, frozenset, dict). The decoder on the host rebuilds exactly
those types and nothing else, so no object of the candidate's can reach a comparison: a custom
``__eq__`` never runs outside the sandbox. ``typed_eq`` then compares type-for-type, recursively
(``True`` is not ``1``; a list is not a tuple); only int and float compare across types, as in
the tests' own ``==``.
"""

from __future__ import annotations

import math
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
    """An encoded value that is not a well-formed plain-data tree."""


def decode(x: Any, depth: int = 0) -> Any:
    """Rebuild a value from its tagged tree; only builtin plain types come out."""
    if depth > MAX_DEPTH or type(x) is not list or not x or type(x[0]) is not str:
        raise BadValue("malformed value")
    tag, args = x[0], x[1:]
    try:
        if tag == "none" and not args:
            return None
        if tag == "bool" and len(args) == 1 and type(args[0]) is bool:
            return args[0]
        if tag == "int" and len(args) == 1 and type(args[0]) is str:
            return int(args[0])
        if tag == "float" and len(args) == 1 and type(args[0]) is str:
            return float(args[0])
        if tag == "complex" and len(args) == 2 and all(type(a) is str for a in args):
            return complex(float(args[0]), float(args[1]))
        if tag == "str" and len(args) == 1 and type(args[0]) is str:
            return args[0]
        if tag == "bytes" and len(args) == 1 and type(args[0]) is str:
            return bytes.fromhex(args[0])
        if tag in ("list", "tuple", "set", "frozenset") and len(args) == 1 and type(args[0]) is list:
            items = [decode(i, depth + 1) for i in args[0]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and len(args) == 1 and type(args[0]) is list:
            out = {}
            for kv in args[0]:
                if type(kv) is not list or len(kv) != 2:
                    raise BadValue("malformed dict item")
                out[decode(kv[0], depth + 1)] = decode(kv[1], depth + 1)
            return out
    except (TypeError, ValueError) as e:  # unhashable key, bad number text, ...
        raise BadValue(str(e)[:200]) from None
    raise BadValue(f"unknown tag {tag!r}")


def typed_eq(a: Any, b: Any) -> bool:
    """``a == b`` with the types required to match, recursively (int/float may mix, bool not)."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return ta in (int, float) and tb in (int, float) and a == b
    if ta in (list, tuple):
        return len(a) == len(b) and all(typed_eq(x, y) for x, y in zip(a, b))
    if ta in (set, frozenset):
        if len(a) != len(b) or a != b:
            return False
        twin = {y: y for y in b}
        return all(typed_eq(x, twin[x]) for x in a)
    if ta is dict:
        if len(a) != len(b) or a.keys() != b.keys():
            return False
        twin = {k: k for k in b}
        return all(typed_eq(k, twin[k]) and typed_eq(a[k], b[twin[k]]) for k in a)
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
