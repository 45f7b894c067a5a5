"""The house rules the layout keeps: no import cycles between modules, no module over 500
lines, no CLI command body over ~50 lines, and every family reachable through the registries."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("estimator", "planner", "calibration")


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = f
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Modules of this project that ``name`` imports (``from pkg import module`` counts as
    the module, not the package)."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            subs = {f"{base}.{a.name}" for a in node.names} & mods.keys()
            out |= subs or ({base} & mods.keys())
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names} & mods.keys()
    return out - {name}


def test_no_import_cycles():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n) :] + [n]))
            elif not state.get(n):
                visit(n, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [])
    assert not cycles, cycles


def test_estimator_and_calibration_never_import_the_planner():
    mods = _modules()
    for m, p in mods.items():
        if m.startswith(("estimator", "calibration")):
            bad = {i for i in _imports(m, p, mods) if i.startswith("planner")}
            assert not bad, (m, bad)
        if m.startswith("estimator"):
            assert not {i for i in _imports(m, p, mods) if i.startswith("calibration")}, m


def test_no_module_over_500_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules().values()
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, long


def test_cli_command_bodies_are_thin():
    for f in (ROOT / "planner" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                "command" in ast.unparse(d) for d in node.decorator_list
            ):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = body[-1].end_lineno - body[0].lineno + 1
                assert lines <= 50, f"{f.name}:{node.name} has {lines} lines"


def test_every_family_preset_builds_through_the_registry():
    from estimator.families import FAMILIES, family_catalog, family_of, get_family_model

    seen = set()
    for name in family_catalog().names():
        model = get_family_model(name)
        fam = family_of(model)
        assert fam is not None and fam.name == model.family
        assert fam.estimate is not None or fam.language_model
        seen.add(fam.name)
    assert seen == set(FAMILIES)


def test_every_workload_kind_names_families_the_estimator_knows():
    from estimator.families import FAMILIES
    from planner.kinds import KINDS

    covered = set()
    for row in KINDS.values():
        covered |= set(row.families)
    assert set(FAMILIES) <= covered
