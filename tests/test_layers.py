"""No import runs back up: a module imports only from its own stage or the stages before it.

The stages in order (docs/architecture.md): the shared bottom (``errors``, ``arguments``, ``components``,
``jit``, ``typed_config``), then data < models < planner < metrics < engine < advise < launch < commands <
paper < report, and the ``dygsched`` program (``cli``, ``__main__``) on top. ``certify`` sits on the planner (it bounds its
plans) and only the planner's benchmarks use it. Every ``import`` is read with ``ast``, those inside
functions too, so a lazy import is no way around the order.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "dygsched"
BOTTOM = ("errors", "arguments", "components", "jit", "typed_config")
STAGES = (
    "data",
    "models",
    "planner",
    "certify",
    "metrics",
    "engine",
    "advise",
    "launch",
    "commands",
    "paper",
    "report",
    "cli",
    "__main__",
)
RANK = {**dict.fromkeys(BOTTOM, 0), **{stage: number for number, stage in enumerate(STAGES, start=1)}}

CERTIFY_USERS = ("dygsched.paper.planner",)  # the planner benchmark certifies plans; training never imports certify


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "dygsched" and len(parts) > 1 else None


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every ``dygsched`` module a file imports, at any depth, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            if node.module == "dygsched":  # `from dygsched import paper` names a stage
                found += [(node.lineno, f"dygsched.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: a relative import (the project imports absolutely)")
    return [(line, name) for line, name in found if name == "dygsched" or name.startswith("dygsched.")]


def upward_imports() -> list[str]:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        own = stage_of(module)
        if own is None:  # dygsched/__init__.py
            continue
        assert own in RANK, f"{module}: a stage the layer order does not know (add it to STAGES)"
        for line, imported in imports_of(path):
            target = stage_of(imported)
            if target is None or target == own:
                continue
            assert target in RANK, f"{module}:{line}: imports {imported}, a stage the layer order does not know"
            if target == "certify" and not module.startswith(CERTIFY_USERS):
                wrong.append(f"{module}:{line} imports {imported} (only {', '.join(CERTIFY_USERS)} may)")
            elif RANK[target] > RANK[own]:
                wrong.append(f"{module}:{line} imports {imported} ({target} comes after {own})")
    return wrong


def test_no_import_runs_back_up_the_stages():
    assert upward_imports() == []


def test_the_checker_finds_an_import_that_runs_up(tmp_path, monkeypatch):
    """A stage importing a later one is reported (the check above is not vacuous)."""
    package = tmp_path / "dygsched"
    (package / "data").mkdir(parents=True)
    (package / "data" / "reader.py").write_text("from dygsched.engine.worker import train_rank\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert upward_imports() == ["dygsched.data.reader:1 imports dygsched.engine.worker (engine comes after data)"]


def test_an_import_inside_a_function_is_seen(tmp_path):
    fake = tmp_path / "lazy.py"
    fake.write_text("import os\n\n\ndef f():\n    from dygsched.report.render import render\n    import dygsched.paper.cli\n")
    assert imports_of(fake) == [(5, "dygsched.report.render"), (6, "dygsched.paper.cli")]
