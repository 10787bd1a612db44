"""AST validity: every code block an answer teaches must parse (tree-sitter, offline grammars).

Grammars come from the individual ``tree-sitter-<lang>`` wheels, which carry the compiled grammar
inside the wheel (tree-sitter-language-pack >= 1.0 downloads grammars at run time and fails
offline). A block "parses" when its tree has no ERROR or MISSING node
(``root_node.has_error``).

Chat answers show snippets, not files: a Go statement list or a Java method without its class is a
correct answer. So a block that fails as a file is retried inside a minimal wrapper for its
language (``SNIPPET_WRAPPERS``), and TypeScript/C blocks are also tried with the TSX/C++ grammars
(people tag React components as ``ts`` and C++ as ``c``). Only a block that fails every attempt
fails the row, with reason ``ast_error_<language>``.

Skipped, never failed (each counted by reason): languages without a grammar, untagged blocks whose
language is unknown, blocks larger than ``max_parse_bytes`` (a multi-megabyte block is data, not an
answer; the quality heuristics judge it), and by default blocks whose language was only guessed
(a failed parse there is as likely a wrong guess as broken code).

``AstChecker`` is a curation block (``curation.blocks``) named ``ast``: ``decide(row)`` gives
``ast_error_<language>`` for the first failing block of the row's answers (SFT assistant turns,
DPO ``chosen``), and ``decide_batch(rows, notes)`` also tallies every code block in ``notes``
(``parsed:<lang>``, ``failed:<lang>``, ``skipped:<reason>:<lang>``), which ``metadata`` turns
into the per-language figures of the filter step.

``AstChecker.parses`` is memoized process-wide (``PARSE_MEMO``): the edu scorer's "valid code"
point asks the same question about the same blocks right after this check. Python's strict rules
(``STRICT_QUERIES``) are checked by a walk over statement nodes only (``_python_violates``),
not a query over the whole tree: the same answer, a fraction of the cost.
"""

from __future__ import annotations

import importlib
import textwrap
import warnings
from collections import Counter
from typing import Iterable, Sequence

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from .blocks import BlockCounts
from .code_blocks import BoundedMemo, CodeBlock, answer_parts, answer_texts

# canonical language -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "dockerfile": ("tree_sitter_dockerfile", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "hcl": ("tree_sitter_hcl", "language"),
    "json": ("tree_sitter_json", "language"),
}

# Grammars tried in order for a language (the first is the language's own).
FALLBACK_GRAMMARS: dict[str, tuple[str, ...]] = {
    "typescript": ("typescript", "tsx"),
    "c": ("c", "cpp"),
}

# (prefix, suffix) wrappers that turn a snippet into a file; tried after the bare parse fails.
SNIPPET_WRAPPERS: dict[str, tuple[tuple[str, str], ...]] = {
    "java": (("class __Snippet {\n", "\n}\n"), ("class __Snippet { void __f() {\n", "\n} }\n")),
    "go": (("package main\n", "\n"), ("package main\nfunc __f() {\n", "\n}\n")),
    "rust": (("fn __f() {\n", "\n}\n"),),
    "c": (("void __f(void) {\n", "\n}\n"),),
    "cpp": (("void __f() {\n", "\n}\n"), ("class __Snippet {\n", "\n};\n")),
    "javascript": (("class __Snippet {\n", "\n}\n"),),   # bare class methods
    "typescript": (("class __Snippet {\n", "\n}\n"),),
}


# Where a grammar is more lenient than the language, a query finds what the compiler would reject.
# tree-sitter-python accepts an empty body ("def f():" at the end of a truncated answer) and
# Python 2 print/exec statements; CPython 3 rejects both.
STRICT_QUERIES: dict[str, str] = {
    "python": "(block) @block (print_statement) @py2 (exec_statement) @py2",
}

# The Python query above, answered by a walk over statements only (``_python_violates``): in
# tree-sitter-python 0.25 (src/node-types.json) a ``block``, ``print_statement`` or
# ``exec_statement`` can only occur under these node types, so expressions (most of a tree) are
# never visited. Same answer as the query on every error-free tree (the only trees it is asked
# about); tests/unit/curation/test_ast_validity.py checks the two against each other.
_PY_CONTAINERS = frozenset({
    "module", "block", "function_definition", "class_definition", "decorated_definition",
    "if_statement", "elif_clause", "else_clause", "for_statement", "while_statement",
    "try_statement", "except_clause", "finally_clause", "with_statement", "match_statement",
    "case_clause"})
_PY2_STATEMENTS = frozenset({"print_statement", "exec_statement"})


def _python_violates(root: Node) -> bool:
    """True when the tree has an empty ``block`` or a print/exec statement (STRICT_QUERIES)."""
    stack = [root]
    while stack:
        for child in stack.pop().named_children:
            kind = child.type
            if kind in _PY_CONTAINERS:
                if kind == "block" and child.named_child_count == 0:
                    return True
                stack.append(child)
            elif kind in _PY2_STATEMENTS:
                return True
    return False


# Parse results shared by every AstChecker in the process (see AstChecker.parses).
PARSE_MEMO = BoundedMemo(max_entries=8192)


def load_language(name: str) -> Language:
    """The tree-sitter Language for a canonical name (KeyError for languages without a grammar)."""
    module, func = GRAMMARS[name]
    pointer = getattr(importlib.import_module(module), func)()
    with warnings.catch_warnings():
        # tree-sitter-dockerfile 0.2.0 still returns an int pointer, which tree-sitter 0.26
        # accepts with a DeprecationWarning; the other wheels return a PyCapsule.
        warnings.filterwarnings("ignore", "int argument support is deprecated", DeprecationWarning)
        return Language(pointer)


class AstChecker:
    """The ``ast`` block: parses code blocks with cached tree-sitter parsers; see the module docstring for policy.

    ``languages`` restricts checking to a subset of ``GRAMMARS`` (others are skipped as
    ``not_selected``); ``drop_guessed`` makes failed blocks with a guessed language drop the row;
    ``memo=False`` parses every time instead of sharing ``PARSE_MEMO`` (for timing the parser).
    """

    name = "ast"

    def __init__(self, languages: Iterable[str] | None = None, max_parse_bytes: int = 256_000,
                 drop_guessed: bool = False, use_snippet_wrappers: bool = True, memo: bool = True) -> None:
        selected = tuple(languages) if languages is not None else tuple(GRAMMARS)
        unknown = [lang for lang in selected if lang not in GRAMMARS]
        if unknown:
            raise ValueError(f"no tree-sitter grammar for {unknown}; available: {sorted(GRAMMARS)}")
        self.languages = frozenset(selected)
        self.max_parse_bytes = max_parse_bytes
        self.drop_guessed = drop_guessed
        self.use_snippet_wrappers = use_snippet_wrappers
        self.memo = memo
        self._parsers: dict[str, Parser] = {}
        self._queries: dict[str, QueryCursor] = {}

    def _parser(self, grammar: str) -> Parser:
        parser = self._parsers.get(grammar)
        if parser is None:
            parser = self._parsers[grammar] = Parser(load_language(grammar))
        return parser

    def _violates_strict(self, grammar: str, root: Node) -> bool:
        cursor = self._queries.get(grammar)
        if cursor is None:
            query = Query(load_language(grammar), STRICT_QUERIES[grammar])
            cursor = self._queries[grammar] = QueryCursor(query)
        captures = cursor.captures(root)
        if captures.get("py2"):
            return True
        return any(node.named_child_count == 0 for node in captures.get("block", ()))

    def _has_error(self, grammar: str, source: bytes) -> bool:
        root = self._parser(grammar).parse(source).root_node
        if root.has_error:
            return True
        if grammar == "python":
            return _python_violates(root)  # STRICT_QUERIES["python"] without a full-tree query
        return grammar in STRICT_QUERIES and self._violates_strict(grammar, root)

    def parses(self, code: str, language: str) -> bool:
        """True when ``code`` parses as ``language`` (bare, then via fallbacks and wrappers).

        Memoized in ``PARSE_MEMO`` (the answer depends only on the code, the language and
        ``use_snippet_wrappers``), so the edu scorer's validity point reuses this check's parse.
        """
        if not self.memo:
            return self._parses(code, language)
        return PARSE_MEMO.get((language, self.use_snippet_wrappers, code), len(code),
                              lambda: self._parses(code, language))

    def _parses(self, code: str, language: str) -> bool:
        # Several grammars (dockerfile at least) reject a last line without its newline.
        body = code if code.endswith("\n") else code + "\n"
        # An excerpt copied from inside a class or function keeps its common indentation.
        bodies = (body, textwrap.dedent(body)) if body[:1] in " \t" else (body,)
        for candidate in bodies:
            for grammar in FALLBACK_GRAMMARS.get(language, (language,)):
                if not self._has_error(grammar, candidate.encode("utf-8", "surrogatepass")):
                    return True
        body = bodies[-1]
        if self.use_snippet_wrappers:
            for prefix, suffix in SNIPPET_WRAPPERS.get(language, ()):
                for grammar in FALLBACK_GRAMMARS.get(language, (language,)):
                    wrapped = (prefix + body + suffix).encode("utf-8", "surrogatepass")
                    if not self._has_error(grammar, wrapped):
                        return True
        return False

    def check_block(self, block: CodeBlock, notes: Counter | None = None) -> str | None:
        """None when the block passes or is skipped; ``ast_error_<lang>`` when it fails. The
        outcome is tallied in ``notes`` when given (``parsed:``/``failed:``/``skipped:`` keys)."""
        notes = notes if notes is not None else Counter()
        lang = block.language
        if lang is None:
            notes["skipped:unknown_language:unknown"] += 1
            return None
        if lang not in GRAMMARS:
            notes[f"skipped:no_grammar:{lang}"] += 1
            return None
        if lang not in self.languages:
            notes[f"skipped:not_selected:{lang}"] += 1
            return None
        if not block.code.strip():
            notes[f"skipped:empty:{lang}"] += 1
            return None
        # a character is at most 4 UTF-8 bytes: short blocks skip the encode
        if (len(block.code) * 4 > self.max_parse_bytes
                and len(block.code.encode("utf-8", "surrogatepass")) > self.max_parse_bytes):
            notes[f"skipped:too_large:{lang}"] += 1
            return None
        if self.parses(block.code, lang):
            notes[f"parsed:{lang}"] += 1
            return None
        if block.guessed and not self.drop_guessed:
            notes[f"skipped:guessed_failed:{lang}"] += 1
            return None
        notes[f"failed:{lang}"] += 1
        return f"ast_error_{lang}"

    def _decide(self, row: dict, notes: Counter) -> str | None:
        # every block is checked (and tallied) even after a failure; the first failure is the reason
        reason = None
        for text in answer_texts(row):
            for block in answer_parts(text).blocks:
                r = self.check_block(block, notes)
                reason = reason or r
        return reason

    def decide(self, row: dict) -> str | None:
        """None (keep) or ``ast_error_<lang>`` for a normalized row."""
        return self._decide(row, Counter())

    def decide_batch(self, rows: Sequence[dict], notes: Counter) -> list[str | None]:
        """``decide`` for each row, tallying every code block in ``notes``."""
        return [self._decide(r, notes) for r in rows]

    @staticmethod
    def metadata(counts: BlockCounts) -> dict:
        """Asset metadata from the runner's counts: rows, blocks, and per-language pass rates."""
        parsed: Counter = Counter()
        failed: Counter = Counter()
        skipped: Counter = Counter()
        for key, n in counts.notes.items():
            kind, _, rest = key.partition(":")
            {"parsed": parsed, "failed": failed, "skipped": skipped}[kind][rest] += n
        langs = sorted(set(parsed) | set(failed))
        return {
            "rows_checked": counts.seen,
            "rows_dropped": sum(counts.dropped.values()),
            "dropped_by_reason": dict(sorted(counts.dropped.items())),
            "blocks_parsed": sum(parsed.values()),
            "blocks_failed": sum(failed.values()),
            "blocks_skipped": dict(sorted(skipped.items())),
            "per_language": {
                lang: {"parsed": parsed[lang], "failed": failed[lang],
                       "pass_rate": round(parsed[lang] / (parsed[lang] + failed[lang]), 4)}
                for lang in langs
            },
        }


_DEFAULT: AstChecker | None = None


def check_row_code(row: dict) -> str | None:
    """``AstChecker().decide(row)`` with one shared default checker (its parsers are cached): a
    plain ``row -> reason`` function for callers that take functions (runtime.executors)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = AstChecker()
    return _DEFAULT.decide(row)
