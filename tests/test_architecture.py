"""The arrows of docs/architecture.md, enforced: which module may import which.

Imports flow one way (DESIGN §5): cli -> client -> resources -> _core/_serde -> models ->
checks -> errors/constants. Inside the core each room has a floor of its own, so the
engine's layers cannot turn back (the transport above the answer interpreter, above the
session, the failures and the timeouts, above credentials and retry timing). Models know
no HTTP, the core knows no area and no model, the library never imports its sandbox,
and the sandbox imports nothing of the library but its public top level
(``asyncsdk.Client`` for ``sb.client()``): it stays an independent fake. The fleet
(``fleet/``, the ``fleet`` extra) sits beside the command line: only the command line's
``fleet`` command imports it, and it imports only public names of ``asyncsdk`` and the
command line's helpers (inputs, outputs, progress, common). There is no import circle
anywhere.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still an arrow, and nothing imports by a string but the packages' lazy faces,
so no registry can hide one. Inside the models, the converter and the input checks sit
below the model bases and know no model class (the bases hand themselves to the
converter): ``to_dict()`` reaches it by a plain import, downwards. The command line (and
the fleet) use the public face only. Size is not measured here: complexity is (ruff
C901, PLR0912, PLR0915 in pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "asyncsdk"

#: Floor of each module (longest matching prefix wins). A module may import only modules
#: of a LOWER floor, or modules of its own package folder on the same floor (the
#: validation modules import each other). Fractions are floors inside a package.
LAYERS: dict[str, float] = {
    "asyncsdk._lazy": 0,
    "asyncsdk._errors": 0,
    "asyncsdk._constants": 0,
    "asyncsdk._response": 0,
    "asyncsdk._checks": 1,
    # the models: the vocabulary, then the converter and the input checks (knowing no
    # model class), then the bases (``to_dict``/``from_dict``), then the areas' models
    "asyncsdk.models.codes": 2,
    "asyncsdk.models._vocabulary": 2,
    "asyncsdk.models._json_values": 2,
    "asyncsdk.models._model_reader": 2.2,
    "asyncsdk.models._convert": 2.3,
    "asyncsdk.models._input_checks": 2.3,
    "asyncsdk.models._base": 2.6,
    "asyncsdk.models": 2.9,
    "asyncsdk._serde": 3,
    # the core, floor by floor
    "asyncsdk._core.frames": 4,
    "asyncsdk._core.credentials": 4,
    "asyncsdk._core.log": 4,
    "asyncsdk._core.raw": 4,
    "asyncsdk._core.clock": 4,
    "asyncsdk._core.window": 4,
    "asyncsdk._core.backlog": 4,
    "asyncsdk._core.operation": 5,
    "asyncsdk._core.aiohttp_compat": 5,
    "asyncsdk._core.timeouts": 5,
    "asyncsdk._core.failures": 5,
    "asyncsdk._core.rate": 5,
    "asyncsdk._core.pace_state": 5.5,  # PaceState: a pace seen from outside
    "asyncsdk._core.urls": 6,
    "asyncsdk._core.retry": 6,
    "asyncsdk._core.middleware": 6,
    "asyncsdk._core.pace": 6,
    "asyncsdk._core.session": 7,
    "asyncsdk._core.policy": 7,
    "asyncsdk._core.answer": 8,
    "asyncsdk._core.options": 8,
    "asyncsdk._core.streamed": 9,
    "asyncsdk._core.engine": 9,
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
    "asyncsdk.fleet": 15,  # beside the command line, on the public client and the pace (see FLEET)
    "asyncsdk.__main__": 16,
}
#: Modules outside the layering: the public face (a lazy map of every public name) and
#: the sandbox (checked on its own below).
UNLAYERED = ("asyncsdk.testing",)
#: The engine's modules: they know no area and no model.
CORE = "asyncsdk._core"
#: The fleet (the ``fleet`` extra): imported only by the command line's fleet command;
#: it imports only public names of ``asyncsdk`` and these helpers of the command line
#: (package-internal modules, but not ``_private`` ones: they stay so).
FLEET = "asyncsdk.fleet"
FLEET_COMMAND = "asyncsdk.cli.fleet"
FLEET_USES = ("asyncsdk.cli.inputs", "asyncsdk.cli.outputs", "asyncsdk.cli.progress",
              "asyncsdk.cli.common", "asyncsdk.pacing")


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


def _layer(module: str) -> float | None:
    best: tuple[int, float] | None = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


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
    if _in(target, FLEET) and not _in(module, FLEET):
        return None if module == FLEET_COMMAND else (
            f"only the fleet command ({FLEET_COMMAND}) imports the fleet ({target})")
    if _in(module, FLEET) and not _in(target, FLEET):
        return None if target in ("asyncsdk", *FLEET_USES) else (
            f"the fleet imports only public names of asyncsdk and {FLEET_USES} ({target})")
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
    # the one converter: the bases reach it downwards, never it them, nor them _serde
    assert _wrong_import("asyncsdk.models._base", "asyncsdk.models._convert") is None
    assert _wrong_import("asyncsdk.models._convert", "asyncsdk.models._base")
    assert _wrong_import("asyncsdk.models._convert", "asyncsdk.models.contacts")
    assert _wrong_import("asyncsdk.models._base", "asyncsdk._serde.converter")
    assert _wrong_import("asyncsdk._serde.converter", "asyncsdk.models._base") is None
    # the fleet: the library never imports it; it imports no internals
    assert _wrong_import("asyncsdk._client", "asyncsdk.fleet.worker")
    assert _wrong_import("asyncsdk.cli.check_many", "asyncsdk.fleet.config")
    assert _wrong_import("asyncsdk.fleet.worker", "asyncsdk._core.pace")
    assert _wrong_import("asyncsdk.fleet.worker", "asyncsdk.testing")
    assert _wrong_import("asyncsdk.fleet.worker", "asyncsdk.cli.check_many")
    assert _wrong_import("asyncsdk.cli.fleet", "asyncsdk.fleet.commands") is None
    assert _wrong_import("asyncsdk.fleet.export", "asyncsdk.cli.outputs") is None


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


#: What the command line (and the fleet) may import besides itself: the public face and
#: public modules (no ``_`` in the path: ``asyncsdk.testing`` for ``--sandbox``), and
#: ``_constants``, the defaults and environment names its ``--help`` shows (data the
#: library reads too, so the two cannot drift).
APPLICATIONS = ("asyncsdk.cli", "asyncsdk.fleet")
APPLICATION_MAY_IMPORT = ("asyncsdk._constants",)


def _private_module(target: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__")
               for part in target.split(".")[1:])


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(APPLICATIONS)))
def test_the_applications_use_the_public_face_only(module: str) -> None:
    """Before: the CLI imported ``_serde.converter.to_jsonable``, ``_client`` and
    ``_errors``; an application on the library uses what a user can."""
    own = module.split(".")[:2]
    wrong = [f"line {line}: {target}" for target, _names, line in _imports(module, MODULES[module])
             if target.split(".")[:2] != own and target not in APPLICATION_MAY_IMPORT
             and _private_module(target)]
    assert not wrong, f"{module} imports private modules of the library:\n" + "\n".join(wrong)


def test_the_application_check_sees_a_private_import() -> None:
    assert _private_module("asyncsdk._serde.converter")
    assert _private_module("asyncsdk.models._base")
    assert not _private_module("asyncsdk.testing") and not _private_module("asyncsdk")
    assert not _private_module("asyncsdk.__main__")


#: The only modules that may import by a string (``importlib``, ``__import__``): the
#: lazy loader of the packages' faces. Anything else would be an arrow no test sees.
IMPORTS_BY_NAME = "asyncsdk._lazy"
#: ... and the only modules that use it: the faces, whose tables are tested against
#: their ``TYPE_CHECKING`` imports.
LAZY_FACES = ("asyncsdk", "asyncsdk.testing", "asyncsdk._core")


def _imports_by_string(tree: ast.AST) -> list[int]:
    """Lines that import ``importlib``, name ``__import__`` or look a module up in
    ``sys.modules`` (a module found by its name is imported by a string too)."""

    def by_string(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(a.name.split(".")[0] == "importlib" for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] == "importlib" or (
                node.module == "sys" and any(a.name == "modules" for a in node.names))
        if isinstance(node, ast.Attribute):
            return ast.unparse(node) == "sys.modules"
        return isinstance(node, ast.Name) and node.id == "__import__"

    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, (ast.stmt, ast.expr)) and by_string(node)]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_by_a_string(module: str) -> None:
    """Before: ``_lazy.provide``/``provided`` let the models call ``_serde`` through a
    string-keyed registry, past this file's arrows."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    if module != IMPORTS_BY_NAME:
        lines = _imports_by_string(tree)
        assert not lines, f"{module} imports by a string (lines {lines})"
    if module not in LAZY_FACES:
        lazy = [line for target, _names, line in _imports(module, MODULES[module])
                if target == IMPORTS_BY_NAME]
        assert not lazy, f"{module} uses the lazy loader of the faces (lines {lazy})"
def test_the_string_import_check_sees_one() -> None:
    """The oracle itself: each way of reaching a module by its name is seen."""
    for source in ("import importlib\n", "from importlib import import_module\n",
                   "m = __import__('asyncsdk._serde')\n",
                   "import sys\nf = sys.modules['asyncsdk._serde.converter'].to_jsonable\n",
                   "from sys import modules\n"):
        assert _imports_by_string(ast.parse(source)), source
    assert _imports_by_string(ast.parse("import sys\nsys.exit(0)\n")) == []


def test_the_library_never_imports_the_fleet() -> None:
    """``_core``, ``resources``, ``_client``, the models, ``_serde`` (and everything else
    but the fleet command): never an arrow to ``fleet``, not even a lazy one."""
    wrong = [f"{module} line {line}: {target}" for module, path in MODULES.items()
             if not _in(module, FLEET) and module != FLEET_COMMAND
             for target, _names, line in _imports(module, path) if _in(target, FLEET)]
    assert not wrong, "the library imports the fleet:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _in(m, FLEET)))
def test_the_fleet_uses_only_public_names_of_asyncsdk(module: str) -> None:
    """Names from ``asyncsdk`` (``from asyncsdk import X`` or ``asyncsdk.X``) are public
    ones (``asyncsdk.__all__``)."""
    import asyncsdk

    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    used = [(n.attr, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "asyncsdk"]
    used += [(a.name, n.lineno) for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) and n.module == "asyncsdk" and not n.level
             for a in n.names]
    wrong = [f"line {line}: asyncsdk.{name}" for name, line in used
             if name not in asyncsdk.__all__]
    assert not wrong, f"{module} uses names asyncsdk does not make public:\n" + "\n".join(
        wrong)
    assert all(not part.startswith("_") for used_module in FLEET_USES
               for part in used_module.split("."))
# --- the engine's face: what resources and tests may reach ----------------------------
TESTS_DIR = Path(__file__).resolve().parent
RESOURCES_DIR = PACKAGE_DIR / "resources"
#: Attributes of the engine's insides that only ``_core`` and the client (the
#: composition root) touch: reached from a resource or a test, they are a way around
#: ``Engine`` (resources) or around the ``Client(clock=...)`` seam (tests). The bulk
#: paces (the client's table of them, by key fingerprint and area) are seen through
#: ``client.validation.pace()``; a ``Pace`` itself is a test's to compose (tests/core).
CORE_PRIVATE = {"_transport", "_engine", "sessions", "credentials", "_paces", "_pace_key"}
#: The old test seam: a test that assigns these swaps the engine's time by hand.
TIME_ATTRIBUTES = {"sleep", "rand", "clock"}
#: The core's own exception for a wait ``close()`` ended: the engine reports it.
CORE_ONLY_NAMES = {"ClosedInFlight"}


def _core_exports() -> set[str]:
    """``asyncsdk._core.__all__``, read from its source."""
    tree = ast.parse((PACKAGE_DIR / "_core" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "__all__"):
            return set(ast.literal_eval(node.value))
    raise AssertionError("asyncsdk._core has no __all__")


def _reaches_into_the_core(source: str, *, own_engine: bool) -> list[str]:
    """Where ``source`` reaches past the engine's face (``own_engine``: a resource may
    keep its engine as ``self._engine``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            base = ast.unparse(node.value)
            if node.attr in CORE_PRIVATE and not (
                    own_engine and node.attr == "_engine" and base == "self"):
                found.append(f"line {node.lineno}: {base}.{node.attr}")
            elif node.attr in TIME_ATTRIBUTES and isinstance(node.ctx, ast.Store):
                found.append(f"line {node.lineno}: {base}.{node.attr} = ...")
        elif isinstance(node, ast.Name) and node.id in CORE_ONLY_NAMES:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.alias) and node.name in CORE_ONLY_NAMES:
            found.append(f"import of {node.name}")
    return found


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.name != "test_architecture.py")


@pytest.mark.parametrize("path", _files(TESTS_DIR),
                         ids=lambda p: p.relative_to(TESTS_DIR).as_posix())
def test_no_test_reaches_into_the_engine(path: Path) -> None:
    """Tests set time through ``Client(clock=...)`` (``asyncsdk.testing.VirtualClock``)
    and the core's tests compose an engine of their own (``helpers.engine_of``): none
    reaches a client's engine, session owner or credentials."""
    wrong = _reaches_into_the_core(path.read_text(encoding="utf-8"), own_engine=False)
    assert not wrong, f"{path.name} reaches into the engine:\n" + "\n".join(wrong)


@pytest.mark.parametrize("path", _files(RESOURCES_DIR),
                         ids=lambda p: p.relative_to(RESOURCES_DIR).as_posix())
def test_resources_see_only_the_engines_face(path: Path) -> None:
    """A resource uses ``Engine`` and the names ``asyncsdk._core`` exports, nothing
    else of the core: no submodule of it, no internal attribute or exception."""
    module = _module_name(path)
    exported = _core_exports()
    wrong = _reaches_into_the_core(path.read_text(encoding="utf-8"), own_engine=True)
    for target, names, line in _imports(module, path):
        if target.startswith(CORE + "."):
            wrong.append(f"line {line}: imports {target} (import from asyncsdk._core)")
        elif target == CORE:
            wrong += [f"line {line}: {n} is not in asyncsdk._core.__all__"
                      for n in names if n not in exported]
    assert not wrong, f"{module} reaches past the engine's face:\n" + "\n".join(wrong)


#: What the client (the composition root) asks of the transport it made; otherwise it
#: only hands the transport to its areas. Its settings (timeout, retries, credentials)
#: are its own, kept as it composed them.
CLIENT_ASKS_THE_TRANSPORT = {"shown_hosts"}


def _client_reads_of_its_transport(source: str) -> list[str]:
    """Where ``source`` reads an attribute of ``self._transport`` other than the asked."""
    return [f"line {node.lineno}: self._transport.{node.attr}"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self._transport"
            and node.attr not in CLIENT_ASKS_THE_TRANSPORT]


def test_the_client_reads_nothing_through_its_transport() -> None:
    wrong = _client_reads_of_its_transport(
        (PACKAGE_DIR / "_client.py").read_text(encoding="utf-8"))
    assert not wrong, "the client reads through its transport:\n" + "\n".join(wrong)


def test_the_client_reads_check_sees_a_read() -> None:
    """The oracle, on lines the client had before it kept its own settings."""
    old = ("return self._transport.limits.timeout\n"
           "limits = self._transport.limits\n"
           "key = self._transport.credentials.api_key\n"
           "Contacts(self._transport)\nself._transport.shown_hosts()\n")
    assert sorted(_client_reads_of_its_transport(old)) == [
        "line 1: self._transport.limits", "line 2: self._transport.limits",
        "line 3: self._transport.credentials"]


def test_the_face_test_sees_a_reach() -> None:
    """The oracle itself, on lines of the code this test replaced."""
    old = ("c._transport.sleep = s\nc.rand = r\nfrom asyncsdk._core.session import "
           "ClosedInFlight\nt.sessions.session()\nt.credentials.clean(e)\n"
           "job._engine.now()\n"
           # tests/helpers.py's ``pace_of``, before ``client.validation.pace()``
           "return client._paces.pace(key_fingerprint(key), area.argument)\n"
           "pace = c._transport._paces.pace(c._transport._pace_key, 'validation')\n")
    found = _reaches_into_the_core(old, own_engine=True)
    # line 1 twice (the reach and the assignment), line 8 four times (two of each)
    assert len(found) == 12, found
    assert "line 7: client._paces" in found and "line 8: c._transport._pace_key" in found
    assert _reaches_into_the_core("self._engine.now()", own_engine=True) == []


def test_the_core_exports_what_it_names() -> None:
    import asyncsdk._core as core

    assert sorted(core.__all__) == sorted(_core_exports())
    for name in core.__all__:
        assert getattr(core, name) is not None, name


# --- the lazy faces: an explicit table, what type checkers see ---------------------------
def _face_tables(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """A lazy face's ``TYPE_CHECKING`` imports and the table it hands ``lazy_attributes``
    (each {name: relative module}); the table must be a literal (an explicit table)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom), ast.unparse(item)
                for alias in item.names:
                    assert alias.name not in imported, f"{alias.name} imported twice"
                    imported[alias.name] = "." * item.level + (item.module or "")
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and ast.unparse(node.func) == "lazy_attributes"]
    assert len(calls) == 1, "one lazy_attributes call per face"
    table_name = ast.unparse(calls[0].args[1])
    values = [node.value for node in tree.body
              if (isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets]
                  == [table_name])
              or (isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == table_name)]
    assert len(values) == 1 and values[0] is not None, f"{table_name}: one assignment"
    table: dict[str, str] = ast.literal_eval(values[0])  # a literal: no computed table
    return imported, table


def _faces_by_use() -> list[str]:
    """The modules that use the lazy loader of the faces."""
    return sorted(m for m, p in MODULES.items() if m != IMPORTS_BY_NAME
                  and any(t == IMPORTS_BY_NAME for t, _n, _l in _imports(m, p)))


def test_the_lazy_faces_are_the_known_ones() -> None:
    assert _faces_by_use() == sorted(LAZY_FACES)


@pytest.mark.parametrize("face", LAZY_FACES)
def test_a_lazy_faces_table_is_what_type_checkers_see(face: str) -> None:
    """Each face's table (name -> module, imported on first use) names exactly the names
    and modules of its ``TYPE_CHECKING`` block; ``__all__`` is those names (and what the
    face defines itself); each name is the very object of its module."""
    import importlib

    imported, table = _face_tables(MODULES[face])
    assert imported, f"{face}: no TYPE_CHECKING imports"
    assert table == imported, f"{face}: the lazy table and the TYPE_CHECKING imports differ"
    module = importlib.import_module(face)
    own = {n for n in module.__all__ if n not in table and n in vars(module)}
    assert sorted(module.__all__) == sorted([*table, *own]), face
    for name, where in table.items():
        assert getattr(module, name) is getattr(importlib.import_module(where, face), name), (
            f"{face}.{name}")


def test_the_lazy_face_check_sees_a_table_that_drifted(tmp_path: Path) -> None:
    """The oracle itself: a name imported for type checkers but missing from the table,
    or a table that is computed, is seen."""
    face = tmp_path / "face.py"
    loader = "__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)\n"
    face.write_text("from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from .a import A as A\n    from .b import B as B\n"
                    "_LAZY = {'A': '.a'}\n" + loader)
    imported, table = _face_tables(face)
    assert imported != table
    face.write_text("from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from .a import A as A\n"
                    "_LAZY = dict(A='.a')\n" + loader)
    with pytest.raises(ValueError):
        _face_tables(face)


# --- one converter ----------------------------------------------------------------------
#: cattrs' converter classes, and what makes one from another.
CONVERTER_MAKERS = frozenset({"Converter", "GenConverter", "BaseConverter"})
#: cattrs' module-level functions, which use its global converter (a second one).
GLOBAL_CONVERTER = frozenset({"structure", "unstructure", "global_converter",
                              "structure_attrs_fromdict", "structure_attrs_fromtuple"})


def _converters_made(source: str) -> list[str]:
    """Where ``source`` makes a cattrs converter or uses cattrs' global one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else "")
            copied = (name == "copy" and isinstance(func, ast.Attribute)
                      and "converter" in ast.unparse(func.value).lower())
            if name in CONVERTER_MAKERS or name == "make_converter" or copied:
                found.append(f"line {node.lineno}: {ast.unparse(func)}(...)")
        elif (isinstance(node, ast.Attribute) and node.attr in GLOBAL_CONVERTER
              and ast.unparse(node.value).split(".")[0] == "cattrs"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cattrs"
              and any(a.name in GLOBAL_CONVERTER for a in node.names)):
            found.append(f"line {node.lineno}: from {node.module} import ...")
    return found


def test_one_converter() -> None:
    """The package makes one cattrs converter, once: ``models._convert`` builds it
    (``cattrs.Converter``), ``models._base.get_converter`` calls that once; nothing
    copies it, makes another (``cattrs.preconf``'s ``make_converter`` too) or uses
    cattrs' global converter."""
    made = {module: found for module, path in MODULES.items()
            if (found := _converters_made(path.read_text(encoding="utf-8")))}
    assert sorted(made) == ["asyncsdk.models._base", "asyncsdk.models._convert"], made
    assert [len(f) for f in made.values()] == [1, 1], made


def test_the_converter_check_sees_a_second_converter() -> None:
    for source in ("import cattrs\n_checker = cattrs.Converter()\n",
                   "from cattrs import GenConverter\nc = GenConverter()\n",
                   "from cattrs.preconf.json import make_converter\nc = make_converter()\n",
                   "c = get_converter().copy()\n",
                   "import cattrs\ncattrs.structure({}, int)\n",
                   "from cattrs import unstructure\n"):
        assert _converters_made(source), source
    assert _converters_made("c = get_converter()\nc.unstructure(x)\n") == []


# --- the arrows at run time: what a layer loads ------------------------------------------
def _loaded_after(code: str) -> list[str]:
    """The library's modules loaded in a fresh interpreter that ran ``code``."""
    import subprocess
    import sys

    script = (code + "\nimport sys\n"
              "print(' '.join(m for m in sys.modules if m.startswith('asyncsdk')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=PACKAGE_DIR.parent)
    return out.stdout.split()


def test_the_models_work_with_nothing_above_them_loaded() -> None:
    """``to_dict``/``from_dict`` of input and response models run with no module above
    the models loaded: no registry or lazy import reaches ``_serde``, the core or the
    areas at run time (before: ``models._base`` found the serializer through the string
    registry ``_lazy.provided``, an arrow no import showed)."""
    loaded = _loaded_after(
        "from decimal import Decimal\n"
        "from asyncsdk.models.products import Product, ProductInput\n"
        "sent = ProductInput(name='x', selling_price=Decimal('1.5'))\n"
        "assert ProductInput.from_dict(sent.to_dict()) == sent\n"
        "read = Product.from_dict({'id': 3, 'name': 'x', 'selling_price': '1.50', 'more': 1})\n"
        "assert Product.from_dict(read.to_dict()) == read and read.to_json()\n")
    above = [m for m in loaded if (_layer(m) or 0) > LAYERS["asyncsdk.models"]]
    assert "asyncsdk.models._convert" in loaded
    assert not above, f"the models loaded modules above them: {above}"


def _names_used_of(module: str, path: Path) -> list[tuple[str, str, int]]:
    """(library module, name, line) for each name ``module`` takes from another module
    of the library: ``from M import name`` and ``asyncsdk.name``."""
    used = [(target, name, line) for target, names, line in _imports(module, path)
            for name in names]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used += [("asyncsdk", n.attr, n.lineno) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "asyncsdk"]
    return used


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(APPLICATIONS)))
def test_the_applications_use_public_names_only(module: str) -> None:
    """A name the command line (or the fleet) takes from a public module of the library
    (``asyncsdk``, ``asyncsdk.testing``, ``asyncsdk.pacing``...) is one that module
    makes public (its ``__all__``): a public path to an internal name is no public API."""
    import importlib

    own = module.split(".")[:2]
    wrong = []
    for target, name, line in _names_used_of(module, MODULES[module]):
        if target.split(".")[:2] == own or _private_module(target):
            continue  # its own; private modules are refused by the test above
        public = getattr(importlib.import_module(target), "__all__", None)
        if public is not None and name not in public and f"{target}.{name}" not in MODULES:
            wrong.append(f"line {line}: {target}.{name}")
    assert not wrong, f"{module} uses names the library does not make public:\n" + "\n".join(
        wrong)


# --- one of each primitive ----------------------------------------------------------------
#: The one JSON member tokenizer (issue 39: there were two, on ``json.decoder.scanstring``).
TOKENIZER = "asyncsdk._serde.json_text"
#: The json module's scanner internals a tokenizer is built on.
SCANNER_NAMES = frozenset({"scanstring", "py_scanstring", "c_scanstring", "make_scanner",
                           "py_make_scanner", "c_make_scanner", "scan_once"})


def _scanner_uses(source: str) -> list[str]:
    """Where ``source`` reaches the json module's scanner (``json.decoder``,
    ``json.scanner``, ``scanstring``...) or parses a value at an offset (``raw_decode``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (
                node.attr in SCANNER_NAMES or node.attr == "raw_decode"
                or ast.unparse(node) in ("json.decoder", "json.scanner")):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id in SCANNER_NAMES:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("json.decoder",
                                                                  "json.scanner"):
            found.append(f"line {node.lineno}: from {node.module} import ...")
    return found


def test_one_json_tokenizer() -> None:
    """Only ``_serde/json_text.py`` reads JSON token by token on the json module's
    scanner; ``_serde/big_json.py`` may parse a whole value at an offset (``raw_decode``)
    between the tokens that tokenizer finds. No other module does either."""
    uses = {module: found for module, path in MODULES.items()
            if (found := _scanner_uses(path.read_text(encoding="utf-8")))}
    assert set(uses) <= {TOKENIZER, "asyncsdk._serde.big_json"}, uses
    assert all("raw_decode" in use for use in uses.get("asyncsdk._serde.big_json", [])), uses
    assert TOKENIZER in uses


def test_the_tokenizer_check_sees_a_second_one() -> None:
    assert _scanner_uses("import json\nscan = json.decoder.scanstring\n")
    assert _scanner_uses("from json.decoder import scanstring\n")
    assert _scanner_uses("value, end = decoder.raw_decode(text, pos)\n")
    assert _scanner_uses("value = json.loads(text)\n") == []


#: Where the library parks a future or an event of its own (a window of waiters is made
#: of them): the one window primitive (``_core.window.Window``: ``check_many``'s slots and
#: the pace's window), and single waits that are no window: a pause ``close()`` ends
#: (session), the generator of ``check_many`` waiting for an outcome, the fleet's worker
#: (its stop, its answers heard, its reservations: Redis hands out the places), the pace's
#: signal that its rate sped up (a broadcast that ends long paced waits: no place).
PARKED: dict[str, int] = {
    "asyncsdk._core.window": 1,
    "asyncsdk._core.pace": 1,
    "asyncsdk._core.session": 1,
    "asyncsdk.resources.validation.check_many": 1,
    "asyncsdk.fleet.shared_pace": 2,
    # the worker's stop flag (serve's, or a batch's own without one), a batch's watch
    # of it before its checks start, its bound on checks sent and not yet stored
    "asyncsdk.fleet.worker": 4,
}
#: asyncio's waiting things a hand-made window would be built of (or a bound, which
#: ``Window`` is: an ``asyncio.Semaphore`` serves where the bound is fixed).
WAITING_THINGS = frozenset({"create_future", "Future", "Event", "Condition", "Semaphore",
                            "BoundedSemaphore", "Queue", "LifoQueue", "PriorityQueue"})


def _parked(source: str) -> int:
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else "")
            count += name in WAITING_THINGS
    return count


def test_one_window_primitive() -> None:
    """A new place that parks futures (or events, conditions, semaphores, queues) is a
    second window in the making: use ``Window``, or say here why it is none."""
    parked = {module: n for module, path in MODULES.items()
              if not module.startswith(("asyncsdk.testing", "asyncsdk.cli"))
              and (n := _parked(path.read_text(encoding="utf-8")))}
    assert parked == PARKED
