"""The shape of the house: data flows one way, so no layer imports the layers above it, and the performance model's
modules stay small. Read from the source (every import statement, including those inside functions), not from what
happens to be loaded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLANNER = Path(__file__).resolve().parents[1] / "planner"
MOST_LINES_PER_PERF_MODULE = 600


def _module_name(path: Path) -> str:
    parts = path.relative_to(PLANNER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every planner module ``path`` imports, absolute (relative imports resolved)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            # ``from planner.perf import model`` imports planner.perf.model.
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "planner" or name.startswith("planner.")}


def _modules_under(package: str) -> list[Path]:
    return sorted((PLANNER.parent / package.replace(".", "/")).rglob("*.py"))


def _reaches(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


# (the layer whose modules are read, the layers they must never import)
RULES = [
    ("planner.providers", ("planner.refresh",)),
    ("planner.catalog", ("planner.refresh", "planner.perf", "planner.cost", "planner.providers")),
    (
        "planner.perf",
        (
            "planner.catalog",
            "planner.cost",
            "planner.api",
            "planner.cli",
            "planner.ui",
            "planner.providers",
            "planner.refresh",
        ),
    ),
]


@pytest.mark.parametrize(("layer", "forbidden"), RULES, ids=[layer for layer, _ in RULES])
def test_no_layer_imports_the_layers_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    modules = _modules_under(layer)
    assert modules, f"no modules under {layer}"
    breaches = [
        f"{_module_name(path)} imports {name}"
        for path in modules
        for name in sorted(_imports(path))
        if any(_reaches(name, above) for above in forbidden)
    ]
    assert breaches == []


def test_the_import_reader_sees_imports_inside_functions() -> None:
    # The rules above hold only as far as the reader sees: a lazy import inside a function counts too.
    assert "planner.perf.layout" in _imports(PLANNER / "perf" / "model.py")
    assert "planner.perf.model" in _imports(PLANNER / "api.py")  # imported inside estimate()
    assert "planner.perf.model" in _imports(PLANNER / "cost" / "rank.py")  # inside a function too


def test_no_performance_model_module_is_over_600_lines() -> None:
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in _modules_under("planner.perf")}
    assert {name: size for name, size in sizes.items() if size > MOST_LINES_PER_PERF_MODULE} == {}
