"""Code-block extraction and tree-sitter AST validity (surrogate_dagster.curation.ast_validity)."""

from __future__ import annotations

import socket

import pytest

from surrogate_dagster.curation.ast_validity import GRAMMARS, AstChecker, check_row_code, load_language
from surrogate_dagster.curation.blocks import BlockStats, run_blocks
from surrogate_dagster.curation.code_blocks import (CodeBlock, answer_texts, extract_code_blocks,
                                                    guess_language, normalize_language, prose_of)


def sft(answer: str, user: str = "please help") -> dict:
    return {"id": "r1", "kind": "sft", "messages": [
        {"role": "user", "content": user}, {"role": "assistant", "content": answer}]}


def checked(rows: list[dict], checker: AstChecker | None = None) -> tuple[list, dict]:
    """The AST block over rows: (reasons, its metadata)."""
    checker = checker or AstChecker()
    stats = BlockStats()
    reasons = run_blocks([checker], rows, stats)
    return reasons, checker.metadata(stats.of("ast"))


def fenced(lang: str, code: str) -> str:
    return f"Here you go:\n\n```{lang}\n{code}\n```\n\nDone."


# ------------------------------------------------------------------ fence tags and extraction
@pytest.mark.parametrize("tag,expected", [
    ("py", "python"), ("python3", "python"), ("Python", "python"), ("js", "javascript"),
    ("jsx", "javascript"), ("ts", "typescript"), ("tsx", "tsx"), ("sh", "bash"), ("shell", "bash"),
    ("zsh", "bash"), ("bash", "bash"), ("dockerfile", "dockerfile"), ("Dockerfile", "dockerfile"),
    ("yml", "yaml"), ("hcl", "hcl"), ("terraform", "hcl"), ("tf", "hcl"), ("c++", "cpp"),
    ("cpp", "cpp"), ("golang", "go"), ("rs", "rust"), ("java", "java"), ("c", "c"), ("h", "c"),
    ("json", "json"), ("{.python}", "python"), ("python title=app.py", "python"),
    ("py:app.py", "python"), ("language-js", "javascript"), ("main.go", "go"),
    ("Dockerfile.dev", "dockerfile"), ("console", "console"), ("text", "text"), ("sql", "sql"),
    ("klingon", None), ("", None),
])
def test_normalize_language(tag, expected):
    assert normalize_language(tag) == expected


def test_extract_blocks_tags_indent_tilde_and_nesting():
    text = ("Intro\n```python\nx = 1\n```\n"
            "1. Step one:\n   ```js\n   const y = 2;\n     nested();\n   ```\n"
            "~~~yaml\na: 1\n~~~\n"
            "````markdown\n```python\nprint('inner')\n```\n````\n")
    blocks = extract_code_blocks(text)
    assert [(b.language, b.code) for b in blocks] == [
        ("python", "x = 1"), ("javascript", "const y = 2;\n  nested();"), ("yaml", "a: 1"),
        ("markdown", "```python\nprint('inner')\n```")]
    assert all(b.closed and not b.guessed for b in blocks)


def test_unclosed_fence_runs_to_end_and_is_marked():
    (block,) = extract_code_blocks("Sure:\n```python\ndef f():\n    return 1")
    assert block == CodeBlock("python", "python", "def f():\n    return 1", closed=False, guessed=False)


def test_tool_calls_and_think_spans_are_not_code():
    answer = ('<think>draft:\n```python\ndef broken(:\n```\n</think>\nCalling the tool.\n'
              '<tool_call>\n{"name": "write_file", "arguments": {"content": "```python\\ndef x(:\\n```"}}\n'
              '</tool_call>')
    assert extract_code_blocks(answer) == []
    assert check_row_code(sft(answer)) is None


def test_untagged_block_language_guess_is_conservative():
    assert guess_language("def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n") == "python"
    assert guess_language('{"a": [1, 2]}') == "json"
    assert guess_language("FROM python:3.11\nRUN pip install x\nCMD [\"python\"]") == "dockerfile"
    assert guess_language('resource "aws_s3_bucket" "b" {\n  bucket = "x"\n}') == "hcl"
    assert guess_language("#!/bin/bash\necho hi") == "bash"
    assert guess_language("ls -F") is None
    assert guess_language("Output: 42 apples") is None
    (block,) = extract_code_blocks("```\nimport os\nprint(os.getcwd())\n```")
    assert block.language == "python" and block.guessed


def test_answer_texts_sft_assistant_turns_and_dpo_chosen_only():
    row = {"kind": "sft", "messages": [{"role": "user", "content": "u"},
                                       {"role": "assistant", "content": "a1"},
                                       {"role": "tool", "content": "t"},
                                       {"role": "assistant", "content": "a2"}]}
    assert answer_texts(row) == ["a1", "a2"]
    assert answer_texts({"kind": "dpo", "chosen": "c", "rejected": "r"}) == ["c"]
    with pytest.raises(ValueError, match="unknown kind"):
        answer_texts({"id": "x", "kind": "pretrain"})


def test_prose_of_drops_fences():
    assert prose_of("Look:\n```py\nx = 1\n```\nThat's it.").split() == ["Look:", "That's", "it."]


# ------------------------------------------------------------------ AST validity per language
VALID_INVALID = {
    "python": ("def f(x):\n    return x * 2\n", "def f(x)\n    return x * 2\n"),
    "javascript": ("const f = (x) => x * 2;\nconsole.log(f(2));", "function f( {\n  return 1;"),
    "typescript": ("interface P { x: number }\nconst p: P = { x: 1 };", "interface P { x: number"),
    "tsx": ("const A = () => <div className=\"a\">hi</div>;", "const A = () => <div>hi;"),
    "java": ("public class A {\n  int f() { return 1; }\n}", "public class A {\n  int f() { return ; \n}"),
    "c": ("#include <stdio.h>\nint main(void) { printf(\"hi\"); return 0; }", "int main( { return 0; }"),
    "cpp": ("#include <vector>\nint main() { std::vector<int> v{1}; return v[0]; }",
            "int main() { std::vector<int> v{1; }"),
    "go": ("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(1)\n}", "func main() {\n\tx := \n}"),
    "rust": ("fn main() {\n    let x = 5;\n    println!(\"{}\", x);\n}", "fn main() {\n    let x = ;\n}"),
    "bash": ("#!/bin/bash\nfor f in *.txt; do\n  echo \"$f\"\ndone", "if [ -f x ]; then\n  echo hi\n"),
    "dockerfile": ("FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN pip install -r req.txt\nCMD [\"python\", \"app.py\"]",
                   "this is not a dockerfile"),
    "yaml": ("services:\n  web:\n    image: nginx\n    ports:\n      - \"80:80\"", "a: [1, 2\nb: 3"),
    "hcl": ('resource "aws_s3_bucket" "logs" {\n  bucket = "my-logs"\n  tags = { env = "dev" }\n}',
            'resource "aws_s3_bucket" "logs" {\n  bucket = \n}'),
    "json": ('{"a": [1, 2], "b": {"c": null}}', '{"a": 1,}'),
}


def test_every_issue_language_has_an_offline_grammar(monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    required = {"python", "javascript", "typescript", "java", "c", "cpp", "go", "rust", "bash",
                "dockerfile", "yaml", "hcl"}
    assert required <= set(GRAMMARS)
    for name in GRAMMARS:
        assert load_language(name) is not None


@pytest.mark.parametrize("lang", sorted(VALID_INVALID))
def test_valid_and_invalid_snippets(lang):
    valid, invalid = VALID_INVALID[lang]
    tag = {"cpp": "c++", "bash": "sh", "hcl": "terraform"}.get(lang, lang)
    reasons, meta = checked([sft(fenced(tag, valid)), sft(fenced(tag, invalid))])
    assert reasons == [None, f"ast_error_{lang}"]
    assert meta["per_language"][lang] == {"parsed": 1, "failed": 1, "pass_rate": 0.5}
    assert meta["dropped_by_reason"] == {f"ast_error_{lang}": 1}


@pytest.mark.parametrize("lang,snippet", [
    ("java", "public int add(int a, int b) { return a + b; }"),
    ("java", "int total = 0;\nfor (int x : xs) total += x;"),
    ("go", "x := 5\nfmt.Println(x)"),
    ("rust", "let v = vec![1, 2];\nprintln!(\"{:?}\", v);"),
    ("python", "    def method(self):\n        return self.x\n"),   # excerpt with class indentation
    ("typescript", "const el = <div>{name}</div>;"),                # React component tagged ts
    ("c", "std::string s = \"x\";"),                                # C++ tagged c
])
def test_answer_snippets_are_accepted(lang, snippet):
    assert AstChecker().parses(snippet, lang)


@pytest.mark.parametrize("lang,snippet", [("javascript", "render() {\n  return 1;\n}"),
                                          ("cpp", "std::cout << 1;")])
def test_some_snippets_need_the_wrappers(lang, snippet):
    assert AstChecker().parses(snippet, lang)
    assert not AstChecker(use_snippet_wrappers=False).parses(snippet, lang)


def test_skips_are_counted_not_dropped():
    answer = ("```klingon\nQapla'\n```\n"              # unknown tag -> no canonical language
              "```sql\nSELEC * FRM t\n```\n"            # known language without a grammar
              "```\nsome output 42\n```\n"              # untagged, no confident guess
              "```\nimport os\ndef f(:\n    print(os)\n```\n"  # guessed python, broken
              "```python\n\n```\n")                     # empty
    reasons, meta = checked([sft(answer)])
    assert reasons == [None]
    assert meta["blocks_skipped"] == {"empty:python": 1, "guessed_failed:python": 1, "no_grammar:sql": 1,
                                      "unknown_language:unknown": 2}
    assert AstChecker(drop_guessed=True).decide(sft(answer)) == "ast_error_python"


def test_oversized_block_skipped_with_reason():
    code = "x = (\n" * 10  # broken, but larger than the cap
    reasons, meta = checked([sft(fenced("python", code))], AstChecker(max_parse_bytes=20))
    assert reasons == [None] and meta["blocks_skipped"] == {"too_large:python": 1}


def test_only_selected_languages_checked():
    reasons, meta = checked([sft(fenced("go", "func main( {"))], AstChecker(languages=["python"]))
    assert reasons == [None] and meta["blocks_skipped"] == {"not_selected:go": 1}
    with pytest.raises(ValueError, match="no tree-sitter grammar"):
        AstChecker(languages=["cobol"])


def test_dpo_checks_chosen_not_rejected():
    good, bad = fenced("python", "def f():\n    return 1"), fenced("python", "def f(:\n    return 1")
    assert check_row_code({"kind": "dpo", "prompt": [], "chosen": good, "rejected": bad}) is None
    assert check_row_code({"kind": "dpo", "prompt": [], "chosen": bad, "rejected": good}) == "ast_error_python"


def test_user_turn_code_is_not_checked():
    row = sft("Fixed version:\n```python\ndef f():\n    return 1\n```", user="```python\ndef f(:\n```")
    assert check_row_code(row) is None


def test_first_failure_is_the_reason_and_all_blocks_counted():
    answer = fenced("go", "func main( {") + fenced("python", "def f(:") + fenced("python", "x = 1")
    assert check_row_code(sft(answer)) == "ast_error_go"
    reasons, meta = checked([sft(answer), sft(answer)])
    assert reasons == ["ast_error_go", "ast_error_go"]
    assert meta["blocks_failed"] == 4 and meta["blocks_parsed"] == 2
    assert meta["rows_checked"] == 2 and meta["rows_dropped"] == 2
    assert meta["per_language"]["python"] == {"parsed": 2, "failed": 2, "pass_rate": 0.5}


@pytest.mark.parametrize("snippet", [
    "class Solution:\n    def solve(self, nums):\n",       # truncated: empty body
    "def f(x):\n    # just a comment\n",
    "print 'hello'",                                        # Python 2 statement
])
def test_python_checks_what_the_grammar_lets_through(snippet):
    assert check_row_code(sft(fenced("python", snippet))) == "ast_error_python"


def test_python2_tag_is_skipped_not_failed():
    reasons, meta = checked([sft(fenced("python2", "print 'hello'"))])
    assert reasons == [None] and meta["blocks_skipped"] == {"no_grammar:python2": 1}


def test_deeply_indented_fence_inside_a_block_is_content():
    code = 'def f():\n    """Example:\n\n        ```\n        f()\n        ```\n    """\n    return 1'
    (block,) = extract_code_blocks(f"```python\n{code}\n```")
    assert block.code == code and block.closed


# ------------------------------------------------------------------ shared memos and the fast fence scan
def _reference_blocks(text: str) -> list[tuple[str, str, bool]]:
    """The original line-by-line fence scan (every line matched), as (tag, code, closed)."""
    import re

    from surrogate_dagster.curation.code_blocks import _FENCE_OPEN, strip_non_code_spans

    lines = strip_non_code_spans(text).split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        close = re.compile(r"^[ \t]{0,%d}%s{%d,}[ \t]*$" % (indent + 3, re.escape(fence[0]), len(fence)))
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = [ln[min(indent, len(ln) - len(ln.lstrip(" \t"))):] for ln in lines[i + 1:j]]
        info = m["info"].strip()
        out.append((info.split()[0] if info else "", "\n".join(body), j < len(lines)))
        i = j + 1
    return out


FENCE_PIECES = ["```python", "```", "~~~", "````", "  ```js", "      ```", "~~~~yaml", "```py`x`",
                "x = 1", "    y = 2", "", "text ``` inline", "\t```", "```   ", "~~~ \r", "<think>",
                "</think>", "<tool_call>", "</tool_call>", "``` c++ title=a"]


def test_fast_fence_scan_equals_reference_scan():
    import random

    rng = random.Random(3)
    texts = ["\n".join(rng.choice(FENCE_PIECES) for _ in range(rng.randint(0, 25))) for _ in range(400)]
    for text in texts:
        got = [(b.tag, b.code, b.closed) for b in extract_code_blocks(text, guess_untagged=False)]
        assert got == _reference_blocks(text), text


def test_answer_parts_memo_is_shared_bounded_and_safe():
    from surrogate_dagster.curation.code_blocks import BoundedMemo, PARTS_MEMO, answer_parts

    text = fenced("python", "def f():\n    return 1")
    PARTS_MEMO.clear()
    first = answer_parts(text)
    assert answer_parts(text) is first and PARTS_MEMO.hits == 1 and PARTS_MEMO.misses == 1
    assert prose_of(text) == first.prose and extract_code_blocks(text) == list(first.blocks)
    extract_code_blocks(text).clear()  # callers get a fresh list: the memo cannot be mutated
    assert len(answer_parts(text).blocks) == 1
    memo = BoundedMemo(max_entries=3, max_chars=10, max_text_chars=6)
    calls = []
    for key in ["aa", "bb", "cc", "dd", "aa"]:
        memo.get(key, len(key), lambda k=key: calls.append(k) or k.upper())
    assert calls == ["aa", "bb", "cc", "dd", "aa"]  # FIFO: "aa" was evicted by "dd"
    assert memo.get("toolong!", 8, lambda: "X") == "X" and memo.get("toolong!", 8, lambda: "Y") == "Y"
    memo.get("eeeeee", 6, lambda: 1)
    assert sum(c for _, c in memo._data.values()) <= 10  # the character budget holds
    # eviction is FIFO over many turnovers (O(1) each: OrderedDict, not next(iter(dict)))
    big = BoundedMemo(max_entries=100, max_chars=10**9)
    for i in range(10_000):
        big.put(i, i, 1)
    assert list(big._data) == list(range(9_900, 10_000)) and big.peek(9_950) == 9_950 and big.peek(5) is None


def test_parse_memo_keys_on_language_and_wrappers():
    from surrogate_dagster.curation.ast_validity import PARSE_MEMO

    PARSE_MEMO.clear()
    method = "render() {\n  return 1;\n}"  # a bare class method: needs the class wrapper
    assert AstChecker().parses(method, "javascript")
    assert not AstChecker(use_snippet_wrappers=False).parses(method, "javascript")
    assert AstChecker().parses(method, "javascript") and PARSE_MEMO.hits == 1
    checker = AstChecker()
    for code, lang in [("def f(:\n", "python"), ("x = 1\n", "python"), ("func main( {", "go")]:
        assert checker.parses(code, lang) == checker._parses(code, lang)
    hits = PARSE_MEMO.hits
    assert AstChecker(memo=False).parses(method, "javascript") and PARSE_MEMO.hits == hits


def test_fast_prose_equals_reference_prose():
    import random

    from surrogate_dagster.curation.code_blocks import _fences, strip_non_code_spans

    rng = random.Random(5)
    texts = ["\n".join(rng.choice(FENCE_PIECES) for _ in range(rng.randint(0, 25))) for _ in range(400)]
    for text in texts:
        lines = strip_non_code_spans(text).split("\n")
        inside = {i for start, end, *_ in _fences(lines) for i in range(start, end + 1)}
        expected = "\n".join(line for i, line in enumerate(lines) if i not in inside)
        assert prose_of(text) == expected, text


# ------------------------------------------------------------------ the Python strict check without a query
STRICT_SNIPPETS = [
    "def f():\n    return 1\n", "def f():\n", "def f():\n    # c\n", "def f():\n    # c\nx = 1\n",
    "class A:\n    def f(self):\n        pass\n    def g(self):\n", "print 'x'\n", "exec 'x'\n",
    "if x:\n    print 1\nelse:\n    pass\n", "if a:\n    pass\nelif b:\n", "match x:\n    case 1:\n        pass\n",
    "match x:\n    case 1:\n", "try:\n    pass\nexcept E:\n    pass\nfinally:\n", "with a as b:\n    x()\n",
    "for a in b:\n    pass\nelse:\n    print 2\n", "while 1:\n    try:\n        pass\n    finally:\n        pass\n",
    "@d\ndef f():\n    if x:\n        pass\n    elif y:\n        print(1)\n", "x = [i for i in y if i]\n",
    "async def f():\n    async with a:\n        async for b in c:\n            await b\n",
    "def f(a,\n      b):\n    pass\n", "def f(): pass\n", "class A: pass\n", "if x: print(1)\n",
    "try:\n    pass\nexcept* E:\n    pass\n", "lambda: (yield)\n", "def f():\n    def g():\n        def h():\n",
]


def test_python_strict_walk_equals_the_query():
    import random

    from tree_sitter import Parser, Query, QueryCursor

    from surrogate_dagster.curation.ast_validity import STRICT_QUERIES, _python_violates

    lang = load_language("python")
    parser, cursor = Parser(lang), QueryCursor(Query(lang, STRICT_QUERIES["python"]))
    rng = random.Random(7)
    pieces = [ln for s in STRICT_SNIPPETS for ln in s.splitlines()] + ["    return 2", "        y = 3", ""]
    texts = STRICT_SNIPPETS + ["\n".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) + "\n"
                               for _ in range(3000)]
    compared = positive = 0
    for text in texts:
        root = parser.parse(text.encode()).root_node
        if root.has_error:
            continue  # the strict check is only asked about error-free trees
        captures = cursor.captures(root)
        expected = bool(captures.get("py2")) or any(n.named_child_count == 0 for n in captures.get("block", ()))
        assert _python_violates(root) == expected, text
        compared += 1
        positive += expected
    assert compared > 300 and positive > 50
