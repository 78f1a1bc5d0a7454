"""The module map of docs/DESIGN.md, checked: allowed import directions.

Every import in ``lit/`` (module level and inside functions) is read from
the source with :mod:`ast`, so a forbidden import fails here even if it is
lazy. The rules are the ones docs/DESIGN.md draws; change both together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIT = Path(__file__).resolve().parent.parent / "lit"

# the pure core: MRS data and rule logic; no processes, files, LM, pipeline or CLI
PURE = {"lit.mrs", "lit.transform", "lit.rules", "lit.spec", "lit.nli", "lit.interface",
        "lit.generate"}
# what a pure module may never import (besides lit.cli, which nothing in the core imports)
IMPURE = ("lit.ace", "lit._process", "lit.formats", "lit.rerank", "lit.predict",
          "lit.pipeline", "lit.workers", "lit.engine", "lit.ray_engine", "lit.cache",
          "lit.install", "lit.resume", "subprocess", "torch", "transformers", "ray")
# the one module that starts external processes, and the ones that load models
PROCESS_MODULES = {"lit.ace"}
MODEL_MODULES = {"lit.rerank", "lit.predict"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(LIT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            found.add(mod)
            if mod == "lit":  # "from lit import engine" imports lit.engine
                found.update(f"lit.{alias.name}" for alias in node.names)
    return found


MODULES = {_module_name(p): _imports(p) for p in sorted(LIT.rglob("*.py"))}


def _hits(imports: set[str], prefixes: tuple[str, ...] | set[str]) -> list[str]:
    return sorted(i for i in imports
                  if any(i == p or i.startswith(p + ".") for p in prefixes))


def test_modules_found():
    assert {"lit.ace", "lit.pipeline", "lit.cli", "lit.formats"} <= set(MODULES)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("lit.cli")))
def test_core_never_imports_cli(module):
    assert not _hits(MODULES[module], ("lit.cli",)), f"{module} imports the CLI"


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_core_imports_no_process_io_or_model(module):
    bad = _hits(MODULES[module], IMPURE)
    assert not bad, f"{module} must stay pure (no ACE, I/O, LM, pipeline), imports {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_lit_ace_starts_processes(module):
    if module in PROCESS_MODULES:
        return
    assert not _hits(MODULES[module], ("subprocess",)), f"{module} imports subprocess"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_model_modules_import_torch(module):
    if module in MODEL_MODULES:
        return
    bad = _hits(MODULES[module], ("torch", "transformers"))
    assert not bad, f"{module} imports {bad}; only {sorted(MODEL_MODULES)} may"


def test_interface_and_cache_do_not_need_ace():
    for module in ("lit.interface", "lit.cache", "lit.records", "lit.mrs"):
        assert not _hits(MODULES[module], ("lit.ace", "lit.pipeline")), module


def test_every_module_says_its_job():
    for path in sorted(LIT.rglob("*.py")):
        if path.name == "__about__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc and doc.strip().splitlines()[0].strip(), f"{path} has no first docstring line"


def test_long_modules_say_why():
    for path in sorted(LIT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 550:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "Why this module is long" in doc, (
                f"{path} has {text.count(chr(10))} lines and no 'Why this module is long' note")


def test_the_checker_catches_a_forbidden_import(tmp_path):
    bad = tmp_path / "lit" / "rules.py"
    bad.parent.mkdir()
    bad.write_text("def f():\n    from lit.ace import AceParser\n    import torch\n")
    global LIT
    saved, LIT = LIT, tmp_path / "lit"
    try:
        imports = _imports(bad)
    finally:
        LIT = saved
    assert _hits(imports, IMPURE) == ["lit.ace", "torch"]
