"""Hand-written answers for the OpenCoder rule families: for each rule one answer it must drop
(``CASES[name][0]``) and one it must keep (``CASES[name][1]``), and good code per language.
Shared by the rule tests and by the stress corpus of the filter-decision baseline."""

from __future__ import annotations


def sft(answer: str) -> dict:
    return {"id": "r", "kind": "sft", "messages": [{"role": "user", "content": "help"},
                                                   {"role": "assistant", "content": answer}]}


def fence(lang: str, code: str) -> str:
    return f"Here it is:\n\n```{lang}\n{code}\n```\n"


def lines(template: str, n: int) -> str:
    return "\n".join(template.format(i=i, j=i * 7 + 3) for i in range(n))


# ----------------------------------------------------------------------------- good code, per language
PY = '''import json
from pathlib import Path


def load_scores(path):
    """Read one JSON score file and return the scores, best first."""
    data = json.loads(Path(path).read_text())
    scores = [entry["score"] for entry in data if "score" in entry]
    scores.sort(reverse=True)
    return scores


def summarize(scores):
    if not scores:
        return {"count": 0, "best": None}
    total = sum(scores)
    return {"count": len(scores), "best": scores[0], "mean": total / len(scores)}


if __name__ == "__main__":
    result = summarize(load_scores("scores.json"))
    print(result)'''
# long enough (>= 100 words) for the n-gram rules to judge it
PY_LONG = PY + '''


class ScoreBoard:
    """Keeps the best score per player and answers rank queries."""

    def __init__(self):
        self.best = {}

    def record(self, player, score):
        previous = self.best.get(player)
        if previous is None or score > previous:
            self.best[player] = score

    def rank(self, player):
        mine = self.best[player]
        return 1 + sum(1 for other in self.best.values() if other > mine)

    def top(self, k=3):
        ordered = sorted(self.best.items(), key=lambda kv: kv[1], reverse=True)
        return [name for name, _ in ordered[:k]]


def parse_line(line):
    """Split one "player,score,date" line; None for a header or a malformed line."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    name, score, day = parts
    return name.lower(), int(score), day


def merge_files(paths, board=None):
    board = board or ScoreBoard()
    skipped = 0
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for raw in fh:
                parsed = parse_line(raw)
                if parsed is None:
                    skipped += 1
                    continue
                player, value, _ = parsed
                board.record(player, value)
    return board, skipped


def report(board, out):
    out.write("rank  player  best\n")
    for position, player in enumerate(board.top(10), start=1):
        out.write(f"{position:>4}  {player:<10} {board.best[player]}\n")
    out.flush()


def weekly_summary(board, history):
    """Compare this week's leaders with last week's and describe who moved up or down."""
    previous = {name: rank for rank, name in enumerate(history, start=1)}
    lines = []
    for rank, name in enumerate(board.top(5), start=1):
        before = previous.get(name)
        if before is None:
            lines.append(f"{name} is new at {rank}")
        elif before > rank:
            lines.append(f"{name} climbed from {before} to {rank}")
        elif before < rank:
            lines.append(f"{name} slipped from {before} to {rank}")
        else:
            lines.append(f"{name} held {rank}")
    return "; ".join(lines) or "no games were played this week"'''
JS = '''const fs = require("fs");

function loadScores(path) {
  const data = JSON.parse(fs.readFileSync(path, "utf8"));
  const scores = data.filter((e) => "score" in e).map((e) => e.score);
  scores.sort((a, b) => b - a);
  return scores;
}

function summarize(scores) {
  if (scores.length === 0) {
    return { count: 0, best: null };
  }
  const total = scores.reduce((a, b) => a + b, 0);
  return { count: scores.length, best: scores[0], mean: total / scores.length };
}

const result = summarize(loadScores("scores.json"));
console.log(result);'''
TS = '''import { readFileSync } from "fs";

interface Entry {
  name: string;
  score?: number;
}

export function loadScores(path: string): number[] {
  const data: Entry[] = JSON.parse(readFileSync(path, "utf8"));
  const scores = data.flatMap((e) => (e.score === undefined ? [] : [e.score]));
  scores.sort((a, b) => b - a);
  return scores;
}

export function best(scores: number[]): number | null {
  let top: number | null = null;
  for (const s of scores) {
    if (top === null || s > top) top = s;
  }
  return top;
}'''
JAVA = '''import java.util.ArrayList;
import java.util.List;

public class Scores {
    private final List<Integer> values = new ArrayList<>();

    public void add(int score) {
        if (score < 0) {
            throw new IllegalArgumentException("negative score");
        }
        values.add(score);
    }

    public double mean() {
        long total = 0;
        for (int v : values) {
            total += v;
        }
        return values.isEmpty() ? 0.0 : (double) total / values.size();
    }

    public static void main(String[] args) {
        Scores s = new Scores();
        s.add(3);
        s.add(5);
        System.out.println(s.mean());
    }
}'''
C = '''#include <stdio.h>
#include <stdlib.h>

static int compare(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    int scores[] = {7, 3, 9, 1};
    size_t n = sizeof scores / sizeof scores[0];
    qsort(scores, n, sizeof scores[0], compare);
    long total = 0;
    for (size_t i = 0; i < n; i++) {
        total += scores[i];
    }
    printf("best %d mean %.2f\\n", scores[n - 1], (double)total / n);
    return 0;
}'''
CPP = '''#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    std::vector<int> scores{7, 3, 9, 1};
    std::sort(scores.begin(), scores.end());
    long total = 0;
    for (int s : scores) {
        total += s;
    }
    double mean = static_cast<double>(total) / scores.size();
    if (mean > 4.0) {
        std::cout << "high mean " << mean << std::endl;
    } else {
        std::cout << "low mean " << mean << std::endl;
    }
    return 0;
}'''
GO = '''package main

import (
	"fmt"
	"sort"
)

func summarize(scores []int) (int, float64) {
	sort.Ints(scores)
	total := 0
	for _, s := range scores {
		total += s
	}
	return scores[len(scores)-1], float64(total) / float64(len(scores))
}

func main() {
	best, mean := summarize([]int{7, 3, 9, 1})
	fmt.Println(best, mean)
}'''
RUST = '''use std::collections::HashMap;

fn best_per_player(rows: &[(&str, u32)]) -> HashMap<String, u32> {
    let mut best = HashMap::new();
    for (name, score) in rows {
        let entry = best.entry(name.to_string()).or_insert(0);
        if *score > *entry {
            *entry = *score;
        }
    }
    best
}

fn main() {
    let rows = [("ann", 7), ("bob", 3), ("ann", 9)];
    let best = best_per_player(&rows);
    let mut names: Vec<_> = best.keys().collect();
    names.sort();
    println!("{:?}", names);
}'''
CSHARP = '''using System;
using System.Collections.Generic;
using System.Linq;

public class Scores
{
    private readonly List<int> values = new List<int>();

    public void Add(int score)
    {
        if (score < 0) throw new ArgumentException("negative score");
        values.Add(score);
    }

    public double Mean()
    {
        var total = values.Sum();
        return values.Count == 0 ? 0.0 : (double)total / values.Count;
    }

    public static void Main()
    {
        var s = new Scores();
        s.Add(3);
        Console.WriteLine(s.Mean());
    }
}'''
BASH = '''#!/usr/bin/env bash
set -euo pipefail

backup_dir="${1:-/tmp/backup}"
mkdir -p "$backup_dir"

rotate() {
  local keep="$1"
  ls -1t "$backup_dir" | tail -n +"$((keep + 1))" | while read -r old; do
    rm -f "$backup_dir/$old"
  done
}

stamp=$(date +%Y%m%d-%H%M%S)
tar -czf "$backup_dir/home-$stamp.tar.gz" "$HOME/projects"
rotate 7
echo "backup written to $backup_dir"'''
HTML = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>Release notes</title></head>\n<body>\n<main>\n"
        + "\n".join(f"<p>Release {i} fixes the way the importer reads dates written with two-digit\n"
                    f"years, speeds up the search page by caching the index between requests,\n"
                    f"and documents the new export option number {i} in the user guide.</p>" for i in range(12))
        + "\n</main>\n</body>\n</html>")
SQL = ("SELECT c.name, COUNT(o.id) AS orders, SUM(o.total) AS revenue\nFROM customers AS c\n"
       "JOIN orders AS o ON o.customer_id = c.id\nWHERE o.created_at >= DATE '2024-01-01'\n"
       "GROUP BY c.name\nHAVING COUNT(o.id) > 2\nORDER BY revenue DESC\nLIMIT 20;")
JSON_CFG = '{\n  "name": "scores",\n  "version": "1.2.0",\n  "scripts": {"test": "pytest -q", "lint": "ruff check ."}\n}'

GOOD = {"python": PY_LONG, "javascript": JS, "typescript": TS, "java": JAVA, "c": C, "cpp": CPP, "go": GO,
        "rust": RUST, "csharp": CSHARP, "bash": BASH, "html": HTML, "sql": SQL, "json": JSON_CFG}

# ----------------------------------------------------------------------------- bad code, per language and kind
BAD_LINES = {
    # kind -> language -> a line template (``{i}``, ``{j}``: numbers that make each line different)
    "print_lines": {
        "python": "print('step {i} done')", "javascript": "console.log('step {i} done');",
        "typescript": "console.log(`step {i} done`);", "java": 'System.out.println("step {i} done");',
        "c": 'printf("step {i} done\\n");', "cpp": 'std::cout << "step {i} done" << std::endl;',
        "go": 'fmt.Println("step {i} done")', "rust": 'println!("step {i} done");',
        "csharp": 'Console.WriteLine("step {i} done");', "bash": 'echo "step {i} done"',
    },
    "import_lines": {
        "python": "import module_{i}", "javascript": "import part{i} from './part{i}.js';",
        "typescript": "import {{ part{i} }} from './part{i}';", "java": "import com.example.part{i}.Thing{i};",
        "c": "#include \"part{i}.h\"", "cpp": "#include <part{i}>", "go": '\t"example.com/part{i}"',
        "rust": "use crate::part{i}::Thing{i};", "csharp": "using Example.Part{i};",
    },
    "func_ratio": {
        "python": "def get_{i}(x): return x + {i}", "javascript": "function get{i}(x) {{ return x + {i}; }}",
        "typescript": "function get{i}(x: number): number {{ return x + {i}; }}",
        "java": "public static int get{i}(int x) {{ return x + {i}; }}",
        "c": "int get{i}(int x) {{ return x + {i}; }}", "cpp": "int get{i}(int x) {{ return x + {i}; }}",
        "go": "func get{i}(x int) int {{ return x + {i} }}", "rust": "fn get{i}(x: i32) -> i32 {{ x + {i} }}",
        "csharp": "public static int Get{i}(int x) {{ return x + {i}; }}", "bash": "step{i}() {{ run_step {i}; }}",
    },
    "no_logic_lines": {
        "python": "    {j},", "javascript": "  {j},", "typescript": "  {j},", "java": "    {j},", "c": "    {j},",
        "cpp": "    {j},", "go": "\t{j},", "rust": "    {j},", "csharp": "    {j},",
    },
    "no_assignment": {
        "python": "os.makedirs('out/part{i}', exist_ok=True)", "javascript": "fs.mkdirSync(`out/part{i}`);",
        "typescript": "fs.mkdirSync(`out/part{i}`);", "java": 'Files.createDirectories(Path.of("out/part{i}"));',
        "go": 'os.MkdirAll("out/part{i}", 0o755)', "rust": 'fs::create_dir_all("out/part{i}")?;',
        "csharp": 'Directory.CreateDirectory("out/part{i}");',
    },
    "preprocessor_lines": {"c": "#define LIMIT_{i} {j}", "cpp": "#define LIMIT_{i} {j}"},
}
_N = {"print_lines": 12, "import_lines": 12, "func_ratio": 16, "no_logic_lines": 18, "no_assignment": 16,
      "preprocessor_lines": 12}


def _bad_language_case(name: str) -> str:
    for kind, by_lang in BAD_LINES.items():
        if name.endswith("_" + kind):
            lang = name[: -len(kind) - 1]
            return fence(lang, lines(by_lang[lang], _N[kind]))
    raise KeyError(name)


B64ISH = "".join(chr(65 + (i * 7) % 26) for i in range(60))
CASES: dict[str, tuple[str, str]] = {
    # strings and size
    "max_chars": (fence("python", lines("value_{i} = compute_value({i}, scale=factor_{i})", 2600)),
                  fence("python", PY_LONG)),
    "max_lines": (fence("python", lines("x{i} = {i}", 3100)), fence("python", PY_LONG)),
    "long_string_lines": (fence("python", lines("MSG_{i} = '" + "word " * 30 + "{i}'", 6)),
                          fence("python", PY_LONG)),
    "string_chars_fraction": (fence("python", "MESSAGES = {\n" + lines(
        "    'k{i}': 'the importer could not read the file because the date column is empty {i}',", 8) + "\n}"),
        fence("python", PY_LONG)),
    "long_word_chars": (fence("python", lines("step_{i} = lambda:run(" + ",".join(f"stage_{k}_of_the_export_pipeline"
                                                                             for k in range(4)) + ")", 6)),
                        fence("python", PY_LONG)),
    # n-grams
    **{f"top_{n}gram_chars": (fence("python", lines(" ".join(["total += step"] + ["and more"] * (n - 2)) + " {i}"
                                                     if n > 2 else "total += step_{i}", 120)),
                              fence("python", PY_LONG)) for n in (2, 3, 4)},
    **{f"dupe_{n}gram_chars": (fence("python", "\n".join(["count = count + 1 if value > limit else count - 1 "
                                                          "# adjust the running count"] * 24)),
                               fence("python", PY_LONG)) for n in range(5, 11)},
    # generated code
    "minified_code": (fence("javascript", "".join(f"function a{i}(b){{var c=b*{i};if(c>{i}){{return c}}return b;}}"
                                                  for i in range(40))),
                      fence("javascript", JS)),
    "lock_file": (fence("json", '{\n  "name": "app",\n  "lockfileVersion": 3,\n  "packages": {\n'
                                '    "node_modules/a": {"version": "1.0.0", "integrity": "sha512-abc"},\n'
                                '    "node_modules/b": {"version": "2.0.0", "integrity": "sha512-def"}\n  }\n}'),
                  fence("json", JSON_CFG)),
    "protobuf_stub": (fence("python", "from google.protobuf import symbol_database as _symbol_database\n"
                                      "_sym_db = _symbol_database.Default()\n"),
                      fence("python", PY_LONG)),
    "bundler_output": (fence("javascript", "(function(modules) {\n  function __webpack_require__(id) {\n"
                                           "    return modules[id].call();\n  }\n})([]);"),
                       fence("javascript", JS)),
    "source_map": (fence("json", '{"version": 3, "sources": ["a.ts"], "mappings": "' + "AAAA,SAAS,CAAC;" * 6 + '"}'),
                   fence("json", JSON_CFG)),
    "parser_tables": (fence("python", "_lr_action_items = {'NUMBER': ([0, 2], [3, 3])}\n_lr_goto_items = {}"),
                      fence("python", PY_LONG)),
    "designer_code": (fence("csharp", "partial class MainForm\n{\n    #region Windows Form Designer generated code\n"
                                      "    private void InitializeComponent() { }\n    #endregion\n}"),
                      fence("csharp", CSHARP)),
    "svg_path_data": (fence("xml", '<svg xmlns="http://www.w3.org/2000/svg">\n' + lines(
        '<path d="M{i} 10 L20 {j} C30 40 50 60 70 80 S90 100 110 120 Q130 140 150 160 Z"/>', 12) + "\n</svg>"),
        fence("xml", '<configuration>\n  <appSettings>\n    <add key="mode" value="fast"/>\n  </appSettings>\n'
                     '</configuration>')),
    # data files
    "data_max_chars": (fence("json", "[\n" + lines('  {{"id": "item-{i}", "label": "label {i}"}},', 900) + "\n]"),
                       fence("json", JSON_CFG)),
    "data_unique_words": (fence("yaml", lines("- name: alpha\n  status: active\n  owner: team", 80)),
                          fence("yaml", "service:\n  name: scores\n  replicas: 3\n  image: ghcr.io/acme/scores:1.2\n"
                                        "  env:\n    LOG_LEVEL: info\n    CACHE_TTL: 60")),
    "data_digit_fraction": (fence("json", "[" + ", ".join(str(i * 7919 % 100000) for i in range(150)) + "]"),
                            fence("json", JSON_CFG)),
    "data_duplicate_lines": (fence("yaml", "\n".join(["- status: pending"] * 22 + ["- status: done", "- status: open"])),
                             fence("yaml", "service:\n  name: scores\n  replicas: 3")),
    "csv_many_rows": (fence("csv", "id,name,score\n" + lines("{i},player{i},{j}", 230)),
                      fence("csv", "id,name,score\n1,ann,7\n2,bob,3")),
    "json_many_records": (fence("json", "[\n" + lines('  {{"id": {i}, "name": "n{i}"}},', 120) + "\n]"),
                          fence("json", JSON_CFG)),
    "sql_insert_dump": (fence("sql", lines("INSERT INTO players (name, team) VALUES ('player{i}', 'team alpha');", 25)),
                        fence("sql", SQL)),
    "xml_tool_state": (fence("xml", '<?xml version="1.0" encoding="UTF-8"?>\n<project version="4">\n'
                                    '  <component name="VcsDirectoryMappings" />\n</project>'),
                       fence("xml", '<configuration>\n  <appSettings>\n    <add key="mode" value="fast"/>\n'
                                    '  </appSettings>\n</configuration>')),
    # language rules with their own measure
    "python_pass_lines": (fence("python", lines("def hook_{i}(event):\n    pass", 6)), fence("python", PY_LONG)),
    "python_simple_funcs": (fence("python", lines("def get_{i}(self):\n    return self.value_{i}\n", 5)),
                            fence("python", PY_LONG)),
    "c_main_count": (fence("c", C + "\n\n" + C.split("int main(void)", 1)[1].join(["int main(void)", ""])),
                     fence("c", C)),
    "cpp_main_count": (fence("cpp", CPP + "\n\n" + CPP), fence("cpp", CPP)),
    "html_text_chars": (fence("html", "<html><body>\n" + lines('<div class="row-{i} col-md-6 grid"><span '
                                                               'class="icon icon-{i}"></span></div>', 40)
                                      + "\n</body></html>"),
                        fence("html", HTML)),
    "html_text_words": (fence("html", "<html><body>\n" + lines(
        '<div class="card shadow rounded p-{i}" data-id="{i}" data-kind="tile" aria-hidden="true">ok</div>', 30)
        + "\n</body></html>"), fence("html", HTML)),
    "sql_digit_fraction": (fence("sql", "INSERT INTO points VALUES " + ", ".join(
        f"({i * 7919 % 100000}, {i * 104729 % 100000})" for i in range(30)) + ";"), fence("sql", SQL)),
}
for _kind, _by_lang in BAD_LINES.items():
    for _lang in _by_lang:
        CASES[f"{_lang}_{_kind}"] = (_bad_language_case(f"{_lang}_{_kind}"), fence(_lang, GOOD[_lang]))
for _lang in ("c", "cpp"):
    CASES.setdefault(f"{_lang}_no_logic_lines", (fence(_lang, "int table[] = {\n" + lines("    {j},", 18) + "\n};"),
                                                 fence(_lang, GOOD[_lang])))
