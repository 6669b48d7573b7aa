"""The transport's rooms import one way: credentials, retry timing, logging, the session
and the wire description below the answer interpreter, which is below the transport."""

from __future__ import annotations

import ast
from pathlib import Path

import asyncsdk

PACKAGE = Path(asyncsdk.__file__).parent

#: Each module and the transport modules above it, which it must never import.
ABOVE = {
    "_auth": {"_answer", "_transport", "_session", "_wire", "_retry", "_logging"},
    "_retry": {"_answer", "_transport", "_session", "_wire", "_auth"},
    "_logging": {"_answer", "_transport", "_session", "_wire", "_auth"},
    "_session": {"_answer", "_transport", "_wire", "_auth"},
    "_wire": {"_answer", "_transport", "_auth"},
    "_raw": {"_answer", "_transport", "_session", "_client"},
    "_answer": {"_transport", "_client"},
}


def _imports(module: str) -> set[str]:
    """The package modules ``module`` imports (at run time or for type checking)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_imports_flow_one_way() -> None:
    for module, above in ABOVE.items():
        assert not _imports(module) & above, (module, _imports(module) & above)


def test_the_check_sees_an_upward_import() -> None:
    """The oracle itself: the transport does import the interpreter and the session."""
    assert {"_answer", "_session", "_auth", "_retry"} <= _imports("_transport")
