"""The sandbox's shape: rooms of a readable size, independent of the library it fakes,
and one rule for the observation attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import asyncsdk
import asyncsdk.testing
from asyncsdk.testing import Sandbox

PACKAGE = Path(asyncsdk.testing.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 250


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_module_or_class_over_the_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines"
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"{path.name}: class {node.name} is {size} lines"


@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "plugin.py"],
                         ids=lambda p: p.name)
def test_the_sandbox_imports_nothing_of_the_library(path: Path) -> None:
    """An independent fake: no model, check or transport of asyncsdk behind its answers.
    Only public names of ``asyncsdk`` are imported (``Client``, when ``sb.client()`` makes
    one or for typing; ``CREDENTIAL_FIELDS`` and ``redact_secrets`` for ``vcr_config``),
    and the package's generic first-use loader ``_lazy`` (it knows nothing of the
    library)."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module == "_lazy":
            continue
        if isinstance(node, ast.ImportFrom):
            absolute = node.level == 0 and (node.module or "").startswith("asyncsdk")
            upward = node.level > 1
            if absolute or upward:
                names = [a.name for a in node.names]
                assert node.module == "asyncsdk" and set(names) <= set(asyncsdk.__all__), (
                    f"{path.name}:{node.lineno} imports {node.module}: {names}")
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("asyncsdk")]
            assert not names, f"{path.name}:{node.lineno} imports {names}"


async def test_observation_attributes_are_read_only_views_of_the_state() -> None:
    async with Sandbox() as sb:
        views = ("settings", "rules", "requests", "outbox", "in_flight", "max_in_flight")
        for name in views:
            assert getattr(sb, name) is getattr(sb.state, name)
            with pytest.raises(AttributeError, match="read-only"):
                setattr(sb, name, getattr(sb, name))
        sb.state.max_in_flight = 7  # a view, not a copy taken at start
        assert sb.max_in_flight == 7
