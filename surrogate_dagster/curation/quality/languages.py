"""Per-language rules (OpenCoder's "specific" filters for each language: print-heavy code, import
lists, function-definition density, logic-free lines, code that assigns nothing, and the
language's own signs such as several ``main`` functions in one C file).

Each rule is a curation block that reads only the code blocks of its language (``languages``);
the patterns that say what a print, an import or a definition looks like are per language
(:data:`PATTERNS`), the thresholds are parameters (assets/curation.yaml). OpenCoder judged whole
files; an answer's block is often a few lines, so every ratio rule needs ``min_lines`` lines
before it fires (a 4-line snippet that is one ``def`` and a ``print`` is a fine answer).
"""

from __future__ import annotations

import re
from typing import ClassVar

from .rule_base import Rule, _nonblank


class LanguageRule(Rule):
    """A rule for the code blocks of ``languages`` only (other blocks and texts pass)."""

    languages: ClassVar[frozenset[str]] = frozenset()

    def check(self, text: str, language: str | None = None) -> str | None:
        if language not in self.languages:
            return None
        return super().check(text, language)


class LineShare(LanguageRule):
    """Share of non-blank lines matching ``pattern`` over ``max_fraction``, in a block of at
    least ``min_lines`` non-blank lines."""

    pattern: ClassVar[re.Pattern[str]]
    defaults = {"max_fraction": 0.4, "min_lines": 10}

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        return sum(1 for ln in lines if self.pattern.match(ln)) / len(lines) if lines else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class NoAssignment(LanguageRule):
    """A block of at least ``min_lines`` lines that assigns or declares no variable: a list of
    calls or declarations with no state (OpenCoder's ``var_zero``)."""

    pattern: ClassVar[re.Pattern[str]]
    defaults = {"min_lines": 15}

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]

    def measure(self, text: str) -> float:
        return float(len(self.pattern.findall(text)))

    def violates(self, value: float, text: str) -> bool:
        return value == 0 and self.applies(text)


class MatchCount(LanguageRule):
    """More than ``max_count`` matches of ``pattern`` in one block."""

    pattern: ClassVar[re.Pattern[str]]
    defaults = {"max_count": 1}

    def measure(self, text: str) -> float:
        return float(len(self.pattern.findall(text)))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_count"]


_M = re.M
# What each kind of line looks like, per language (anchored at the line start, after indentation).
PATTERNS: dict[str, dict[str, str]] = {
    "python": {
        "print": r"\s*print\s*\(",
        "import": r"\s*(import\s|from\s+[\w.]+\s+import\s)",
        "func": r"\s*(async\s+)?def\s+\w+\s*\(",
        # a literal on its own, or a name bound to a literal: data written as code
        "no_logic": r"\s*([\w.\[\]'\"]+\s*=\s*)?([-+]?\d[\d_.eE+-]*|'[^']*'|\"[^\"]*\"|True|False|None|[\[\]{}(),]+)\s*,?\s*[\]})]*,?\s*$",
        "assign": r"^\s*[\w.\[\], *]+\s*(=|\+=|-=|\*=|/=|:=|:\s*[\w\[\], .]+=)(?!=)|\bfor\s+\w|\bwith\s.+\bas\s|"
                  r"\bdef\s+\w+\s*\(\s*[^)\s]|\blambda\s+\w",
    },
    "javascript": {
        "print": r"\s*console\.(log|info|warn|error|debug)\s*\(",
        "import": r"\s*(import\s|(const|let|var)\s+[\w{}\s,]+=\s*require\s*\()",
        "func": r"\s*(export\s+)?(default\s+)?(async\s+)?(function\b|(const|let|var)\s+\w+\s*=\s*(async\s*)?(\([^)]*\)|\w+)\s*=>)",
        "no_logic": r"\s*(['\"\w$]+\s*:\s*)?(-?\d[\d.]*|'[^']*'|\"[^\"]*\"|true|false|null|[\[\]{}(),;]+)\s*,?\s*[\]}),;]*\s*$",
        "assign": r"\b(const|let|var)\s+\w|[\w\]).]\s*(=|\+=|-=)(?![=>])|\bfunction\b[^(]*\(\s*[^)\s]|"
                  r"\(\s*[^)\s][^)]*\)\s*=>|\b\w+\s*=>",
    },
    "java": {
        "print": r"\s*System\.(out|err)\.print",
        "import": r"\s*import\s+[\w.*]+\s*;",
        "func": r"\s*((public|private|protected|static|final|abstract|synchronized)\s+)+[\w<>\[\], ?]+\s+\w+\s*\([^;{]*\)\s*(throws\s+[\w.,\s]+)?(\{.*)?$",
        "no_logic": r"\s*(-?\d[\d.]*[lLfFdD]?|\"[^\"]*\"|true|false|null|[\[\]{}(),;]+)\s*,?\s*[\]}),;]*\s*$",
        "assign": r"[\w\]>)]\s+\w+\s*=(?!=)|\b\w+\s*(=|\+=|-=)(?!=)|\(\s*(final\s+)?[\w<>\[\].]+\s+\w+\s*[,)]",
    },
    "c": {
        "print": r"\s*(printf|puts|fprintf|putchar)\s*\(",
        "import": r"\s*#\s*include\b",
        # a return type, a name, parameters, then the body's brace or nothing (not a call: no ``;``)
        "func": r"(?!\s*(if|else|while|for|switch|return|do)\b)\s*([\w:*&<>]+[ \t*&]+)+\**\w+\s*\([^;{]*\)\s*(const\s*)?(\{.*)?$",
        "no_logic": r"\s*(-?\d[\d.]*[uUlLfF]*|0x[0-9a-fA-F]+|\"[^\"]*\"|'.'|[\[\]{}(),;]+)\s*,?\s*[\]}),;]*\s*$",
        "preprocessor": r"\s*#\s*(include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|error)\b",
        "main": r"\bint\s+main\s*\(",
    },
    "go": {
        "print": r"\s*(fmt\.(Print|Println|Printf)|log\.(Print|Println|Printf))\s*\(",
        "import": r"\s*(import\b|\"[\w./-]+\"\s*$)",
        "func": r"\s*func\s",
        "no_logic": r"\s*(\w+\s*:\s*)?(-?\d[\d.]*|\"[^\"]*\"|`[^`]*`|true|false|nil|[\[\]{}(),]+)\s*,?\s*[\]}),]*\s*$",
        "assign": r":=|\bvar\s+\w|\b\w+\s*(=|\+=|-=)(?!=)|\bfunc\s*(\([^)]*\)\s*)?\w*\s*\(\s*\w+\s+[\w*\[\].]",
    },
    "rust": {
        "print": r"\s*(println|print|eprintln|eprint|dbg)!\s*\(",
        "import": r"\s*(pub\s+)?use\s+[\w:{}, *]+;",
        "func": r"\s*(pub(\([\w:]+\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+\w+",
        "no_logic": r"\s*(\w+\s*:\s*)?(-?\d[\d._]*(u8|u16|u32|u64|i32|i64|f32|f64|usize)?|\"[^\"]*\"|true|false|[\[\]{}(),;]+)\s*,?\s*[\]}),;]*\s*$",
        "assign": r"\blet\s+|\b\w+\s*(=|\+=|-=)(?![=>])|\bfn\s+\w+\s*(<[^>]*>)?\s*\(\s*(&?mut\s+)?\w+\s*:",
    },
    "csharp": {
        "print": r"\s*Console\.(Write|WriteLine)\s*\(",
        "import": r"\s*using\s+[\w.]+\s*;",
        "func": r"\s*((public|private|protected|internal|static|async|override|virtual)\s+)+[\w<>\[\], ?]+\s+\w+\s*\([^;{]*\)\s*(throws\s+[\w.,\s]+)?(\{.*)?$",
        "no_logic": r"\s*(-?\d[\d.]*[mMfFdD]?|\"[^\"]*\"|true|false|null|[\[\]{}(),;]+)\s*,?\s*[\]}),;]*\s*$",
        "assign": r"[\w\]>)]\s+\w+\s*=(?!=)|\b\w+\s*(=|\+=|-=)(?!=)|\bvar\s+\w|\(\s*[\w<>\[\].]+\s+\w+\s*[,)]",
    },
    "bash": {
        "print": r"\s*(echo|printf)\b",
        "func": r"\s*(function\s+\w+|\w+\s*\(\s*\))\s*\{?",
    },
}
PATTERNS["typescript"] = {**PATTERNS["javascript"],
                          "func": PATTERNS["javascript"]["func"].replace(r"function\b", r"function\b|(public|private|protected)\s+\w+\s*\(")}
PATTERNS["cpp"] = {**PATTERNS["c"], "print": r"\s*(std::)?(cout|cerr)\s*<<|\s*(printf|puts)\s*\("}
LANGUAGE_TAGS = {"typescript": frozenset({"typescript", "tsx"})}

# kind -> (base class, parameter defaults, why)
KINDS: dict[str, tuple[type[LanguageRule], dict, str]] = {
    "print": (LineShare, {"max_fraction": 0.4, "min_lines": 10}, "mostly output statements: a print script, not a program"),
    "import": (LineShare, {"max_fraction": 0.5, "min_lines": 10}, "mostly imports: a header with no code under it"),
    "func": (LineShare, {"max_fraction": 0.3, "min_lines": 15}, "mostly one-line definitions: stubs or an API listing"),
    "no_logic": (LineShare, {"max_fraction": 0.7, "min_lines": 15}, "mostly literals: data written as code"),
    "assign": (NoAssignment, {"min_lines": 15}, "no variable assigned or bound as a parameter: a list of calls "
                                                  "or declarations with no state"),
    "preprocessor": (LineShare, {"max_fraction": 0.8, "min_lines": 10}, "mostly preprocessor directives: a config header"),
    "main": (MatchCount, {"max_count": 1}, "several main functions: files pasted together"),
}
# rule kinds each language gets (what its patterns describe)
LANGUAGE_KINDS: dict[str, tuple[str, ...]] = {
    "python": ("print", "import", "func", "no_logic", "assign"),
    "javascript": ("print", "import", "func", "no_logic", "assign"),
    "typescript": ("print", "import", "func", "no_logic", "assign"),
    "java": ("print", "import", "func", "no_logic", "assign"),
    "go": ("print", "import", "func", "no_logic", "assign"),
    "rust": ("print", "import", "func", "no_logic", "assign"),
    "csharp": ("print", "import", "func", "no_logic", "assign"),
    "c": ("print", "import", "func", "no_logic", "preprocessor", "main"),
    "cpp": ("print", "import", "func", "no_logic", "preprocessor", "main"),
    "bash": ("print", "func"),
}
_KIND_NAME = {"print": "print_lines", "import": "import_lines", "func": "func_ratio", "no_logic": "no_logic_lines",
              "assign": "no_assignment", "preprocessor": "preprocessor_lines", "main": "main_count"}


def _make(language: str, kind: str) -> type[LanguageRule]:
    base, defaults, why = KINDS[kind]
    name = f"{language}_{_KIND_NAME[kind]}"
    attrs = {"name": name, "defaults": dict(defaults), "languages": LANGUAGE_TAGS.get(language, frozenset({language})),
             "pattern": re.compile(PATTERNS[language][kind], _M),
             "__doc__": f"{language}: {why} ({base.__name__}; pattern per language in PATTERNS)."}
    return type("".join(p.capitalize() for p in name.split("_")), (base,), attrs)


class PythonPassLines(LanguageRule):
    """Python: ``pass`` over ``max_fraction`` of the lines (OpenCoder: 0.05): a skeleton of
    empty bodies."""

    name = "python_pass_lines"
    languages = frozenset({"python"})
    defaults = {"max_fraction": 0.1, "min_lines": 10}
    _PASS = re.compile(r"^\s*pass\s*(#.*)?$")

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        return sum(1 for ln in lines if self._PASS.match(ln)) / len(lines) if lines else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class PythonSimpleFuncs(LanguageRule):
    """Python: most functions are one-liners returning a constant or their argument, or empty
    (OpenCoder's ``simplefunc``): generated accessors, stubs."""

    name = "python_simple_funcs"
    languages = frozenset({"python"})
    defaults = {"max_fraction": 0.6, "min_funcs": 4}
    _DEF = re.compile(r"^([ \t]*)(?:async\s+)?def\s+\w+\s*\([^)]*\)[^:]*:[ \t]*\n([ \t]*)(.*)$", re.M)
    _TRIVIAL = re.compile(r"(pass|\.\.\.|return(\s+(self\.\w+|\w+|-?\d+|'[^']*'|\"[^\"]*\"|True|False|None))?)\s*(#.*)?$")

    def applies(self, text: str) -> bool:
        return text.count("def ") >= self.params["min_funcs"]

    def measure(self, text: str) -> float:
        funcs = self._DEF.findall(text)
        if len(funcs) < self.params["min_funcs"]:
            return 0.0
        trivial = 0
        for m in self._DEF.finditer(text):
            body = m.group(3)
            rest = text[m.end():].lstrip("\n")
            nxt = rest.split("\n", 1)[0] if rest else ""
            # one statement body: the next line is not indented deeper than the first body line
            one_line = not nxt.strip() or len(nxt) - len(nxt.lstrip()) < len(m.group(2))
            trivial += bool(self._TRIVIAL.match(body.strip())) and one_line
        return trivial / len(funcs)

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"]


class HtmlTextChars(LanguageRule):
    """HTML: under ``min_text_chars`` of visible text in a page of at least ``min_chars``
    (OpenCoder: < 100): markup scaffolding with nothing to read."""

    name = "html_text_chars"
    languages = frozenset({"html"})
    defaults = {"min_text_chars": 100, "min_chars": 2000}
    _TAG = re.compile(r"<script\b.*?</script>|<style\b.*?</style>|<[^>]+>", re.S | re.I)

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]

    def measure(self, text: str) -> float:
        return float(len("".join(self._TAG.sub(" ", text).split())))

    def violates(self, value: float, text: str) -> bool:
        return value < self.params["min_text_chars"] and self.applies(text)


class HtmlTextWords(LanguageRule):
    """HTML: visible words under ``min_fraction`` of all words (OpenCoder: 0.2), in a page of at
    least ``min_chars``: the text is lost in the markup."""

    name = "html_text_words"
    languages = frozenset({"html"})
    defaults = {"min_fraction": 0.2, "min_chars": 2000}
    _TAG = HtmlTextChars._TAG

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]

    def measure(self, text: str) -> float:
        total = len(re.findall(r"\w+", text))
        return len(re.findall(r"\w+", self._TAG.sub(" ", text))) / total if total else 1.0

    def violates(self, value: float, text: str) -> bool:
        return value < self.params["min_fraction"] and self.applies(text)


class SqlDigitFraction(LanguageRule):
    """SQL: digits over ``max_fraction`` of the characters (OpenCoder: 0.3 for SQL): a value
    dump, not a query."""

    name = "sql_digit_fraction"
    languages = frozenset({"sql"})
    defaults = {"max_fraction": 0.3, "min_chars": 200}

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]

    def measure(self, text: str) -> float:
        return sum(c.isdigit() for c in text) / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


LANGUAGE_RULES: tuple[type[Rule], ...] = (
    *(_make(lang, kind) for lang, kinds in LANGUAGE_KINDS.items() for kind in kinds),
    PythonPassLines, PythonSimpleFuncs, HtmlTextChars, HtmlTextWords, SqlDigitFraction,
)
