"""The package's structure from its source alone (``ast``; nothing is imported or run).

::

    python bench/callgraph.py                      # import graph summary: floors, circles
    python bench/callgraph.py --walk judgerl.cli.train_cmd:train_command:config
    python bench/callgraph.py --walk judgerl.cli.train_cmd:train_command:config --trip

Four measures over ``src/judgerl``:

* **import graph**: module -> the modules it imports, at module level or inside a function
  (``import a.b``, ``from a import b`` -- ``b`` a submodule or a name --, relative imports, and
  ``importlib.import_module("judgerl....")`` with a literal name); imports under
  ``if TYPE_CHECKING:`` are left out (they never run);
* **circles**: the strongly connected components of that graph with more than one module (Tarjan
  1972), each with the imports that tie it;
* **floors**: floor 1 holds the modules that import no other module of the package; a module's
  floor is one above the highest floor it imports (a circle is one floor);
* **a walk of one parameter** (``--walk MODULE:FUNCTION:PARAM``): follow the value of a parameter
  through the calls that pass it on, in the order the code is written (every branch of every
  ``if``, ``try`` and loop). The value is *tracked* under these names:

  - the parameter itself, and a name assigned from a tracked form (``cfg = config``, ``a = b or
    config``, ``for x in config``, ``with config as c``); a form is the name, a conversion of it
    (``str(config)``, ``dataclasses.replace(config, ...)``, ... :data:`_CONVERSIONS`) or an
    expression combining forms (``a or config``, ``(config, x)``);
  - ``x = f(config, ...)`` when ``f``'s return annotation names a class ending in ``Config``
    (``-> TrainConfig``, ``-> TrainConfig | PolicyConfig``, ``Optional[...]``, a string annotation):
    the same recipe in another form. The result of any other call is a new value (``path, raw =
    read_recipe(config)``, ``setup = TrainSetup.from_config(config)`` are not the config);
  - with ``--parts`` also its parts (``config.data``, ``config["x"]``); without it (the default, and
    what the target is measured with) a part handed on (``f(config.tools)``) is an object the callee
    needs, not the config.

  A call *passes* the value when one of its arguments (or the object of a method call) is a tracked
  form. The callee is found through the caller's imports (module level and the function's own), its
  own module, ``self.method``, an imported class (``Cls.method``), a method of the class the
  parameter is annotated with (``config: TrainConfig`` -> ``config.validate()`` is
  ``TrainConfig.validate``), else the one class of the package defining that method name; calls
  into other packages are not followed. The value goes on as the matching parameter (``**kwargs`` /
  ``*args`` catch the rest). **Each function is entered once per parameter**: a second call of a
  function already entered adds nothing. Values stored on objects (``self.x = config``) are not
  followed.

  The **trip** is the sequence of modules the value is in. A **stop** is one stay in a module:
  entering a function of another module, or coming back to the caller's module to be passed on
  again (a caller that hands the value to two callees in other modules is stopped in twice);
  consecutive stays in one module are one stop. A **climb** (climb back up) is a stop on a higher
  floor (see *floors*) than the stop before it: the value going back up to a caller to be handed
  down again. ``stops`` counts the trip's stops (the first, the entry function's module,
  included), ``climbs`` its climbs.

The architecture test (``tests/test_architecture.py``) asserts the import rules with these
functions, and the issue-25 target for the walk from ``judgerl train``
(``judgerl.cli.train_cmd:train_command:config``): <= 30 stops, <= 5 climbs back up.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

# the import graph (modules, edges, circles, floors) lives in callgraph_imports.py, next to this file
sys.path.insert(0, str(Path(__file__).resolve().parent))
from callgraph_imports import (ROOT, Module, _dotted, circles, floors, import_edges,  # noqa: E402,F401
                               import_table, load_modules)


# ---- the walk of one parameter ------------------------------------------------------------------


@dataclass
class Trip:
    """A walk's result: ``events`` (module, function, parameter) in order, ``stops`` (module per
    stay) and ``climbs`` (stops on a higher floor than the stop before)."""

    events: list[tuple[str, str, str]]
    stops: list[str]
    climbs: int
    floor: dict[str, int]
    cut_off: bool = False


#: Calls that change a value's form without making a new one (``int(config.tools.max_rounds)``).
_CONVERSIONS = frozenset({"int", "float", "str", "bool", "list", "tuple", "dict", "set", "frozenset", "sorted",
                          "Path", "dataclasses.replace", "replace"})


#: Whether a walk follows the parts of the value too (``config.data``, ``config["x"]``); set by
#: :class:`Walker` (``parts=``).
_PARTS = [False]


def _mentions(node: ast.AST | None, names: set[str]) -> bool:
    """Whether ``node`` is a form of a tracked value: the name, a conversion of it, an expression
    combining them (``a or config``), and -- when the walk follows parts -- a part of it
    (``config.data``, ``config["x"]``). The result of any other call is a new value, not the tracked one."""
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Starred):
        return _mentions(node.value, names)
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _PARTS[0] and _mentions(node.value, names)
    if isinstance(node, ast.Call):
        return _dotted(node.func) in _CONVERSIONS and any(_mentions(a, names) for a in node.args)
    if isinstance(node, ast.keyword):
        return _mentions(node.value, names)
    if isinstance(node, (ast.BoolOp, ast.IfExp, ast.BinOp, ast.Tuple, ast.List, ast.NamedExpr, ast.Await)):
        return any(_mentions(c, names) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    return False


def _params(fn: ast.AST) -> tuple[list[str], str | None, str | None, dict[str, str]]:
    a = fn.args  # type: ignore[attr-defined]
    pos = [x.arg for x in (*a.posonlyargs, *a.args)]
    ann = {x.arg: _dotted(x.annotation) if x.annotation is not None else ""
           for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    ann = {k: (v or "").rsplit(".", 1)[-1] for k, v in ann.items()}
    return pos + [x.arg for x in a.kwonlyargs], a.vararg.arg if a.vararg else None, \
        a.kwarg.arg if a.kwarg else None, ann


class Walker:
    """Follows one parameter (see the module docstring); ``max_events`` bounds the trip."""

    def __init__(self, modules: dict[str, Module], max_events: int = 400, parts: bool = False) -> None:
        self.modules = modules
        self.parts = parts
        self.max_events = max_events
        self.floor = floors(import_edges(modules))
        self.methods: dict[str, list[tuple[str, str]]] = {}
        for mod in modules.values():
            for q in mod.defs:
                if "." in q:
                    self.methods.setdefault(q.split(".", 1)[1], []).append((mod.name, q))

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """The definition ``name`` of ``module``, following re-exports; a class means its ``__init__``."""
        mod = self.modules.get(module)
        if mod is None or depth > 8:
            return None
        if name in mod.defs:
            if isinstance(mod.defs[name], ast.ClassDef):
                return (module, f"{name}.__init__") if f"{name}.__init__" in mod.defs else None
            return module, name
        table = import_table(mod, [n for n in mod.tree.body if isinstance(n, (ast.Import, ast.ImportFrom))],
                             self.modules)
        if name in table and table[name][1] is not None:
            return self.resolve(table[name][0], table[name][1], depth + 1)
        return None

    def home(self, module: str, name: str, depth: int = 0) -> str | None:
        """The module that defines ``name`` as seen from ``module`` (following re-exports)."""
        mod = self.modules.get(module)
        if mod is None or depth > 8:
            return None
        if name in mod.defs:
            return module
        table = import_table(mod, [n for n in mod.tree.body if isinstance(n, (ast.Import, ast.ImportFrom))],
                             self.modules)
        if name in table and table[name][1] is not None:
            return self.home(table[name][0], table[name][1], depth + 1)
        return None

    def callee(self, module: str, qual: str, table: dict, types: dict[str, str], call: ast.Call,
               tracked: set[str]) -> tuple[str, str] | None:
        f = call.func
        cls = qual.split(".")[0] if "." in qual else None
        if isinstance(f, ast.Name):
            if f.id in table:
                mod, attr = table[f.id]
                return self.resolve(mod, attr) if attr else None
            return self.resolve(module, f.id)
        if isinstance(f, ast.Attribute):
            head = f.value
            if isinstance(head, ast.Name):
                if head.id == "self" and cls and f"{cls}.{f.attr}" in self.modules[module].defs:
                    return module, f"{cls}.{f.attr}"
                if head.id in table and table[head.id][1] is None and table[head.id][0] in self.modules:
                    return self.resolve(table[head.id][0], f.attr)
                if head.id in table and table[head.id][1] is not None:  # an imported class: Cls.method
                    home = self.home(table[head.id][0], table[head.id][1])
                    if home and f"{table[head.id][1]}.{f.attr}" in self.modules[home].defs:
                        return home, f"{table[head.id][1]}.{f.attr}"
                typ = types.get(head.id)
                if typ:
                    found = [m for m in self.methods.get(f.attr, []) if m[1] == f"{typ}.{f.attr}"]
                    if len(found) == 1:
                        return found[0]
            if _mentions(head, tracked) or (isinstance(head, ast.Name) and head.id in tracked):
                found = self.methods.get(f.attr, [])
                if len(found) == 1:
                    return found[0]
        return None

    def walk(self, module: str, function: str, param: str) -> Trip:
        """The trip of ``param`` entering at ``module:function``.

        Raises:
            KeyError: no such module or function.
        """
        if function not in self.modules[module].defs:
            raise KeyError(f"{module} defines no {function}")
        _PARTS[0] = self.parts
        events: list[tuple[str, str, str]] = []
        positions: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        cut = [False]

        def would(mod: str, qual: str, par: str) -> bool:
            if (mod, qual, par) in seen or cut[0]:
                return False
            if len(events) >= self.max_events:
                cut[0] = True
                return False
            return True

        def enter(mod: str, qual: str, par: str) -> None:
            if not would(mod, qual, par):
                return
            seen.add((mod, qual, par))
            events.append((mod, qual, par))
            positions.append(mod)
            fn = self.modules[mod].defs[qual]
            names, _, _, ann = _params(fn)
            tracked = {par}
            types = {par: ann.get(par, "")} if ann.get(par) else {}
            lazy = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
            top = [n for n in self.modules[mod].tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
            table = import_table(self.modules[mod], top + lazy, self.modules)
            for stmt in fn.body:  # type: ignore[attr-defined]
                self._statement(stmt, mod, qual, table, tracked, types, enter, positions)

        enter.would = would  # type: ignore[attr-defined]
        enter(module, function, param)
        stops = [m for i, m in enumerate(positions) if i == 0 or positions[i - 1] != m]
        climbs = sum(1 for a, b in zip(stops, stops[1:]) if self.floor.get(b, 0) > self.floor.get(a, 0))
        return Trip(events, stops, climbs, self.floor, cut[0])

    def _statement(self, stmt: ast.AST, mod: str, qual: str, table: dict, tracked: set[str],
                   types: dict[str, str], enter, positions: list[str]) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for sub in stmt.body:  # closures: the names they close over stay tracked
                self._statement(sub, mod, qual, table, tracked, types, enter, positions)
            return
        for node in _in_order(stmt):
            if isinstance(node, ast.Call):
                self._call(node, mod, qual, table, tracked, types, enter, positions)
        value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else None
        targets: list[ast.AST] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets = [stmt.target]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            value, targets = stmt.iter, [stmt.target]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None and _mentions(item.context_expr, tracked):
                    tracked.update(n.id for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
        if value is not None and (_mentions(value, tracked) or self._converts(value, mod, qual, table, types, tracked)):
            for t in targets:
                tracked.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        for child in ("body", "orelse", "finalbody", "handlers"):
            for sub in getattr(stmt, child, []) or []:
                if isinstance(sub, ast.AST) and not isinstance(sub, ast.expr):
                    self._statement(sub, mod, qual, table, tracked, types, enter, positions)

    def _converts(self, value: ast.AST, mod: str, qual: str, table: dict, types: dict[str, str],
                  tracked: set[str]) -> bool:
        """``x = f(config, ...)`` where ``f`` returns a config (its return annotation names a class
        ending in ``Config``, alone or in a union: ``TrainConfig | PolicyConfig``, ``Optional[...]``, a
        string annotation): ``x`` is the same recipe config in another form."""
        if not isinstance(value, ast.Call) or not any(_mentions(a, tracked) for a in (*value.args, *value.keywords)):
            return False
        target = self.callee(mod, qual, table, types, value, tracked)
        fn = self.modules[target[0]].defs.get(target[1]) if target and target[0] in self.modules else None
        return any(n.endswith("Config") for n in _annotation_names(getattr(fn, "returns", None)))

    def _call(self, call: ast.Call, mod: str, qual: str, table: dict, tracked: set[str],
              types: dict[str, str], enter, positions: list[str]) -> None:
        target = self.callee(mod, qual, table, types, call, tracked)
        if target is None or target[0] not in self.modules:
            return
        fn = self.modules[target[0]].defs.get(target[1])
        if fn is None:
            return
        names, star, kw, _ = _params(fn)
        method = "." in target[1]
        pos = names[1:] if method and names and names[0] in ("self", "cls") else names
        passed: list[str] = []
        if method and isinstance(call.func, ast.Attribute) and not target[1].endswith("__init__") and (
                _mentions(call.func.value, tracked)
                or (isinstance(call.func.value, ast.Name) and call.func.value.id in tracked)):
            passed.append("self")
        def carries(arg: ast.AST) -> bool:
            return _mentions(arg, tracked) or self._converts(arg, mod, qual, table, types, tracked)

        for i, arg in enumerate(call.args):
            if carries(arg):
                passed.append(pos[i] if i < len(pos) else (star or ""))
        for k in call.keywords:
            if carries(k.value):
                passed.append(k.arg if k.arg in names else (kw or ""))
        for par in dict.fromkeys(p for p in passed if p):
            if not enter.would(target[0], target[1], par):
                continue
            if positions and positions[-1] != mod:
                positions.append(mod)  # back in the caller's module to be passed on again
            enter(target[0], target[1], par)


def _annotation_names(node: ast.AST | None) -> list[str]:
    """The class names an annotation names: ``A``, ``m.A``, each side of ``A | B``, the arguments of
    ``Optional[A]`` / ``Union[A, B]``, and the same inside a string annotation (``"A | None"``)."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _annotation_names(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotation_names(node.left) + _annotation_names(node.right)
    if isinstance(node, ast.Subscript) and _dotted(node.value).rsplit(".", 1)[-1] in ("Optional", "Union"):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [n for e in inner for n in _annotation_names(e)]
    name = _dotted(node)
    return [name.rsplit(".", 1)[-1]] if name else []


def _in_order(stmt: ast.AST) -> list[ast.AST]:
    """The expression nodes of one statement (not of its nested statements), in source order."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                continue
            visit(child)
        out.append(node)  # arguments before the call that takes them

    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, ast.stmt):
            visit(child)
    return out


def summary(modules: dict[str, Module]) -> str:
    """Modules, import arrows, arrows that run up a floor, circles and the longest modules."""
    edges = import_edges(modules)
    fl = floors(edges)
    up = [(a, b) for a, ts in edges.items() for b in ts if fl[b] > fl[a]]
    lines = [f"modules {len(modules)}; imports {sum(len(v) for v in edges.values())}; floors {max(fl.values())}; "
             f"imports from a lower floor to a higher one {len(up)}"]
    cs = circles(edges)
    lines.append(f"circles {len(cs)}")
    for c in cs:
        ties = [f"{a} -> {b} (line {edges[a][b]})" for a in c for b in edges[a] if b in c]
        lines.append("  " + " | ".join(ties))
    for a, b in up:
        lines.append(f"  up: {a} (floor {fl[a]}) -> {b} (floor {fl[b]})")
    big = sorted(((m.lines, m.name) for m in modules.values()), reverse=True)[:5]
    lines.append("longest: " + ", ".join(f"{n} {k}" for k, n in big))
    by_floor: dict[int, list[str]] = {}
    for m, f in fl.items():
        by_floor.setdefault(f, []).append(m)
    for f in sorted(by_floor, reverse=True):
        lines.append(f"floor {f:2d}: " + ", ".join(sorted(by_floor[f])))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--walk", help="MODULE:FUNCTION:PARAM, e.g. judgerl.cli.train_cmd:train_command:config")
    ap.add_argument("--trip", action="store_true", help="print every stop of the walk")
    ap.add_argument("--max-events", type=int, default=400)
    ap.add_argument("--src", type=Path, default=ROOT, help="the source root holding judgerl/ (default: src/)")
    ap.add_argument("--parts", action="store_true", help="follow the value's parts too (config.data, config.seed)")
    args = ap.parse_args(argv)
    modules = load_modules(args.src)
    if not args.walk:
        print(summary(modules))
        return 0
    module, function, param = args.walk.split(":")
    trip = Walker(modules, args.max_events, parts=args.parts).walk(module, function, param)
    first_reward = next((i + 1 for i, m in enumerate(trip.stops) if m.startswith("judgerl.rewards")), None)
    print(f"walk {args.walk}: {len(trip.stops)} stops, {trip.climbs} climbs back up, {len(trip.events)} functions, "
          f"{len(set(trip.stops))} modules; "
          + (f"first reward module at stop {first_reward}" if first_reward else
             "no reward module reached (the rewards get objects built from the value, not the value)")
          + (" (cut off)" if trip.cut_off else ""))
    if args.trip:
        prev = None
        for i, m in enumerate(trip.stops, 1):
            f = trip.floor.get(m, 0)
            mark = "UP" if prev is not None and f > trip.floor.get(prev, 0) else ""
            print(f"  {i:3d}. floor {f:2d} {m} {mark}")
            prev = m
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
