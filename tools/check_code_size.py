"""Check the size limits of the C++ sources: files and functions.

Usage::

    python tools/check_code_size.py [--max-file-lines 800] [--max-function-lines 150]
                                    [PATH ...]

PATH defaults to ``cpp/src`` (every ``.cpp`` below it). Prints one line per
violation and exits with status 1 when there is any, 0 otherwise.

Long files and long functions are where a reader loses the thread, so the
style guide caps both (STYLE.md: files under about 800 lines; a function
should fit in a reading). The limits are enforced in CI by
``tests/test_code_size.py``.

How functions are found: a brace-matching scanner that skips comments,
string and character literals (raw strings included) and preprocessor
lines. A ``{`` opens a *function body* when the code before it, back to the
previous ``;``, ``{`` or ``}``, ends with a parameter list ``)`` (possibly
followed by qualifiers such as ``const``, ``noexcept``, ``override``, a
trailing return type or a constructor's initialiser list) and is not a
control statement (``if``, ``for``, ``while``, ``switch``, ``catch``). Lambdas
count as functions of their own, and their lines also count towards the
function that contains them. A function's length runs from the line of its
opening brace's declaration start to the line of its matching closing brace.
This is a heuristic, not a C++ parser; it errs towards finding too many
functions (every braced body after a ``)``), which can only make the check
stricter.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150

_CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else)\s*$")
_CONTROL_PAREN = re.compile(r"\b(if|for|while|switch|catch)\s*\(")


@dataclass(frozen=True)
class Function:
    """A function body found in a source text."""

    name: str
    first_line: int  # 1-based line where the declaration starts
    last_line: int  # 1-based line of the matching closing brace

    @property
    def lines(self) -> int:
        """Number of lines from the declaration to the closing brace."""
        return self.last_line - self.first_line + 1


def strip_code(text: str) -> str:
    """Blank out comments, literals and preprocessor lines, keeping newlines.

    The result has the same length and line structure as ``text``, so
    offsets and line numbers carry over; only braces, parentheses and
    identifiers of real code remain.
    """
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True

    def blank(a: int, b: int) -> None:
        for j in range(a, min(b, n)):
            if out[j] != "\n":
                out[j] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with its backslash continuations.
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i : i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i + raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            blank(i, j)
            i = j
            continue
        if c in "\"'":
            # A character literal, unless it is a digit separator (1'000).
            if (
                c == "'"
                and i > 0
                and text[i - 1].isalnum()
                and i + 1 < n
                and text[i + 1].isalnum()
            ):
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
            continue
        i += 1
    return "".join(out)


def _function_name(head: str) -> str | None:
    """The name of the function whose declaration ends ``head``, or None.

    ``head`` is the code between the previous ``;``/``{``/``}`` and a ``{``.
    """
    h = head.strip()
    if not h or _CONTROL.search(h):
        return None
    # Find the parameter list: the first top-level "(" whose matching ")" is
    # followed only by qualifiers, a trailing return type or an initialiser
    # list. Scan the "(" from the left; the first that is not a control
    # statement and whose name is an identifier wins.
    depth = 0
    for m in re.finditer(r"[()]", h):
        if m.group() == "(":
            if depth == 0:
                before = h[: m.start()].rstrip()
                name = re.search(r"(~?[A-Za-z_][\w:<>~]*|\])\s*$", before)
                if name is None:
                    depth += 1
                    continue
                if _CONTROL_PAREN.match(h[name.start() :]):
                    return None
                # Does the ")" closing this "(" end the head, up to qualifiers?
                close = _matching_paren(h, m.start())
                if close is None:
                    return None
                tail = h[close + 1 :]
                if _is_function_tail(tail):
                    return "lambda" if name.group(1) == "]" else name.group(1)
            depth += 1
        else:
            depth -= 1
    return None


def _matching_paren(s: str, start: int) -> int | None:
    depth = 0
    for k in range(start, len(s)):
        if s[k] == "(":
            depth += 1
        elif s[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return None


def _is_function_tail(tail: str) -> bool:
    t = tail.strip()
    if t == "":
        return True
    if t.startswith(":"):  # a constructor's initialiser list
        return True
    if t.startswith("->"):  # a trailing return type
        return True
    words = re.fullmatch(
        r"((const|noexcept|override|final|mutable|volatile|&|&&)\s*)+(->.*)?", t, re.S
    )
    return words is not None


def find_functions(text: str) -> list[Function]:
    """Every function (and lambda) body in a C++ source text."""
    code = strip_code(text)
    line_of = _line_index(code)
    functions: list[Function] = []
    # Stack of open braces: (offset, Function-name or None, decl start offset).
    stack: list[tuple[int, str | None, int]] = []
    head_start = 0
    for i, c in enumerate(code):
        if c == "{":
            head = code[head_start:i]
            name = _function_name(head)
            lead = len(head) - len(head.lstrip())
            stack.append((i, name, head_start + lead))
            head_start = i + 1
        elif c == "}":
            if stack:
                _, name, decl = stack.pop()
                if name is not None:
                    functions.append(Function(name, line_of(decl), line_of(i)))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return functions


def _line_index(text: str) -> Callable[[int], int]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        lo, hi = 0, len(starts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid
        return lo + 1

    return line_of


def check_file(
    path: Path, max_file_lines: int, max_function_lines: int
) -> Iterator[str]:
    """Violations in one file, one message each."""
    text = path.read_text(encoding="utf-8")
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if n > max_file_lines:
        yield f"{path}: {n} lines (limit {max_file_lines})"
    for f in find_functions(text):
        if f.lines > max_function_lines:
            yield (
                f"{path}:{f.first_line}: function {f.name} has {f.lines} lines "
                f"(limit {max_function_lines})"
            )


def sources(paths: Iterable[Path]) -> list[Path]:
    """The .cpp files named or found below the given paths, sorted."""
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(p.rglob("*.cpp")) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the check; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--max-file-lines", type=int, default=MAX_FILE_LINES)
    parser.add_argument("--max-function-lines", type=int, default=MAX_FUNCTION_LINES)
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    paths = args.paths or [root / "cpp" / "src"]
    violations = [
        v
        for f in sources(paths)
        for v in check_file(f, args.max_file_lines, args.max_function_lines)
    ]
    for v in violations:
        print(v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
