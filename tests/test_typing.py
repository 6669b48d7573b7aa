"""Typing of the public surface (issue 14).

* ``examples/typed_usage.py`` (the README's patterns) passes ``mypy --strict``, and
  mypy sees the enums (``Verdict``, ``Industry | None``, not ``str``) and the ``ok``
  narrowing.
* Every model type a public resource or job method returns is importable from
  ``asyncsdk``.
"""

from __future__ import annotations

import enum
import inspect
import typing
from pathlib import Path

import attrs
import pytest

import asyncsdk
from asyncsdk.resources import contacts, customers, invoices, leads, mail, products, validation
from asyncsdk.resources.validation.jobs import ValidationJob

ROOT = Path(__file__).resolve().parents[1]
RESOURCE_CLASSES = [cls for module in (contacts, customers, invoices, leads, mail, products,
                                       validation)
                    for cls in vars(module).values()
                    if inspect.isclass(cls) and cls.__module__ == module.__name__]


def _mypy(*args: str) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api")
    out, err, status = api.run(["--strict", "--no-error-summary", "--cache-dir",
                                str(ROOT / ".mypy_cache"), *args])
    return out + err, status


def _revealed(out: str) -> list[str]:
    """The types mypy's ``reveal_type`` printed, in order."""
    return [line.split("Revealed type is ", 1)[1].strip('"')
            for line in out.splitlines() if "Revealed type is" in line]


def test_typed_usage_example_passes_mypy_strict() -> None:
    out, status = _mypy(str(ROOT / "examples" / "typed_usage.py"))
    assert status == 0, out


def test_mypy_sees_the_enums_and_the_narrowing(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import asyncsdk\n"
        "def f(r: asyncsdk.CheckResult, lead: asyncsdk.Lead, m: asyncsdk.MailResult,\n"
        "      o: asyncsdk.CheckOutcome, row: asyncsdk.EmailRow) -> None:\n"
        "    reveal_type(r.result)\n"
        "    reveal_type(lead.industry)\n"
        "    reveal_type(m.message)\n"
        "    reveal_type(row.status)\n"
        "    if o.ok:\n"
        "        reveal_type(o.result)\n"
        "    else:\n"
        "        reveal_type(o.error)\n")
    out, _ = _mypy(str(probe))
    revealed = _revealed(out)
    assert revealed == [
        "asyncsdk.models.codes.Verdict", "asyncsdk.models.codes.Industry | None",
        "asyncsdk.models.codes.MailState | None", "asyncsdk.models.codes.Verdict",
        "asyncsdk.models.validation.CheckResult", "asyncsdk._errors.SDKError"], out


def _model_types(tp: object) -> set[type]:
    """The attrs models and enums inside an annotation (lists, unions, iterators...)."""
    found: set[type] = set()
    if isinstance(tp, type) and (attrs.has(tp) or issubclass(tp, enum.Enum)):
        found.add(tp)
        if attrs.has(tp):  # what a returned model holds is returned too
            for hint in typing.get_type_hints(tp).values():
                found |= _model_types(hint)
    for arg in typing.get_args(tp):
        found |= _model_types(arg)
    return found


def _returned_types() -> dict[str, set[type]]:
    out: dict[str, set[type]] = {}
    for cls in [*RESOURCE_CLASSES, ValidationJob]:
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_"):
                continue
            hints = typing.get_type_hints(method, vars(inspect.getmodule(method)))
            out[f"{cls.__name__}.{name}"] = _model_types(hints.get("return"))
    return out


def test_every_returned_model_is_exported() -> None:
    returned = _returned_types()
    assert returned["Invoices.list"] >= {asyncsdk.Invoice, asyncsdk.InvoiceLineItem}
    missing = {f"{where}: {tp.__name__}" for where, types in returned.items() for tp in types
               if getattr(asyncsdk, tp.__name__, None) is not tp}
    assert not missing


def test_mypy_refuses_a_misspelt_public_name(tmp_path: Path) -> None:
    """Before: the lazy module ``__getattr__`` made every name of ``asyncsdk`` and
    ``asyncsdk.testing`` an ``Any`` that mypy accepted (``from asyncsdk import Clinet``)."""
    probe = tmp_path / "typo.py"
    probe.write_text(
        "import asyncsdk\n"
        "from asyncsdk import Client, Clinet\n"
        "from asyncsdk.testing import Sandbox, Sandboxx\n"
        "x = asyncsdk.NoSuchThing\n"
        "y: asyncsdk.Client | None = None\n")
    out, status = _mypy(str(probe))
    assert status != 0
    wrong = sorted(line.split(": error: ", 1)[1] for line in out.splitlines()
                   if ": error: " in line)
    assert len(wrong) == 3, out
    assert any('"Clinet"' in w for w in wrong) and any('"Sandboxx"' in w for w in wrong)
    assert any('"NoSuchThing"' in w for w in wrong)


def test_the_readmes_python_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    """Every Python block of the README type-checks as a user's code would: a whole
    program (or a pytest module) as it is, a snippet as the body of a coroutine given
    the names the README's text provides (``client``, ``url``, the state helpers).
    Before: the resources tour passed optional ids where ids are required."""
    import re
    import textwrap

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    fence = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
    blocks = [body for lang, body in fence.findall(readme) if lang == "python"]
    assert len(blocks) >= 10
    files = []
    for i, code in enumerate(blocks):
        if "asyncio.run(" in code or "def test_" in code:
            source = code
        else:
            source = ("from typing import Any, Callable\nimport asyncsdk\n\n"
                      "async def _snippet(client: asyncsdk.Client, url: str,\n"
                      "                   load_state: Callable[[], Any],\n"
                      "                   save_state: Callable[[Any], None],\n"
                      "                   clear_state: Callable[[], None]) -> None:\n"
                      + textwrap.indent(code, "    "))
        path = tmp_path / f"readme_block_{i}.py"
        path.write_text(source, encoding="utf-8")
        files.append(str(path))
    out, status = _mypy(*files)
    assert status == 0, out


def test_with_raw_response_is_typed_as_the_methods_it_wraps(tmp_path: Path) -> None:
    """Before: every ``with_raw_response`` attribute and its ``parsed`` were ``Any``, so a
    misspelt area or method, or a wrong argument, type-checked."""
    probe = tmp_path / "raw.py"
    probe.write_text(
        "import asyncsdk\n"
        "async def f(client: asyncsdk.Client) -> None:\n"
        "    raw = await client.with_raw_response.contacts.list()\n"
        "    reveal_type(raw.parsed)\n"
        "    one = await client.with_raw_response.validation.check('a@b.com')\n"
        "    reveal_type(one.parsed.result)\n"
        "    reveal_type(one.status_code)\n"
        "    await client.with_raw_response.validaton.check('a@b.com')\n"
        "    await client.with_raw_response.validation.check(1)\n"
        "    await client.with_raw_response.invoices.get(1)\n")
    out, _ = _mypy(str(probe))
    revealed = _revealed(out)
    assert revealed == ["list[asyncsdk.models.contacts.ContactList]",
                        "asyncsdk.models.codes.Verdict", "int"], out
    errors = [line for line in out.splitlines() if ": error: " in line]
    assert len(errors) == 3, out
    assert '"validaton"' in errors[0] and "incompatible type" in errors[1]
    assert '"get"' in errors[2]
