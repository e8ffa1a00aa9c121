#!/usr/bin/env python3
"""Lists the C++ functions longer than a limit (lines from the signature's line to the
closing brace), for the house rule "no function over 80 lines".

    scripts/function-sizes.py [--max 80] [FOLDER...]   (default: every source folder)

A rough brace counter, not a parser: strings, character literals and comments are blanked
first; a block is a function when the text before its `{` ends in `)` plus qualifiers, or
is a table initializer (`... = {`) at namespace level. Exits 1 when any is over the limit."""
import argparse, os, re, sys

SOURCE_DIRS = ["agent", "analysis", "api", "auth", "client", "collectors", "common", "compare", "diagnosis",
               "flame", "jobtrace", "rpc", "server", "storage", "timeline"]
QUALIFIERS = re.compile(r"\)\s*(const|override|final|noexcept|mutable|->\s*[\w:<>,\s\*&]+|\s|ABSL_\w+\([^)]*\))*$")

def blank(text):
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i); j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            if not m: out.append(c); i += 1; continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            out.append(c); i += 1  # a digit separator: 1'000
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)

def functions(path):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    stack, head_start = [], 0  # stack of (kind, start_line, name)
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[head_start:i]
            inside_function = any(k == "fn" for k, _, _ in stack)
            h = " ".join(head.split())
            kind = "block"
            if not inside_function:
                if re.match(r"^(namespace|extern)\b", h) or re.search(r"\b(class|struct|union|enum)\b[^()]*$", h):
                    kind = "scope"
                elif QUALIFIERS.search(h) or re.search(r"\)\s*:\s*.*[\)\}]$", h) or h.endswith("="):
                    kind = "fn"
            first = line - head.strip("\n").count("\n") if h else line
            name = re.sub(r"\(.*", "", h)[-60:] if kind == "fn" else ""
            stack.append((kind, first, name))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "fn":
                    yield name.strip(), first, line - first + 1
            head_start = i + 1
        elif c == ";":
            head_start = i + 1

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("dirs", nargs="*")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = args.dirs or [d for d in SOURCE_DIRS if os.path.isdir(os.path.join(root, d))]
    over = []
    for d in dirs:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                if f.endswith((".cc", ".h")):
                    p = os.path.join(base, f)
                    for name, first, n in functions(p):
                        if n > args.max:
                            over.append((n, os.path.relpath(p, root), first, name))
    for n, p, first, name in sorted(over, reverse=True):
        print(f"{n:5d}  {p}:{first}  {name}")
    print(f"{len(over)} functions over {args.max} lines")
    return 1 if over else 0

sys.exit(main())
