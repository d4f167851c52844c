"""The core's shape: `timing/` imports form no cycle (function-level imports count), the
model imports no rule, and no module is long without saying why."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LONG = 400  # lines; a longer module states its reason in its docstring ("long because ...")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    # the repository's timing/ is the installed `lockstep.timing` (pyproject.toml maps it)
    return ".".join(["lockstep", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth, except under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in (ROOT / "timing").rglob("*.py")}

    def resolve(dep: str) -> str:
        while dep and dep not in files:
            dep = dep.rpartition(".")[0]
        return dep

    return {m: {resolve(d) for d in imports(p)} - {"", m} for m, p in files.items()}


def cycle(g: dict[str, set[str]]) -> list[str]:
    """One import cycle, or [] (a package importing its own submodules is no cycle)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str]:
        state[v] = 1
        stack.append(v)
        for w in sorted(g[v]):
            if w.startswith(v + "."):
                continue  # a package's __init__ re-exporting its own modules
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        stack.pop()
        state[v] = 2
        return []

    for v in sorted(g):
        if v not in state and (found := visit(v)):
            return found
    return []


def test_timing_has_no_import_cycle() -> None:
    g = graph()
    assert "lockstep.timing.model" in g["lockstep.timing.config"]  # the graph sees the imports
    assert cycle(g) == []


def test_the_cycle_finder_finds_a_cycle_it_is_shown() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"p": {"p.x"}, "p.x": set()}) == []


def test_the_model_imports_no_rule_and_no_derived_time() -> None:
    g = graph()
    assert not {d for d in g["lockstep.timing.model"] if d.startswith(("lockstep.timing.invariants", "lockstep.timing.derived"))}


def test_no_timing_module_is_long_without_a_reason() -> None:
    long = [str(p.relative_to(ROOT)) for p in (ROOT / "timing").rglob("*.py")
            if len(p.read_text(encoding="utf-8").splitlines()) > LONG
            and "long because" not in (ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or "")]
    assert long == []
