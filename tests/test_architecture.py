"""The package's shape (issue 25), read from the source by ``bench/callgraph.py`` (ast only, fast):
no import circle inside ``src/judgerl``, no module over 500 lines, no module importing a higher
layer, and a short path for a recipe's config from ``judgerl train`` (<= 30 stops, <= 5 climbs back up;
stops and climbs as defined in ``bench/callgraph.py``'s docstring). Lazy imports (inside functions)
count: a circle hidden in a function is still a circle."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _callgraph():
    spec = importlib.util.spec_from_file_location("judgerl_bench_callgraph", REPO / "bench" / "callgraph.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = mod  # type: ignore[union-attr]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


cg = _callgraph()
MODULES = cg.load_modules(REPO / "src")
EDGES = cg.import_edges(MODULES)

#: The layers, bottom first: a module may import its own layer and the ones below, never one above.
#: Keyed by the package under ``judgerl`` (``judgerl.types`` is a module of its own).
LAYERS: list[tuple[str, ...]] = [
    ("text",),                                   # untrusted text, code blocks, confusables, normalisation
    ("types",),                                  # frozen records: PreferencePair, Decision, Trajectory
    ("protocols", "backends"),                   # judge formats; text generation (+ named judges, runtime)
    ("tools", "verify"),                         # sandbox + tool loop; answer / code verifiers
    ("judge",),                                  # the Judge and what a judgment is made of
    ("data", "rewards", "audit"),                # pairs; reward functions; reward-hacking detectors
    ("eval", "gold"),                            # the eval runner; gold judges, labels, agreement
    ("serve", "arena", "probe", "view", "train"),  # applications on a Judge
    ("cli",),                                    # one file per command
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
MAX_LINES = 500


def layer(module: str) -> int | None:
    """The layer of a dotted module name (None: the package face ``judgerl`` itself)."""
    parts = module.split(".")
    return None if len(parts) == 1 else LAYER_OF[parts[1]]


def test_every_module_has_a_layer():
    missing = sorted({m.split(".")[1] for m in MODULES if "." in m and m.split(".")[1] not in LAYER_OF})
    assert not missing, f"packages without a layer in LAYERS: {missing}"


def test_no_import_circle_in_src():
    found = cg.circles(EDGES)
    ties = [" | ".join(f"{a} -> {b} (line {EDGES[a][b]})" for a in c for b in EDGES[a] if b in c) for c in found]
    assert not found, "import circles:\n" + "\n".join(ties)


def test_no_module_over_500_lines():
    long = sorted((m.lines, name) for name, m in MODULES.items() if m.lines > MAX_LINES)
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_module_imports_a_higher_layer():
    bad = []
    for a, targets in EDGES.items():
        la = layer(a)
        for b, line in targets.items():
            lb = layer(b)
            if la is not None and lb is not None and lb > la:
                bad.append(f"{a} (layer {la}) imports {b} (layer {lb}) at line {line}")
    assert not bad, "imports of a higher layer:\n" + "\n".join(sorted(bad))


@pytest.mark.parametrize("text, circles", [
    ({"judgerl.a": "import judgerl.b\n", "judgerl.b": "def f():\n    from judgerl import a\n"}, 1),
    ({"judgerl.a": "import judgerl.b\n", "judgerl.b": "x = 1\n"}, 0),
])
def test_circles_are_found_in_lazy_imports_too(tmp_path, text, circles):
    root = tmp_path / "src"
    (root / "judgerl").mkdir(parents=True)
    (root / "judgerl" / "__init__.py").write_text("")
    for name, body in text.items():
        (root / "judgerl" / f"{name.split('.')[1]}.py").write_text(body)
    assert len(cg.circles(cg.import_edges(cg.load_modules(root)))) == circles


#: Following a recipe's config from ``judgerl train`` (issue 25's target; measured by ``python
#: bench/callgraph.py --walk judgerl.cli.train_cmd:train_command:config --trip``).
TRAIN_WALK = ("judgerl.cli.train_cmd", "train_command", "config")
MAX_STOPS, MAX_CLIMBS = 30, 5


def test_a_recipes_config_takes_a_short_path_from_judgerl_train():
    trip = cg.Walker(MODULES).walk(*TRAIN_WALK)
    shown = "\n".join(f"  {i:2d}. floor {trip.floor.get(m, 0):2d} {m}" for i, m in enumerate(trip.stops, 1))
    assert not trip.cut_off, "the walk was cut off"
    assert len(trip.stops) <= MAX_STOPS and trip.climbs <= MAX_CLIMBS, (
        f"{len(trip.stops)} stops (<= {MAX_STOPS}), {trip.climbs} climbs back up (<= {MAX_CLIMBS}):\n{shown}")
    # the walk is not blind: the loaded config is followed into both runners and into the run's setup
    reached = {(m, f) for m, f, _ in trip.events}
    assert {("judgerl.train.run", "run_training"), ("judgerl.train.policy", "run_policy"),
            ("judgerl.train.setup", "TrainSetup.from_config")} <= reached, sorted(reached)


@pytest.mark.parametrize("returns, followed", [
    ("ThingConfig", True), ("ThingConfig | OtherConfig", True), ("Optional[ThingConfig]", True),
    ("'ThingConfig | None'", True), ("dict", False),
])
def test_the_walk_follows_a_config_through_a_union_return(tmp_path, returns, followed):
    root = tmp_path / "src"
    (root / "judgerl").mkdir(parents=True)
    (root / "judgerl" / "__init__.py").write_text("")
    (root / "judgerl" / "low.py").write_text(f"def load(name) -> {returns}:\n    return name\n"
                                             "def run(config):\n    return config\n")
    (root / "judgerl" / "top.py").write_text("from judgerl.low import load, run\n"
                                             "def main(name):\n    cfg = load(name)\n    return run(cfg)\n")
    trip = cg.Walker(cg.load_modules(root)).walk("judgerl.top", "main", "name")
    assert (("judgerl.low", "run", "config") in trip.events) is followed
