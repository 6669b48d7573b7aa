"""The public surface is exactly what DESIGN §1 promises, and importing it is light."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import asyncsdk

EXPECTED = {
    "Client", "UNSET", "UnsetType", "__version__", "RawResponse",
    # the seam of time (``Client(clock=...)``), for typing a clock of one's own
    "Clock",
    # for the filters of tracers, error trackers and recorders
    "CREDENTIAL_FIELDS", "redact_secrets", "redact_url",
    # errors
    "SDKError", "InvalidInputError", "ConfigurationError", "UsageError", "APIError",
    "AuthenticationError", "InsufficientCreditError", "InvalidRequestError",
    "InvalidEmailError", "FileNotDownloadableError", "FileFormatError", "JobNotFoundError",
    "JobNotReadyError", "UnverifiedSenderError", "NotFoundError", "RateLimitError",
    "ServerError", "APIConnectionError", "APITimeoutError", "ResponseDecodeError",
    "JobFailedError", "JobTimeoutError",
    # codes
    "Industry", "LeadSource", "Rating", "CustomerType", "Currency", "PaymentTerms",
    "ProductType", "Unit", "Verdict", "JobStatus", "MailState",
    # models
    "CheckResult", "CheckOutcome", "EmailRow", "MailResult", "ValidationJob",
    "ContactList", "Contact", "ContactListCreate", "ContactInput", "ContactUpdate", "Lead",
    "LeadInput", "Customer", "CustomerCreate", "CustomerUpdate", "Product", "ProductInput",
    "Invoice", "InvoiceUpdate", "InvoiceLine", "InvoiceLineItem", "CheckSuccess",
    "CheckFailure", "ContactGroup",
}


def test_all_is_exact() -> None:
    assert set(asyncsdk.__all__) == EXPECTED
    assert len(asyncsdk.__all__) == len(set(asyncsdk.__all__))
    for name in asyncsdk.__all__:
        assert hasattr(asyncsdk, name), name


def test_import_is_light() -> None:
    """No test tools, and models, jobs and cattrs load on first use only."""
    code = (
        "import sys, asyncsdk\n"
        "bad = [m for m in ('pytest', 'aioresponses', 'hypothesis', 'asyncsdk.testing',"
        " 'asyncsdk.models.contacts', 'asyncsdk.resources.validation.jobs', 'cattrs')"
        " if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_names_are_the_real_objects() -> None:
    from asyncsdk.models.contacts import ContactList

    assert asyncsdk.ContactList is ContactList
    assert "ContactList" in dir(asyncsdk)
    with pytest.raises(AttributeError, match="NoSuchThing"):
        asyncsdk.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


FACE = Path(asyncsdk.__file__)


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """{name: module} of the face's ``if TYPE_CHECKING:`` block (``X as X`` each)."""
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    imported: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: import it as itself"
            assert alias.name not in imported, f"{alias.name} imported twice"
            imported[alias.name] = "." * node.level + (node.module or "")
    return imported


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """The face's ``_LAZY = {...}`` literal."""
    value = next(node.value for node in tree.body if isinstance(node, ast.AnnAssign)
                 and isinstance(node.target, ast.Name) and node.target.id == "_LAZY")
    table: dict[str, str] = ast.literal_eval(value)
    return table


def test_the_lazy_table_is_what_type_checkers_see() -> None:
    """The table the face imports from at run time names exactly the names and modules of
    its ``TYPE_CHECKING`` block, and ``__all__`` is those names (before: the package read
    its own source with a regular expression at every import to make the table)."""
    tree = ast.parse(FACE.read_text(encoding="utf-8"))
    imported = _type_checking_imports(tree)
    assert _lazy_table(tree) == imported
    assert sorted(asyncsdk.__all__) == sorted([*imported, "__version__"])
    for name, module in imported.items():
        assert getattr(asyncsdk, name) is getattr(
            importlib.import_module(module, "asyncsdk"), name), name


def test_the_face_reads_no_source_at_import() -> None:
    """At run time the face imports ``typing`` and the lazy loader, and calls nothing
    that reads a file or a regular expression."""
    tree = ast.parse(FACE.read_text(encoding="utf-8"))
    run_time = [node for node in tree.body if not (
        isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING")]
    imported = {("." * n.level + (n.module or "")) if isinstance(n, ast.ImportFrom)
                else a.name
                for node in run_time for n in ast.walk(node)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert imported == {"__future__", "typing", "._lazy"}
    called = {n.func.id for node in run_time for n in ast.walk(node)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert called <= {"sorted", "lazy_attributes"}, called


def test_dir_shows_the_public_names_and_nothing_of_how_they_are_made() -> None:
    code = ("import asyncsdk\n"
            "print(' '.join(n for n in dir(asyncsdk) if not n.startswith('_')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    shown = set(out.stdout.split())
    assert shown == EXPECTED - {"__version__"}  # no re, lazy_attributes, TYPE_CHECKING...
    for helper in ("re", "lazy_attributes", "TYPE_CHECKING", "annotations"):
        assert helper not in dir(asyncsdk) and not hasattr(asyncsdk, helper), helper


def test_the_license_pyproject_names_is_there() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert 'license = { text = "MIT" }' in (root / "pyproject.toml").read_text()
    assert (root / "LICENSE").read_text().startswith("MIT License\n")
