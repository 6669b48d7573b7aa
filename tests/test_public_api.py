"""The public surface is exactly what DESIGN §1 promises, and importing it is light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import asyncsdk

EXPECTED = {
    "Client", "UNSET", "UnsetType", "__version__", "RawResponse",
    # the seam of time (``Client(clock=...)``), for typing a clock of one's own
    "Clock",
    # for the filters of tracers, error trackers and recorders
    "CREDENTIAL_FIELDS", "redact_url",
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
