"""Size limits of the C++ sources (tools/check_code_size.py), enforced in CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

from script_module import load_script

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "check_code_size.py"


def load_tool() -> ModuleType:
    return load_script(TOOL, "check_code_size")


def long_function(body_lines: int) -> str:
    body = "".join(f"  x += {i};\n" for i in range(body_lines))
    return f"int long_one(int x) {{\n{body}  return x;\n}}\n"


def test_sources_within_limits() -> None:
    r = subprocess.run(
        [sys.executable, str(TOOL)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_finds_a_long_function(tmp_path: Path) -> None:
    tool = load_tool()
    src = tmp_path / "long.cpp"
    # Opening line + 150 body lines + return + closing brace = 153 lines.
    src.write_text("// header\n" + long_function(150), encoding="utf-8")
    (f,) = tool.find_functions(src.read_text(encoding="utf-8"))
    assert (f.name, f.first_line, f.lines) == ("long_one", 2, 153)
    assert tool.main([str(src)]) == 1
    assert tool.main([str(src), "--max-function-lines", "153"]) == 0


def test_finds_a_long_file(tmp_path: Path) -> None:
    tool = load_tool()
    src = tmp_path / "big.cpp"
    src.write_text("int x;\n" * 801, encoding="utf-8")
    assert tool.main([str(src)]) == 1
    assert tool.main([str(src), "--max-file-lines", "801"]) == 0


def test_skips_comments_and_literals() -> None:
    tool = load_tool()
    text = (
        "// a brace in a comment {\n"
        "/* and } here */\n"
        'const char* s = "{ not a body";\n'
        "char c = '}';\n"
        'const char* r = R"x(})x";\n'
        "int f(int a) const noexcept {\n"
        "  if (a) { return 1; }\n"
        "  auto g = [&](int b) { return b; };\n"
        "  return g(a);\n"
        "}\n"
        "struct S { S() : v(1) { } int v; };\n"
    )
    found = {(f.name, f.first_line, f.lines) for f in tool.find_functions(text)}
    assert found == {("f", 6, 5), ("lambda", 8, 1), ("S", 11, 1)}
