"""Display wrappers stripped before canonical decontamination (:mod:`.decontam_canonical`).

:func:`strip_views` is the exact index's normalization (:func:`.decontam.normalize`: escapes
resolved, entities decoded, comment markers and diff prefixes dropped) with three more steps,
each taken only when its view is there:

- HTML tags (syntax-highlighted code), before the entities are decoded, so an escaped ``&lt;``
  in the code is not taken for a tag;
- notebook JSON (the ``"...",`` around each source line; the lines of the notebook's own
  structure: keys such as ``"cell_type": "code",``, brackets), so a cell's code keeps its lines
  and indentation and the next cell's code follows it;
- line-number gutters (``cat -n``, ``nl``, ``12 |``): a number at the start of a line counts as
  a gutter only when a neighbouring line carries the next or previous number, so ``10 items``
  in prose is left alone.

Line breaks are kept (the canonical index finds function bodies by indentation).
:func:`normalized_and_stripped` returns both forms from one pass: without a view the stripped
text *is* the normalized one, and the decontaminator needs both for every row.
"""

from __future__ import annotations

import html
import re

from .decontam_text import drop_markers, resolve_escapes, unescape_entities

_HTML_TAG = re.compile(r"</?[a-zA-Z][\w-]*(?:\s+[\w:-]+\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[\w-]+))*\s*/?>")
# A line's leading number and what separates it from the code: a tab or spaces (``cat -n``,
# ``nl``), or a bar/colon (editor and grep views).
_GUTTER = re.compile(r"^[ \t]*(\d{1,6})(?:[ \t]*[|:\u2502][ \t]?|\t| +|$)")
_NUMBERED = re.compile(r"^[ \t]*\d+[^\n]*\n[ \t]*\d+", re.M)  # two consecutive lines opening with numbers
_NUMBERED_LINE = re.compile(r"\n[ \t]*\d")  # what _NUMBERED needs, several times cheaper to look for
_NB_OPEN = re.compile(r'^[ \t]*"')
_NB_CLOSE = re.compile(r'"[ \t]*,?[ \t]*$')
# a notebook's own JSON lines: brackets and commas alone, a key ("cell_type": "code",
# "source": [), a string's closing quote. A source line opens with a quote then the code: a key
# never follows it (the code's own quotes are escaped, so they resolve to a second quote).
_NB_FRAME = re.compile(r'^[ \t]*(?:[\[\]{},]+|"\w+"[ \t]*:.*|",?)[ \t]*$')


def _strip_gutters(text: str) -> str:
    lines = text.split("\n")
    nums = [int(m.group(1)) if (m := _GUTTER.match(ln)) else None for ln in lines]
    out = []
    for i, ln in enumerate(lines):
        n = nums[i]
        # a gutter only where a neighbouring line (blank lines skipped) continues the count
        near = [nums[j] for j in (i - 1, i + 1) if 0 <= j < len(lines)]
        if n is not None and any(v is not None and abs(v - n) == 1 for v in near):
            ln = _GUTTER.sub("", ln, count=1)
        out.append(ln)
    return "\n".join(out)


def _strip_notebook(text: str) -> str:
    return "\n".join(_NB_CLOSE.sub("", _NB_OPEN.sub("", ln)) for ln in text.split("\n") if not _NB_FRAME.match(ln))


def _is_numbered(text: str) -> bool:
    return _NUMBERED_LINE.search(text) is not None and _NUMBERED.search(text) is not None


def _is_notebook(text: str) -> bool:
    return '"cell_type"' in text or '"source"' in text


def normalized_and_stripped(text: str) -> tuple[str, str]:
    """(:func:`.decontam.normalize` of ``text``, :func:`strip_views` of ``text``)."""
    resolved = resolve_escapes(text)
    decoded = unescape_entities(resolved)
    normalized = drop_markers(decoded)
    if "<" in resolved and "</" in resolved:  # tags out first, then the entities they escaped
        view = html.unescape(_HTML_TAG.sub("", resolved))
    elif not _is_notebook(decoded) and not _is_numbered(decoded):
        return normalized, normalized  # no view: the stripped text is the normalized one
    else:
        view = decoded
    if _is_notebook(view):
        view = _strip_notebook(view)
    if _is_numbered(view):
        view = _strip_gutters(view)
    return normalized, drop_markers(view)


def strip_views(text: str) -> str:
    """Text with escapes resolved and display wrappers removed (see the module docstring)."""
    return normalized_and_stripped(text)[1]
