"""The arrows of docs/architecture.md, enforced: which module may import which.

Imports flow one way (DESIGN §5): cli -> client -> resources -> jobs -> results ->
transport -> auth/session/convert/stream -> models -> checks -> errors/constants. Models
know no HTTP, the core knows no resource area, the library never imports its sandbox, and
the sandbox imports nothing of the library but its public top level (``asyncsdk.Client``
for ``sb.client()``): it stays an independent fake.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still an arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "asyncsdk"

#: Layer of each module (longest matching prefix wins). A module may import only modules
#: of a LOWER layer, or modules of its own package folder in the same layer (the models
#: import ``models.codes``; the resource areas import ``resources._base``).
LAYERS: dict[str, int] = {
    "asyncsdk._lazy": 0,
    "asyncsdk._errors": 0,
    "asyncsdk._constants": 0,
    "asyncsdk._gc_pause": 0,
    "asyncsdk._checks": 1,
    "asyncsdk._json_values": 1,
    "asyncsdk.models": 2,
    "asyncsdk._convert": 3,
    "asyncsdk._fastdecode": 3,
    "asyncsdk._auth": 3,
    "asyncsdk._retry": 3,
    "asyncsdk._logging": 3,
    "asyncsdk._session": 3,
    "asyncsdk._timeouts": 3,
    "asyncsdk._raw": 3,
    "asyncsdk._wire": 4,
    "asyncsdk._url": 4,
    "asyncsdk._stream": 4,
    "asyncsdk._json_slices": 4,
    "asyncsdk._answer": 5,
    "asyncsdk._transport": 6,
    "asyncsdk._results": 7,
    "asyncsdk._rows": 7,
    "asyncsdk.jobs": 8,
    "asyncsdk.resources": 9,
    "asyncsdk._client": 10,
    "asyncsdk._raw_areas": 10,
    "asyncsdk.cli": 11,
    "asyncsdk._cli_": 11,
    "asyncsdk.__main__": 11,
}
#: Modules outside the layering: the public face (a lazy map of every public name) and
#: the sandbox (checked on its own below).
UNLAYERED = ("asyncsdk.__init__", "asyncsdk.testing", "asyncsdk.fleet")

#: Size budgets of DESIGN/issue 10: one concern per module and per class.
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 250


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import of ``asyncsdk``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".")[:-1]  # the package a relative import starts from
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
            if node.module is None:  # "from . import x": each name is a module
                found += [(f"{target}.{n}", [], node.lineno) for n in names]
            else:
                found.append((target, names, node.lineno))
    return found


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS.items():
        matches = module == prefix or module.startswith(prefix + ".") or (
            prefix.endswith("_") and module.startswith(prefix))
        if matches and (best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def _folder(module: str) -> str:
    return module.rsplit(".", 1)[0]


MODULES = _modules()


def test_every_library_module_has_a_layer() -> None:
    missing = [m for m in MODULES
               if _layer(m) is None and not m.startswith(UNLAYERED)]
    assert not missing, f"give these modules a layer in LAYERS (and the picture): {missing}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) is not None))
def test_imports_flow_one_way(module: str) -> None:
    layer = _layer(module)
    assert layer is not None
    wrong = []
    for target, _names, line in _imports(module, MODULES[module]):
        if target == "asyncsdk":
            if _layer(module) == LAYERS["asyncsdk.cli"]:
                continue  # the command line is an application on top of the public face
            wrong.append(f"line {line}: imports the public face 'asyncsdk' (upward)")
            continue
        if target.startswith("asyncsdk.testing"):
            if _layer(module) == LAYERS["asyncsdk.cli"]:
                continue  # `--sandbox` mode of the command line, imported on use
            wrong.append(f"line {line}: the library imports its sandbox ({target})")
            continue
        theirs = _layer(target)
        if theirs is None:
            continue
        same_folder = _folder(target) == _folder(module) and theirs == layer
        if theirs > layer or (theirs == layer and not same_folder and target != module):
            wrong.append(f"line {line}: {target} (layer {theirs}) from layer {layer}")
    assert not wrong, f"{module} imports against the arrows:\n" + "\n".join(wrong)


def test_models_know_no_http() -> None:
    for module, path in MODULES.items():
        if not module.startswith("asyncsdk.models"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "aiohttp" not in text, f"{module} mentions aiohttp"


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


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_classes_stay_small(module: str) -> None:
    path = MODULES[module]
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, (
        f"{module}: {source.count(chr(10))} lines, over {MAX_MODULE_LINES}: split it by concern")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, (
                f"{module}.{node.name}: {size} lines, over {MAX_CLASS_LINES}")
