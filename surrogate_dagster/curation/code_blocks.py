"""Fenced code blocks in assistant answers: where they are and which language they hold.

Curation checks that look at code (AST validity, code heuristics, educational value) all start
here, so they agree on what "the code of a row" is:

- ``answer_texts(row)``: the texts a row trains the model to produce. SFT: every assistant turn.
  DPO: ``chosen`` only; ``rejected`` is *meant* to be worse (often broken code is exactly why it
  was rejected), so filtering on it would throw away the most informative pairs.
- ``extract_code_blocks(text)``: CommonMark-style fences (``` or ~~~, closing fence of the same
  character and at least the same length), language from the info string through ``ALIASES``,
  and a conservative guess when the tag is missing. ``language=None`` means "unknown": callers
  skip the block and count it, they never fail it.

Hermes ``<tool_call>`` spans are removed before scanning: their JSON arguments are data, not code
(and may contain fences of their own, e.g. a ``write_file`` call whose content is Markdown).
``<think>`` spans are removed too: reasoning drafts are legitimately partial, and it is the final
answer's code that must parse. No Dagster imports here.

Shared work: ``answer_parts(text)`` (blocks + prose of one answer) is memoized in a small
bounded FIFO (``PARTS_MEMO``), so the three checks that run one after the other on a row scan
its fences and guess its languages once; ``ast_validity.PARSE_MEMO`` does the same for
tree-sitter parses. Both hold at most a few thousand recent answers (see ``memo.BoundedMemo``).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Iterator

from ..memo import BoundedMemo

# Canonical names that have a tree-sitter grammar in the environment (see ast_validity.GRAMMARS).
PARSEABLE = ("python", "javascript", "typescript", "tsx", "java", "c", "cpp", "go", "rust",
             "bash", "dockerfile", "yaml", "hcl", "json")

# Fence tag (lower-cased, first word) -> canonical language. Languages without a grammar still get
# a canonical name so that they are counted by language rather than lumped into "unknown".
ALIASES: dict[str, str] = {
    **{t: "python" for t in ("python", "py", "python3", "py3", "pyw", "pyi", "sage", "ipython",
                             "ipython3", "gyp", "bazel", "starlark")},
    # Python 2 has no grammar here: the Python check rejects print/exec statements.
    **{t: "python2" for t in ("python2", "py2")},
    **{t: "pycon" for t in ("pycon", "python-repl", "pyrepl", "python-console", "doctest")},
    **{t: "javascript" for t in ("javascript", "js", "jsx", "node", "nodejs", "mjs", "cjs",
                                 "ecmascript", "es6")},
    **{t: "typescript" for t in ("typescript", "ts", "mts", "cts")},
    "tsx": "tsx",
    **{t: "java" for t in ("java",)},
    **{t: "c" for t in ("c", "h")},
    **{t: "cpp" for t in ("cpp", "c++", "cxx", "cc", "hpp", "hxx", "hh", "h++", "cplusplus",
                          "arduino", "ino", "cuda", "cu")},
    **{t: "go" for t in ("go", "golang")},
    **{t: "rust" for t in ("rust", "rs")},
    **{t: "bash" for t in ("bash", "sh", "shell", "zsh", "ksh", "shellscript", "shell-script",
                           "ash", "dash", "bats", "sh-session-script")},
    **{t: "console" for t in ("console", "shell-session", "sh-session", "shellsession", "terminal",
                              "cmd", "bat", "batch", "powershell", "ps1", "pwsh", "ps")},
    **{t: "dockerfile" for t in ("dockerfile", "docker", "containerfile")},
    **{t: "yaml" for t in ("yaml", "yml", "docker-compose", "compose", "k8s", "kubernetes",
                           "ansible", "helm")},
    **{t: "hcl" for t in ("hcl", "terraform", "tf", "tfvars", "hcl2", "nomad", "packer")},
    **{t: "json" for t in ("json", "geojson", "jsonl-record")},
    **{t: "jsonc" for t in ("jsonc", "json5", "jsonl", "ndjson")},
    **{t: "toml" for t in ("toml",)},
    **{t: "text" for t in ("text", "txt", "plaintext", "plain", "output", "out", "log", "none",
                           "nohighlight", "no-highlight", "stdout", "stderr", "result")},
    **{t: "diff" for t in ("diff", "patch", "udiff", "git-diff")},
    **{t: t for t in ("sql", "ruby", "php", "kotlin", "swift", "scala", "html", "css", "scss",
                      "xml", "markdown", "lua", "perl", "r", "haskell", "elixir", "erlang",
                      "clojure", "dart", "julia", "ocaml", "fsharp", "makefile", "cmake", "ini",
                      "graphql", "protobuf", "solidity", "zig", "nim", "groovy", "matlab",
                      "latex", "vue", "svelte", "mermaid", "nginx", "csv", "asm", "fortran",
                      "objectivec", "vb", "prolog", "scheme", "racket", "elm", "crystal", "v")},
    **{t: "csharp" for t in ("csharp", "c#", "cs", "dotnet")},
    **{t: "markdown" for t in ("md", "mdx")},
    **{t: "ruby" for t in ("rb",)},
    **{t: "kotlin" for t in ("kt", "kts")},
    **{t: "html" for t in ("htm", "xhtml", "jinja", "jinja2", "django", "erb", "handlebars")},
    **{t: "xml" for t in ("svg", "xsd", "xsl", "plist", "pom")},
    **{t: "makefile" for t in ("make", "mk")},
    **{t: "sql" for t in ("postgresql", "postgres", "psql", "mysql", "sqlite", "plsql", "tsql")},
    **{t: "protobuf" for t in ("proto",)},
    **{t: "perl" for t in ("pl",)},
    **{t: "objectivec" for t in ("objc", "objective-c")},
}

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
_TOOL_CALL = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block. ``language`` is canonical (see ``ALIASES``) or None when unknown."""

    language: str | None
    tag: str          # the info string's first word as written ("" when untagged)
    code: str         # the block's content, fence indentation removed
    closed: bool      # False when the text ended inside the block (a truncated answer)
    guessed: bool     # True when ``language`` came from ``guess_language``, not the tag


def normalize_language(tag: str) -> str | None:
    """Map a fence info string (``"Python title=x.py"``, ``"{.js}"``, ``"py:app.py"``) to a
    canonical language name, or None when it is empty or unknown."""
    word = tag.strip().split()[0] if tag.strip() else ""
    word = word.strip("{}").lstrip(".").lower()
    if word.startswith("language-"):
        word = word[len("language-"):]
    if word in ALIASES:
        return ALIASES[word]
    # "py:app.py", "python,linenos", "js[data]": keep the part before the first separator
    head = re.split(r"[:,\[(=]", word, maxsplit=1)[0]
    if head in ALIASES:
        return ALIASES[head]
    # A bare file name as the tag ("main.go", "Dockerfile.dev", "app.tsx")
    if word.startswith("dockerfile") or word.endswith("dockerfile"):
        return "dockerfile"
    if "." in word:
        return ALIASES.get(word.rsplit(".", 1)[1])
    return None


# (language, pattern, weight): summed per language; a guess needs a clear winner (see below).
_SIGNALS: list[tuple[str, re.Pattern[str], int]] = [
    ("python", re.compile(r"^\s*(def|class) \w+.*:\s*$", re.M), 3),
    ("python", re.compile(r"^\s*(from [\w.]+ import |import [\w.]+(\s+as \w+)?\s*$)", re.M), 3),
    ("python", re.compile(r"^\s*(elif .*|else|try|except.*|finally|with .*)\s*:\s*$", re.M), 2),
    ("python", re.compile(r"\bprint\(|\bself\.|__name__|\bNone\b|\bTrue\b|\bFalse\b"), 1),
    ("javascript", re.compile(r"\b(const|let) \w+\s*=|=>\s*[{(]|\bconsole\.log\(|\brequire\("), 2),
    ("javascript", re.compile(r"^\s*(export |import .* from ['\"])", re.M), 1),
    ("javascript", re.compile(r"\bfunction\s*\w*\s*\("), 2),
    ("typescript", re.compile(r"\b(interface|type) \w+\s*[={<]|:\s*(string|number|boolean)\b"), 3),
    ("java", re.compile(r"\b(public|private|protected)\s+(static\s+)?(final\s+)?(class|void|int|"
                        r"String)\b"), 3),
    ("java", re.compile(r"\bSystem\.out\.print|\bString\[\] args|^\s*package [\w.]+;", re.M), 3),
    ("cpp", re.compile(r"\bstd::|#include <(iostream|vector|string|map|memory)>|\bcout\s*<<"), 4),
    ("c", re.compile(r"#include <(stdio|stdlib|string)\.h>|\bprintf\(|\bmalloc\("), 3),
    ("go", re.compile(r"^\s*package \w+\s*$|^\s*func (\(\w+ \*?\w+\) )?\w+\(|:= |\bfmt\.", re.M), 3),
    ("rust", re.compile(r"\bfn \w+\s*[(<]|\blet mut\b|\bprintln!|\bimpl\b|&mut |::new\("), 3),
    ("bash", re.compile(r"^#!/(usr/)?bin/(env )?(ba|z)?sh", re.M), 6),
    ("bash", re.compile(r"^\s*(sudo |apt(-get)? |pip3? install|npm (i|install|run) |cd |mkdir |"
                        r"export \w+=|echo |git (clone|add|commit|push|checkout) |curl |chmod )",
                        re.M), 2),
    ("dockerfile", re.compile(r"^FROM \S+", re.M), 3),
    ("dockerfile", re.compile(r"^(RUN|COPY|WORKDIR|CMD|ENTRYPOINT|EXPOSE|ENV) ", re.M), 2),
    ("hcl", re.compile(r"^(resource|provider|variable|module|output|data|terraform|locals)"
                       r"( \"[\w-]+\")* \{", re.M), 6),
    ("yaml", re.compile(r"^(apiVersion|kind|services|version|name|on|jobs|steps|hosts):", re.M), 3),
    ("yaml", re.compile(r"^\s*- \w+:|^\s*[\w-]+:\s*$", re.M), 1),
]


def guess_language(code: str) -> str | None:
    """A conservative guess for an untagged block; None unless one language clearly wins.

    JSON is recognised by actually loading it. The scores are regex signal weights; a guess needs
    at least 4 points and a 2-point lead, because a wrong guess would turn into a false AST
    failure downstream (ast_validity does not drop rows on guessed languages by default).
    """
    stripped = code.strip()
    if not stripped:
        return None
    if stripped[0] in "[{":
        try:
            json.loads(stripped)
            return "json"
        except ValueError:
            pass
    if stripped.startswith(">>> "):
        return "pycon"
    scores: dict[str, int] = {}
    for lang, pattern, weight in _SIGNALS:
        hits = len(pattern.findall(code[:20_000]))
        if hits:
            scores[lang] = scores.get(lang, 0) + weight * min(hits, 3)
    # Typed JavaScript is TypeScript; C++ signals subsume C ones.
    if "typescript" in scores and "javascript" in scores:
        scores["typescript"] += scores.pop("javascript")
    if "cpp" in scores and "c" in scores:
        scores["cpp"] += scores.pop("c")
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    best, top = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    return best if top >= 4 and top - runner_up >= 2 else None


def strip_non_code_spans(text: str) -> str:
    """Remove Hermes ``<tool_call>`` spans and ``<think>`` spans (see module docstring)."""
    # The substring tests skip two regex scans over texts that have neither span (most answers).
    if "<tool_call>" in text:
        text = _TOOL_CALL.sub("", text)
    if "<think>" in text:
        text = _THINK.sub("", text)
    return text


@functools.lru_cache(maxsize=256)
def _close_fence(indent: int, char: str, length: int) -> re.Pattern[str]:
    # A closing fence may be indented at most 3 columns more than the opening one: a deeper
    # fence is content (e.g. a Markdown example inside a docstring).
    return re.compile(r"^[ \t]{0,%d}%s{%d,}[ \t]*$" % (indent + 3, re.escape(char), length))


def _fences(lines: list[str]) -> Iterator[tuple[int, int, int, str, bool]]:
    """(open line, close line or len(lines), indent, info string, closed) for each fence.

    Only lines holding three fence characters in a row can open or close a fence, so the scan
    visits just those (a few per answer) instead of matching every line.
    """
    cands = [i for i, line in enumerate(lines) if "```" in line or "~~~" in line]
    k = 0
    while k < len(cands):
        i = cands[k]
        k += 1
        m = _FENCE_OPEN.match(lines[i])
        # A backtick fence's info string may not contain backticks (that is inline code).
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            continue
        indent, fence = len(m["indent"]), m["fence"]
        close = _close_fence(indent, fence[0], len(fence))
        while k < len(cands) and not close.match(lines[cands[k]]):
            k += 1
        j = cands[k] if k < len(cands) else len(lines)
        yield i, j, indent, m["info"].strip(), j < len(lines)
        k += 1  # the closing line cannot open the next fence


@dataclass(frozen=True)
class AnswerParts:
    """One answer split into its fenced code blocks and the prose around them."""

    blocks: tuple[CodeBlock, ...]
    prose: str


def _split_answer(text: str, guess_untagged: bool) -> AnswerParts:
    stripped = strip_non_code_spans(text)
    lines = stripped.split("\n")
    blocks: list[CodeBlock] = []
    prose_lines: list[str] = []  # the lines outside every fence (fences come in order, disjoint)
    after = 0
    for start, end, indent, info, closed in _fences(lines):
        prose_lines += lines[after:start]
        after = end + 1
        content = lines[start + 1:end]
        if indent:
            # remove the opening fence's indentation, but never more than a line has
            content = [line[min(indent, len(line) - len(line.lstrip(" \t"))):] for line in content]
        code = "\n".join(content)
        tag = info.split()[0] if info else ""
        language = normalize_language(info) if info else None
        guessed = False
        if language is None and not info and guess_untagged:
            language = guess_language(code)
            guessed = language is not None
        if language == "python" and code.lstrip().startswith(">>> "):
            language = "pycon"  # an interpreter transcript tagged as python: not a program
        blocks.append(CodeBlock(language, tag, code, closed, guessed))
    prose = "\n".join(prose_lines + lines[after:]) if blocks else stripped
    return AnswerParts(tuple(blocks), prose)


PARTS_MEMO = BoundedMemo()


def answer_parts(text: str, *, guess_untagged: bool = True) -> AnswerParts:
    """Blocks and prose of one answer, memoized in ``PARTS_MEMO``: the shared entry point of AST
    validity, the heuristics and the edu scorer."""
    return PARTS_MEMO.get((text, guess_untagged), len(text), lambda: _split_answer(text, guess_untagged))


def extract_code_blocks(text: str, *, guess_untagged: bool = True) -> list[CodeBlock]:
    """All fenced code blocks of a Markdown text, in order.

    Fences may be indented (answers put code inside list items); the opening fence's indentation
    is removed from each content line. An unclosed fence runs to the end of the text
    (``closed=False``), as CommonMark specifies.
    """
    return list(answer_parts(text, guess_untagged=guess_untagged).blocks)


def answer_texts(row: dict) -> list[str]:
    """The texts a row teaches the model to write: assistant turns (SFT) or ``chosen`` (DPO)."""
    kind = row.get("kind")
    if kind == "sft":
        return [m["content"] for m in row.get("messages") or [] if m.get("role") == "assistant"]
    if kind == "dpo":
        # Only chosen: rejected answers may be broken on purpose (see module docstring).
        return [row.get("chosen") or ""]
    raise ValueError(f"row {row.get('id')!r}: unknown kind {kind!r} (expected 'sft' or 'dpo')")


def prose_of(text: str) -> str:
    """The answer's text outside code fences, tool calls and think spans."""
    return answer_parts(text).prose
