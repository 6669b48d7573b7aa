"""The arrows of docs/architecture.md, enforced: which module may import which.

Imports flow one way (DESIGN §5): cli -> client -> resources -> _core/_serde -> models ->
checks -> errors/constants. Inside the core each room has a floor of its own, so the
engine's layers cannot turn back (the transport above the answer interpreter, above the
session, the failures and the timeouts, above credentials and retry timing). Models know
no HTTP, the core knows no area and no model, the library never imports its sandbox,
and the sandbox imports nothing of the library but its public top level
(``asyncsdk.Client`` for ``sb.client()``): it stays an independent fake. There is no
import circle anywhere.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still an arrow. Size is not measured here: complexity is (ruff C901, PLR0912,
PLR0915 in pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "asyncsdk"

#: Floor of each module (longest matching prefix wins). A module may import only modules
#: of a LOWER floor, or modules of its own package folder on the same floor (the models
#: import ``models.codes``; the validation modules import each other).
LAYERS: dict[str, int] = {
    "asyncsdk._lazy": 0,
    "asyncsdk._errors": 0,
    "asyncsdk._constants": 0,
    "asyncsdk._response": 0,
    "asyncsdk._checks": 1,
    "asyncsdk.models": 2,
    "asyncsdk._serde": 3,
    # the core, floor by floor
    "asyncsdk._core.credentials": 4,
    "asyncsdk._core.log": 4,
    "asyncsdk._core.raw": 4,
    "asyncsdk._core.operation": 5,
    "asyncsdk._core.aiohttp_compat": 5,
    "asyncsdk._core.timeouts": 5,
    "asyncsdk._core.failures": 5,
    "asyncsdk._core.rate": 5,
    "asyncsdk._core.urls": 6,
    "asyncsdk._core.retry": 6,
    "asyncsdk._core.middleware": 6,
    "asyncsdk._core.pace": 6,
    "asyncsdk._core.session": 7,
    "asyncsdk._core.answer": 8,
    "asyncsdk._core.streamed": 9,
    "asyncsdk._core.policy": 9,
    "asyncsdk._core.transport": 10,
    "asyncsdk._core": 10,  # the package's own docstring
    # the areas
    "asyncsdk.resources._base": 11,
    "asyncsdk.resources._areas": 11,
    "asyncsdk.resources": 12,
    "asyncsdk.resources.with_raw_response": 13,
    "asyncsdk._client": 14,
    "asyncsdk.jobs": 14,
    "asyncsdk.pacing": 14,
    "asyncsdk.cli": 15,
    "asyncsdk.fleet": 15,  # beside the command line, on the public client and the pace
    "asyncsdk.__main__": 16,
}
#: Modules outside the layering: the public face (a lazy map of every public name) and
#: the sandbox (checked on its own below).
UNLAYERED = ("asyncsdk.testing",)
#: The engine's modules: they know no area and no model.
CORE = "asyncsdk._core"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import of ``asyncsdk``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names
                      if a.name.split(".")[0] == "asyncsdk"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "asyncsdk":
                continue
            names = [a.name for a in node.names]
            submodules = [n for n in names if f"{target}.{n}" in MODULES]
            found += [(f"{target}.{n}", [], node.lineno) for n in submodules]
            rest = [n for n in names if n not in submodules]
            if rest or not submodules:
                found.append((target, rest, node.lineno))
    return found


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def _folder(module: str) -> str:
    return module.rsplit(".", 1)[0]


MODULES = _modules()


def test_every_library_module_has_a_layer() -> None:
    missing = [m for m in MODULES
               if _layer(m) is None and not m.startswith(UNLAYERED) and m != "asyncsdk"]
    assert not missing, f"give these modules a layer in LAYERS (and the picture): {missing}"


def _wrong_import(module: str, target: str) -> str | None:
    """Why ``module`` may not import ``target`` (None: it may)."""
    layer = _layer(module)
    assert layer is not None
    is_cli = layer == LAYERS["asyncsdk.cli"]
    if target == "asyncsdk":
        return None if is_cli else "imports the public face 'asyncsdk' (upward)"
    if target.startswith("asyncsdk.testing"):
        return None if is_cli else f"the library imports its sandbox ({target})"
    theirs = _layer(target)
    if theirs is None:
        return None
    if target == module:
        return None
    same_folder = _folder(target) == _folder(module) or (
        _folder(target) == module and MODULES[module].name == "__init__.py")  # its own
    if theirs > layer or (theirs == layer and not same_folder):
        return f"{target} (floor {theirs}) from floor {layer}"
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) is not None))
def test_imports_flow_one_way(module: str) -> None:
    wrong = [f"line {line}: {why}" for target, _names, line in _imports(module, MODULES[module])
             if (why := _wrong_import(module, target)) is not None]
    assert not wrong, f"{module} imports against the arrows:\n" + "\n".join(wrong)


def test_the_arrows_test_sees_an_upward_import() -> None:
    """The oracle itself: a core module importing an area, or the transport imported by
    the session, is refused."""
    assert _wrong_import("asyncsdk._core.session", "asyncsdk._core.transport")
    assert _wrong_import("asyncsdk._core.transport", "asyncsdk.resources._base")
    assert _wrong_import("asyncsdk.models.contacts", "asyncsdk._serde.converter")
    assert _wrong_import("asyncsdk._core.transport", "asyncsdk._core.session") is None


def test_there_is_no_import_circle() -> None:
    graph = {m: {t for t, _n, _l in _imports(m, p) if t in MODULES}
             for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == node:
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join([*path, node, nxt]))
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


def test_models_know_no_http() -> None:
    for module, path in MODULES.items():
        if not module.startswith("asyncsdk.models"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "aiohttp" not in text, f"{module} mentions aiohttp"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(CORE)))
def test_the_core_knows_no_area_and_no_model(module: str) -> None:
    wrong = [f"line {line}: {target}" for target, _names, line in _imports(module, MODULES[module])
             if target.startswith(("asyncsdk.resources", "asyncsdk.models", "asyncsdk._client"))]
    assert not wrong, f"{module} reaches above the engine:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("asyncsdk.testing")))
def test_the_sandbox_stays_an_independent_fake(module: str) -> None:
    """The sandbox imports only itself and the public top level (for ``sb.client()``)."""
    wrong = [f"line {line}: {target}" for target, _names, line in _imports(module, MODULES[module])
             if target not in ("asyncsdk", "asyncsdk._lazy")
             and not target.startswith("asyncsdk.testing")]
    assert not wrong, f"{module} reaches into the library:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_imported_across_modules(module: str) -> None:
    wrong = [f"line {line}: {n} from {target}"
             for target, names, line in _imports(module, MODULES[module])
             for n in names if n.startswith("_") and not n.startswith("__")]
    assert not wrong, f"{module} imports private names of other modules:\n" + "\n".join(wrong)
