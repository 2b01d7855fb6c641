"""The import graph of the package from its source alone (``ast``): modules, import edges, circles, floors.

The measures are defined in ``bench/callgraph.py``'s docstring (the command to run); this module holds the
first three (import graph, circles, floors), ``callgraph.py`` the walk of one parameter.
"""

from __future__ import annotations

import ast
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "judgerl"


@dataclass
class Module:
    """One source file: its dotted name, path, syntax tree and line count."""

    name: str
    path: Path
    tree: ast.Module
    lines: int
    is_package: bool = False
    defs: dict[str, ast.AST] = field(default_factory=dict)  # "f", "Cls", "Cls.method"


def load_modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Module]:
    """Every ``.py`` file under ``root/package`` by dotted module name."""
    out: dict[str, Module] = {}
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        text = path.read_text(encoding="utf-8")
        with warnings.catch_warnings():  # a module's own invalid escapes are its linter's business
            warnings.simplefilter("ignore")
            tree = ast.parse(text, str(path))
        mod = Module(".".join(parts), path, tree, text.count("\n") + 1, is_pkg)
        for node in mod.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                mod.defs[node.name] = node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        mod.defs[f"{node.name}.{sub.name}"] = sub
        out[mod.name] = mod
    return out


def _absolute(mod: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.name.split(".") if mod.is_package else mod.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_table(mod: Module, nodes: list[ast.AST], modules: dict[str, Module]) -> dict[str, tuple[str, str | None]]:
    """Local name -> (module, attribute or None) for the import statements among ``nodes``."""
    table: dict[str, tuple[str, str | None]] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    table[a.asname] = (a.name, None)
                else:
                    table[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(mod, node)
            for a in node.names:
                sub = f"{src}.{a.name}"
                table[a.asname or a.name] = (sub, None) if sub in modules else (src, a.name)
    return table


def import_edges(modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """Module -> {imported module of the package: first line}; every import, lazy ones included."""
    edges: dict[str, dict[str, int]] = {}
    for mod in modules.values():
        out: dict[str, int] = {}

        def add(target: str, line: int) -> None:
            while target and target not in modules:  # ``import a.b.c`` of a name: its module
                target = target.rpartition(".")[0]
            if target and target != mod.name and target.startswith(PACKAGE):
                out.setdefault(target, line)

        for node in _runtime_nodes(mod.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    add(a.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                src = _absolute(mod, node)
                for a in node.names:
                    add(f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src, node.lineno)
            elif (isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "import_module")
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                add(node.args[0].value, node.lineno)
        edges[mod.name] = out
    return edges


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _dotted(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return out


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # iterative enough for a package of a few hundred modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return sorted(out)


def floors(edges: dict[str, dict[str, int]]) -> dict[str, int]:
    """Module -> floor (1 = imports nothing of the package; a circle shares one floor)."""
    comp_of: dict[str, int] = {}
    for k, comp in enumerate(circles(edges)):
        for m in comp:
            comp_of[m] = k
    key = lambda m: ("c", comp_of[m]) if m in comp_of else ("m", m)  # noqa: E731
    members: dict[tuple, list[str]] = {}
    for m in edges:
        members.setdefault(key(m), []).append(m)
    memo: dict[tuple, int] = {}

    def floor_of(k: tuple) -> int:
        if k not in memo:
            memo[k] = 0  # guards a cycle the components missed
            below = [floor_of(key(t)) for m in members[k] for t in edges[m] if key(t) != k and t in edges]
            memo[k] = 1 + max(below, default=0)
        return memo[k]

    return {m: floor_of(key(m)) for m in edges}
