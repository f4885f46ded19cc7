"""The package's shape: no import cycle between folders; the env and the evaluator see only their seams."""

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "cudaperf_env"


def imports_of(path: Path) -> set[str]:
    """Every ``cudaperf_env`` module a file imports, at any depth (function-local imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cudaperf_env"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cudaperf_env"))
    return found


def folder_of(module: str) -> str:
    """``cudaperf_env.backends.cuda.timing`` -> ``backends``; top-level modules are their own folder."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "cudaperf_env"


def test_no_import_cycle_between_folders():
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1:
            continue  # top-level modules (env, turn, cli ...) orchestrate the folders
        source = parts[0]
        for module in imports_of(path):
            target = folder_of(module)
            if target not in (source, "cudaperf_env") and (PACKAGE / target).is_dir():
                graph.setdefault(source, set()).add(target)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as cycle:
        pytest.fail(f"import cycle between folders: {' -> '.join(cycle.args[1])}")


def test_env_reaches_the_pipeline_only_through_the_turn_module():
    imported = {m.split(".")[1] for m in imports_of(PACKAGE / "env.py") if m.count(".") >= 1}
    assert not imported & {"evaluate", "reward", "feedback"}, imported


def test_evaluator_imports_no_concrete_backend():
    backends = {m for m in imports_of(PACKAGE / "evaluate.py") if m.startswith("cudaperf_env.backends")}
    concrete = {m for m in backends if m.split(".")[2] in ("cpu", "cuda")}
    assert not concrete, concrete


def test_test_files_have_unique_names():
    """Without ``__init__.py`` files pytest imports tests by basename: two ``test_cli.py`` break collection."""
    tests = Path(__file__).parents[1]
    names = [p.name for p in tests.rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
