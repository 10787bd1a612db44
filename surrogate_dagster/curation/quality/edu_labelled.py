"""A small hand-labelled set for checking an educational-value scorer against the Stack-Edu rubric.

HONESTY NOTE: every snippet and label here was written by one person (the author of the local
scorer), not by Llama-3.1-70B as for Stack-Edu, and the scorer's weights were tuned on the
``dev`` half only. The ``heldout`` half was labelled before the scorer was tuned and never used
for tuning. Agreement on it is still an optimistic estimate (same author, same rubric reading);
it says the local scorer is usable for local runs, not that it matches the real classifiers.

Labels (0-5) follow the Stack-Edu additive rubric, paraphrased:
 +1 valid code, even boilerplate, configuration or niche code;
 +1 addresses practical programming concepts, even without comments;
 +1 suitable for teaching: introduces key concepts, well structured, has some comments;
 +1 self-contained and highly relevant to teaching, like an exercise or tutorial section;
 +1 outstanding: well written, easy to follow, step-by-step explanations and comments.
0 = not meaningful code. ``context`` is the answer's prose around the block; it counts only
toward the last point ("step-by-step explanations").
"""

from __future__ import annotations

EXAMPLES: list[dict] = [
    # ---------------------------------------------------------------- label 0
    {"id": "py-junk-numbers", "language": "python", "label": 0, "context": "",
     "code": "1 2 3 4 5 6 7 8 9 10\n11 12 13 14 15 16 17 18 19 20\n"},
    {"id": "js-junk-garble", "language": "javascript", "label": 0, "context": "",
     "code": "asdf qwer zxcv\n;;;\n???\n"},
    {"id": "c-junk-symbols", "language": "c", "label": 0, "context": "",
     "code": "{{{ }}} ;; ;; ;;\n/* */ /* */\n"},
    {"id": "go-junk-words", "language": "go", "label": 0, "context": "",
     "code": "hello world this is not code at all just words\n"},
    # ---------------------------------------------------------------- label 1
    {"id": "py-imports-only", "language": "python", "label": 1, "context": "",
     "code": "import os\nimport sys\nimport json\nfrom typing import List, Dict\n"},
    {"id": "java-getters", "language": "java", "label": 1, "context": "",
     "code": ("public String getName() { return name; }\n"
              "public void setName(String name) { this.name = name; }\n"
              "public int getAge() { return age; }\n"
              "public void setAge(int age) { this.age = age; }\n")},
    {"id": "js-module-exports", "language": "javascript", "label": 1, "context": "",
     "code": ("module.exports = {\n  mode: 'production',\n  entry: './src/index.js',\n"
              "  output: { filename: 'bundle.js' },\n};\n")},
    {"id": "cpp-include-list", "language": "cpp", "label": 1, "context": "",
     "code": ("#include <iostream>\n#include <vector>\n#include <string>\n#include <map>\n"
              "using namespace std;\n")},
    {"id": "rust-derive-struct", "language": "rust", "label": 1, "context": "",
     "code": ("#[derive(Debug, Clone)]\npub struct Config {\n    pub host: String,\n"
              "    pub port: u16,\n    pub debug: bool,\n}\n")},
    {"id": "bash-env-exports", "language": "bash", "label": 1, "context": "",
     "code": "export A=1\nexport B=2\nexport PATH=$PATH:/opt/bin\n"},
    {"id": "ts-type-only", "language": "typescript", "label": 1, "context": "",
     "code": "type Id = string;\ntype Name = string;\nexport type User = { id: Id; name: Name };\n"},
    {"id": "go-vars", "language": "go", "label": 1, "context": "",
     "code": "var a = 1\nvar b = 2\nvar c = \"x\"\n"},
    # ---------------------------------------------------------------- label 2
    {"id": "py-terse-fn", "language": "python", "label": 2, "context": "",
     "code": ("def f(a, b):\n    r = []\n    for x in a:\n        if x not in b:\n"
              "            r.append(x)\n    return r\n")},
    {"id": "js-terse-fetch", "language": "javascript", "label": 2, "context": "",
     "code": ("async function g(u) {\n  const r = await fetch(u);\n  if (!r.ok) throw new Error(r.status);\n"
              "  return r.json();\n}\n")},
    {"id": "java-terse-loop", "language": "java", "label": 2, "context": "",
     "code": ("int s = 0;\nfor (int i = 0; i < a.length; i++) {\n    if (a[i] % 2 == 0) s += a[i];\n}\n"
              "return s;\n")},
    {"id": "c-terse-swap", "language": "c", "label": 2, "context": "",
     "code": "void sw(int *a, int *b) {\n    int t = *a;\n    *a = *b;\n    *b = t;\n}\n"},
    {"id": "go-terse-handler", "language": "go", "label": 2, "context": "",
     "code": ("func h(w http.ResponseWriter, r *http.Request) {\n\tb, err := io.ReadAll(r.Body)\n"
              "\tif err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t\treturn\n\t}\n"
              "\tw.Write(b)\n}\n")},
    {"id": "bash-terse-loop", "language": "bash", "label": 2, "context": "",
     "code": "for f in *.log; do\n  gzip \"$f\"\ndone\n"},
    {"id": "cpp-terse-sort", "language": "cpp", "label": 2, "context": "",
     "code": ("vector<int> v = {3, 1, 2};\nsort(v.begin(), v.end());\nfor (int x : v) cout << x << ' ';\n")},
    {"id": "rust-terse-match", "language": "rust", "label": 2, "context": "",
     "code": ("fn p(s: &str) -> Option<i32> {\n    match s.parse::<i32>() {\n        Ok(n) => Some(n),\n"
              "        Err(_) => None,\n    }\n}\n")},
    # ---------------------------------------------------------------- label 3
    {"id": "py-commented-dedupe", "language": "python", "label": 3, "context": "",
     "code": ("def unique_in_order(items):\n    # Keep the first occurrence of each item, preserving order.\n"
              "    seen = set()\n    result = []\n    for item in items:\n        if item not in seen:\n"
              "            seen.add(item)\n            result.append(item)\n    return result\n")},
    {"id": "js-commented-debounce", "language": "javascript", "label": 3, "context": "",
     "code": ("// Delay calling fn until `wait` ms have passed without another call.\n"
              "function debounce(fn, wait) {\n  let timer = null;\n  return (...args) => {\n"
              "    clearTimeout(timer); // restart the countdown on every call\n"
              "    timer = setTimeout(() => fn(...args), wait);\n  };\n}\n")},
    {"id": "java-commented-stack", "language": "java", "label": 3, "context": "",
     "code": ("// A fixed-size stack backed by an array.\nclass IntStack {\n    private final int[] data;\n"
              "    private int size = 0;\n\n    IntStack(int capacity) { data = new int[capacity]; }\n\n"
              "    // Push a value; fails when the stack is full.\n    void push(int value) {\n"
              "        if (size == data.length) throw new IllegalStateException(\"full\");\n"
              "        data[size++] = value;\n    }\n\n    int pop() {\n"
              "        if (size == 0) throw new IllegalStateException(\"empty\");\n"
              "        return data[--size];\n    }\n}\n")},
    {"id": "go-commented-reverse", "language": "go", "label": 3, "context": "",
     "code": ("// Reverse returns s with its runes in reverse order.\nfunc Reverse(s string) string {\n"
              "\trunes := []rune(s) // runes, not bytes, so multi-byte characters survive\n"
              "\tfor i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {\n"
              "\t\trunes[i], runes[j] = runes[j], runes[i]\n\t}\n\treturn string(runes)\n}\n")},
    {"id": "rust-commented-wordcount", "language": "rust", "label": 3, "context": "",
     "code": ("use std::collections::HashMap;\n\n// Count how often each word appears.\n"
              "fn word_counts(text: &str) -> HashMap<String, usize> {\n"
              "    let mut counts = HashMap::new();\n    for word in text.split_whitespace() {\n"
              "        // entry() inserts 0 the first time a word is seen\n"
              "        *counts.entry(word.to_lowercase()).or_insert(0) += 1;\n    }\n    counts\n}\n")},
    {"id": "bash-commented-backup", "language": "bash", "label": 3, "context": "",
     "code": ("#!/bin/bash\n# Back up a directory into a dated tarball.\nset -euo pipefail\n\n"
              "src=\"$1\"\ndest=\"${2:-/tmp}\"\n# Date stamp like 2024-05-01\nstamp=$(date +%F)\n"
              "tar -czf \"$dest/backup-$stamp.tar.gz\" \"$src\"\necho \"saved $dest/backup-$stamp.tar.gz\"\n")},
    {"id": "c-commented-strlen", "language": "c", "label": 3, "context": "",
     "code": ("#include <stddef.h>\n\n/* Count characters up to the terminating NUL byte. */\n"
              "size_t my_strlen(const char *s) {\n    size_t n = 0;\n"
              "    while (s[n] != '\\0') {  /* stop at the terminator */\n        n++;\n    }\n"
              "    return n;\n}\n")},
    {"id": "ts-commented-groupby", "language": "typescript", "label": 3, "context": "",
     "code": ("// Group items by a key computed from each item.\n"
              "function groupBy<T, K extends string>(items: T[], key: (item: T) => K): Record<K, T[]> {\n"
              "  const groups = {} as Record<K, T[]>;\n  for (const item of items) {\n"
              "    const k = key(item);\n    // create the bucket on first use\n"
              "    (groups[k] ??= []).push(item);\n  }\n  return groups;\n}\n")},
    # ---------------------------------------------------------------- label 4
    {"id": "py-tutorial-bsearch", "language": "python", "label": 4, "context": "",
     "code": ("def binary_search(sorted_items, target):\n"
              "    \"\"\"Return the index of target in sorted_items, or -1 if absent.\"\"\"\n"
              "    low, high = 0, len(sorted_items) - 1\n    while low <= high:\n"
              "        mid = (low + high) // 2  # middle of the remaining range\n"
              "        if sorted_items[mid] == target:\n            return mid\n"
              "        if sorted_items[mid] < target:\n            low = mid + 1  # search the right half\n"
              "        else:\n            high = mid - 1  # search the left half\n    return -1\n\n\n"
              "if __name__ == \"__main__\":\n    numbers = [1, 3, 5, 7, 9, 11]\n"
              "    print(binary_search(numbers, 7))   # 3\n    print(binary_search(numbers, 4))   # -1\n")},
    {"id": "js-tutorial-counter", "language": "javascript", "label": 4, "context": "",
     "code": ("// A closure keeps `count` private: only the returned functions can change it.\n"
              "function makeCounter(start = 0) {\n  let count = start;\n  return {\n"
              "    increment() { count += 1; return count; },\n"
              "    reset() { count = start; return count; },\n  };\n}\n\n"
              "// Usage\nconst counter = makeCounter(10);\nconsole.log(counter.increment()); // 11\n"
              "console.log(counter.increment()); // 12\nconsole.log(counter.reset());     // 10\n")},
    {"id": "java-tutorial-fizzbuzz", "language": "java", "label": 4, "context": "",
     "code": ("public class FizzBuzz {\n    // Print 1..n, replacing multiples of 3 and 5.\n"
              "    public static void main(String[] args) {\n        int n = 15;\n"
              "        for (int i = 1; i <= n; i++) {\n"
              "            if (i % 15 == 0) {\n                System.out.println(\"FizzBuzz\"); // both\n"
              "            } else if (i % 3 == 0) {\n                System.out.println(\"Fizz\");\n"
              "            } else if (i % 5 == 0) {\n                System.out.println(\"Buzz\");\n"
              "            } else {\n                System.out.println(i);\n            }\n        }\n    }\n}\n")},
    {"id": "go-tutorial-goroutines", "language": "go", "label": 4, "context": "",
     "code": ("package main\n\nimport (\n\t\"fmt\"\n\t\"sync\"\n)\n\n"
              "// square sends n*n on out; the WaitGroup tracks when all workers are done.\n"
              "func square(n int, out chan<- int, wg *sync.WaitGroup) {\n\tdefer wg.Done()\n"
              "\tout <- n * n\n}\n\nfunc main() {\n\tout := make(chan int, 5)\n\tvar wg sync.WaitGroup\n"
              "\tfor i := 1; i <= 5; i++ {\n\t\twg.Add(1)\n\t\tgo square(i, out, &wg)\n\t}\n"
              "\twg.Wait()\n\tclose(out) // safe: every sender has finished\n"
              "\tfor v := range out {\n\t\tfmt.Println(v)\n\t}\n}\n")},
    {"id": "c-tutorial-linkedlist", "language": "c", "label": 4, "context": "",
     "code": ("#include <stdio.h>\n#include <stdlib.h>\n\n/* A singly linked list node. */\n"
              "struct node {\n    int value;\n    struct node *next;\n};\n\n"
              "/* Insert at the head and return the new head. */\n"
              "struct node *push(struct node *head, int value) {\n"
              "    struct node *n = malloc(sizeof *n);\n    n->value = value;\n    n->next = head;\n"
              "    return n;\n}\n\nint main(void) {\n    struct node *list = NULL;\n"
              "    for (int i = 1; i <= 3; i++) list = push(list, i);\n"
              "    for (struct node *p = list; p; p = p->next) printf(\"%d\\n\", p->value);  /* 3 2 1 */\n"
              "    while (list) { struct node *next = list->next; free(list); list = next; }\n"
              "    return 0;\n}\n")},
    {"id": "rust-tutorial-ownership", "language": "rust", "label": 4, "context": "",
     "code": ("// Borrowing lets a function read a value without taking ownership of it.\n"
              "fn length(s: &String) -> usize {\n    s.len()\n}\n\n"
              "fn main() {\n    let greeting = String::from(\"hello\");\n"
              "    let n = length(&greeting); // borrow: greeting is still usable below\n"
              "    println!(\"'{}' has {} bytes\", greeting, n);\n\n"
              "    let moved = greeting; // move: greeting can no longer be used\n"
              "    println!(\"{}\", moved);\n}\n")},
    {"id": "cpp-tutorial-raii", "language": "cpp", "label": 4, "context": "",
     "code": ("#include <iostream>\n#include <memory>\n\n// unique_ptr frees its object when it goes out of scope.\n"
              "struct Resource {\n    Resource() { std::cout << \"acquired\\n\"; }\n"
              "    ~Resource() { std::cout << \"released\\n\"; }\n};\n\nint main() {\n"
              "    {\n        auto r = std::make_unique<Resource>();  // prints \"acquired\"\n"
              "    }  // r is destroyed here: prints \"released\"\n"
              "    std::cout << \"after scope\\n\";\n    return 0;\n}\n")},
    {"id": "bash-tutorial-args", "language": "bash", "label": 4, "context": "",
     "code": ("#!/bin/bash\n# Greet every name given on the command line.\n# Usage: ./greet.sh Ada Linus\n\n"
              "if [ \"$#\" -eq 0 ]; then\n  echo \"usage: $0 NAME...\" >&2  # errors go to stderr\n"
              "  exit 1\nfi\n\nfor name in \"$@\"; do   # \"$@\" keeps names with spaces intact\n"
              "  echo \"Hello, $name!\"\ndone\n")},
    # ---------------------------------------------------------------- label 5
    {"id": "py-outstanding-memo", "language": "python", "label": 5,
     "context": ("Let's build this step by step. 1. The naive recursion recomputes the same values many "
                 "times, so it takes exponential time. 2. We store each result in a dictionary the first "
                 "time we compute it. 3. Every later call reads the stored value, so each n is computed "
                 "once and the whole computation takes linear time. Run the file to see both results."),
     "code": ("def fib(n, memo=None):\n    \"\"\"Return the n-th Fibonacci number using memoization.\n\n"
              "    Args:\n        n: index in the sequence (fib(0) == 0, fib(1) == 1).\n"
              "        memo: cache of already computed values, shared across recursive calls.\n"
              "    \"\"\"\n    if memo is None:\n        memo = {}  # a fresh cache for each top-level call\n"
              "    if n < 2:\n        return n  # base cases\n    if n not in memo:\n"
              "        # Compute once, then reuse: this turns exponential time into linear time.\n"
              "        memo[n] = fib(n - 1, memo) + fib(n - 2, memo)\n    return memo[n]\n\n\n"
              "if __name__ == \"__main__\":\n    # Step 1: small values match the definition\n"
              "    print([fib(i) for i in range(10)])  # [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]\n"
              "    # Step 2: large values are now fast\n    print(fib(90))\n")},
    {"id": "js-outstanding-promises", "language": "javascript", "label": 5,
     "context": ("Here is how it works, step by step: first we wrap setTimeout in a Promise so it can be "
                 "awaited. Then `main` awaits each step in order, which reads like synchronous code. "
                 "Finally, errors thrown inside an async function reject its promise, so a single "
                 "try/catch handles every step. Try changing the delays to see the order stay the same."),
     "code": ("/**\n * Resolve after `ms` milliseconds.\n * @param {number} ms - how long to wait\n"
              " * @returns {Promise<void>}\n */\nfunction sleep(ms) {\n"
              "  return new Promise((resolve) => setTimeout(resolve, ms));\n}\n\n"
              "// Run three steps one after another; each await pauses without blocking the thread.\n"
              "async function main() {\n  try {\n    console.log('step 1');\n    await sleep(500);  // wait half a second\n"
              "    console.log('step 2');\n    await sleep(500);\n    console.log('step 3');\n"
              "  } catch (err) {\n    // Any rejected await lands here.\n    console.error('failed:', err);\n"
              "  }\n}\n\nmain();\n")},
    {"id": "java-outstanding-generics", "language": "java", "label": 5,
     "context": ("Step by step: 1. `Box<T>` declares a type parameter T, so one class works for any "
                 "type. 2. The compiler checks every `put` and `get` against T, so no casts are needed. "
                 "3. In `main` we create a Box<String> and a Box<Integer> and show that putting the "
                 "wrong type would not compile. This is the core idea behind Java's collections."),
     "code": ("/**\n * A container holding one value of any type T.\n * Generics let the compiler check the type for us.\n */\n"
              "public class Box<T> {\n    private T value;  // the stored value, of type T\n\n"
              "    /** Store a value, replacing the previous one. */\n    public void put(T value) {\n"
              "        this.value = value;\n    }\n\n    /** Return the stored value (null if empty). */\n"
              "    public T get() {\n        return value;\n    }\n\n    public static void main(String[] args) {\n"
              "        Box<String> words = new Box<>();\n        words.put(\"hello\");\n"
              "        String w = words.get();  // no cast needed\n        System.out.println(w);\n\n"
              "        Box<Integer> numbers = new Box<>();\n        numbers.put(42);\n"
              "        // numbers.put(\"42\");  // would not compile: wrong type\n"
              "        System.out.println(numbers.get() + 1);  // 43\n    }\n}\n")},
    {"id": "go-outstanding-errors", "language": "go", "label": 5,
     "context": ("Let's walk through it step by step. First, `parseAge` returns two values: the result "
                 "and an error, which is Go's convention instead of exceptions. Second, the caller "
                 "checks `err != nil` right after the call. Third, `fmt.Errorf` with %w wraps the "
                 "original error so `errors.Is` can still find it. Run it to see both paths."),
     "code": ("package main\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n\t\"strconv\"\n)\n\n"
              "// ErrNegative is returned for ages below zero.\nvar ErrNegative = errors.New(\"age is negative\")\n\n"
              "// parseAge converts text to an age, returning an error instead of panicking.\n"
              "func parseAge(text string) (int, error) {\n\tage, err := strconv.Atoi(text)\n"
              "\tif err != nil {\n\t\t// Wrap with %w so callers can inspect the cause.\n"
              "\t\treturn 0, fmt.Errorf(\"parse %q: %w\", text, err)\n\t}\n\tif age < 0 {\n"
              "\t\treturn 0, ErrNegative\n\t}\n\treturn age, nil\n}\n\nfunc main() {\n"
              "\tfor _, input := range []string{\"42\", \"-3\", \"abc\"} {\n\t\tage, err := parseAge(input)\n"
              "\t\tif errors.Is(err, ErrNegative) {\n\t\t\tfmt.Println(input, \"-> negative\")\n"
              "\t\t\tcontinue\n\t\t}\n\t\tif err != nil {\n\t\t\tfmt.Println(\"error:\", err)\n\t\t\tcontinue\n\t\t}\n"
              "\t\tfmt.Println(input, \"->\", age)\n\t}\n}\n")},
    {"id": "rust-outstanding-iter", "language": "rust", "label": 5,
     "context": ("Step by step: 1. `iter()` borrows each element. 2. `filter` keeps only the even "
                 "numbers. 3. `map` squares them. 4. `sum` consumes the iterator. Nothing runs until "
                 "`sum` is called, because Rust iterators are lazy, so no intermediate vector is built. "
                 "The loop version below does the same work by hand so you can compare them."),
     "code": ("/// Sum of the squares of the even numbers, written with iterator adapters.\n"
              "fn sum_even_squares(numbers: &[i64]) -> i64 {\n    numbers\n        .iter()\n"
              "        .filter(|&&n| n % 2 == 0) // keep even numbers\n"
              "        .map(|&n| n * n)          // square each one\n"
              "        .sum()                    // add them up (this drives the whole chain)\n}\n\n"
              "/// The same computation as an explicit loop, for comparison.\n"
              "fn sum_even_squares_loop(numbers: &[i64]) -> i64 {\n    let mut total = 0;\n"
              "    for &n in numbers {\n        if n % 2 == 0 {\n            total += n * n;\n        }\n    }\n"
              "    total\n}\n\nfn main() {\n    let data = [1, 2, 3, 4, 5, 6];\n"
              "    // Both print 56 (4 + 16 + 36).\n    println!(\"{}\", sum_even_squares(&data));\n"
              "    println!(\"{}\", sum_even_squares_loop(&data));\n}\n")},
    {"id": "c-outstanding-pointers", "language": "c", "label": 5,
     "context": ("Step by step: 1. `&x` takes the address of x. 2. Passing that address lets `increment` "
                 "change the caller's variable, because C passes arguments by value. 3. Inside, `*p` "
                 "dereferences the pointer to reach x itself. Compile with `gcc ptr.c && ./a.out`: the "
                 "first call leaves x unchanged, the second one increments it."),
     "code": ("#include <stdio.h>\n\n/* Receives a copy: changing n does not affect the caller. */\n"
              "void increment_copy(int n) {\n    n = n + 1;\n}\n\n"
              "/* Receives an address: *p is the caller's variable itself. */\n"
              "void increment(int *p) {\n    *p = *p + 1;  /* dereference, then assign */\n}\n\n"
              "int main(void) {\n    int x = 5;\n\n    increment_copy(x);\n"
              "    printf(\"after copy: %d\\n\", x);     /* 5: only the copy changed */\n\n"
              "    increment(&x);                      /* pass the address of x */\n"
              "    printf(\"after pointer: %d\\n\", x);  /* 6 */\n    return 0;\n}\n")},
    {"id": "ts-outstanding-narrowing", "language": "typescript", "label": 5,
     "context": ("Step by step: 1. `Shape` is a union of two object types that share a `kind` field. "
                 "2. Inside `area`, checking `shape.kind` narrows the type, so TypeScript knows which "
                 "fields exist in each branch. 3. The `never` check makes the compiler fail if a new "
                 "shape is added but not handled. Try adding a triangle to see the error."),
     "code": ("// A discriminated union: the `kind` field tells the shapes apart.\n"
              "type Circle = { kind: \"circle\"; radius: number };\n"
              "type Square = { kind: \"square\"; side: number };\ntype Shape = Circle | Square;\n\n"
              "/** Area of any shape; each branch sees a narrowed type. */\n"
              "function area(shape: Shape): number {\n  switch (shape.kind) {\n    case \"circle\":\n"
              "      return Math.PI * shape.radius ** 2; // shape is Circle here\n    case \"square\":\n"
              "      return shape.side ** 2;             // shape is Square here\n    default: {\n"
              "      // Exhaustiveness check: fails to compile if a shape is not handled.\n"
              "      const unreachable: never = shape;\n      return unreachable;\n    }\n  }\n}\n\n"
              "console.log(area({ kind: \"circle\", radius: 1 })); // 3.14159...\n"
              "console.log(area({ kind: \"square\", side: 2 }));   // 4\n")},
    {"id": "bash-outstanding-trap", "language": "bash", "label": 5,
     "context": ("Step by step: 1. `mktemp -d` creates a private temporary directory. 2. `trap cleanup "
                 "EXIT` registers a function that runs whenever the script exits, even after an error. "
                 "3. `set -euo pipefail` stops the script at the first failing command. Run it and then "
                 "check /tmp: the directory is gone in both the success and the failure case."),
     "code": ("#!/usr/bin/env bash\n# Demonstrates safe temporary files with automatic cleanup.\n"
              "set -euo pipefail  # exit on errors, unset variables and failed pipes\n\n"
              "workdir=$(mktemp -d)  # a fresh private directory\n\n"
              "# cleanup runs on every exit path, including errors.\ncleanup() {\n"
              "  rm -rf \"$workdir\"\n  echo \"removed $workdir\"\n}\ntrap cleanup EXIT\n\n"
              "# Step 1: write some data\necho \"hello\" > \"$workdir/data.txt\"\n\n"
              "# Step 2: use it\nwc -c \"$workdir/data.txt\"\n\n"
              "# Step 3: nothing to clean up by hand: the trap does it\n")},
]

# Decided before tuning: the first three examples of each label are ``dev``, the rest ``heldout``.
def split(name: str) -> list[dict]:
    """``dev`` (used to tune the local scorer) or ``heldout`` (only for measuring agreement)."""
    if name not in ("dev", "heldout"):
        raise ValueError(f"unknown split {name!r}")
    seen: dict[int, int] = {}
    out = []
    for ex in EXAMPLES:
        k = seen.get(ex["label"], 0)
        seen[ex["label"]] = k + 1
        if (k < 3) == (name == "dev"):
            out.append(ex)
    return out
