"""Nesting limits for native rows and the JSON decoded from them.

Broken or hostile rows can nest thousands of levels deep (a schema inside a schema inside ...).
The recursive walkers over schemas and arguments would then hit Python's recursion limit at an
arbitrary frame, as a ``RecursionError`` that names neither the row nor the cause. Instead every
walker counts its depth and stops at ``MAX_DEPTH``, far below the interpreter's limit (about
1000 frames), with :class:`TooDeep`: a quarantine reason ``too_deep``.

Real data nests far less: an OpenAI message with nested call arguments is about 10 levels, the
deepest tool schema in the fixtures about 8.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Quarantine

MAX_DEPTH = 64


class TooDeep(Quarantine, ValueError):
    """A value nests deeper than :data:`MAX_DEPTH`: quarantined as ``too_deep``.

    Also a ValueError, so callers outside the adapters that treat malformed input as a
    ValueError (the eval harness, the trace validator) keep doing so.
    """

    def __init__(self, where: str = "value") -> None:
        super().__init__("too_deep", f"{where} nests deeper than {MAX_DEPTH} levels")


def check_depth(value: Any, where: str = "value", limit: int = MAX_DEPTH) -> None:
    """Raise :class:`TooDeep` when dicts/lists in ``value`` nest deeper than ``limit``.

    Iterative (an explicit stack), so it is safe on any input; one pass over the containers.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth >= limit:
            raise TooDeep(where)
        stack.extend((child, depth + 1) for child in children)


def loads_json(text: str | bytes, where: str = "JSON") -> Any:
    """``json.loads`` whose failures are all ``json.JSONDecodeError`` or :class:`TooDeep`.

    The C decoder raises ``RecursionError`` past the interpreter's limit and plain ``ValueError``
    for integers longer than ``sys.get_int_max_str_digits()``; callers already handle
    ``JSONDecodeError`` as "not JSON", so both are reported through it (depth as TooDeep).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(where) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise json.JSONDecodeError(f"{where}: {exc}", text if isinstance(text, str) else "", 0) from None
    check_depth(value, where)
    return value
