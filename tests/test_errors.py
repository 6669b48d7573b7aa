"""The error-text table, status mapping, and what an exception shows."""

from __future__ import annotations

import pickle

import pytest

import asyncsdk
from asyncsdk._errors import error_class_for_status, error_class_for_text

# Every error text of the document, per operation, with the class it must map to.
DOCUMENT_TEXTS = [
    ("Required parameter missing or invalid.", asyncsdk.InvalidRequestError),
    ("Required parameter missing or invalid", asyncsdk.InvalidRequestError),
    ("User authentication failed. Wrong API Key or username.", asyncsdk.AuthenticationError),
    ("Email Format is not correct.", asyncsdk.InvalidEmailError),
    ("The request was refused due to insufficent credit.", asyncsdk.InsufficientCreditError),
    ("File is not downloadable.", asyncsdk.FileNotDownloadableError),
    ("File Format is not correct.", asyncsdk.FileFormatError),
    ("This Job Id not associated to your users.", asyncsdk.JobNotFoundError),
    ("List is currently Processing. Please wait some times.", asyncsdk.JobNotReadyError),
    ("Request method is not correct.", asyncsdk.InvalidRequestError),
    ("Domain authentication failed. Unverified Sender found.", asyncsdk.UnverifiedSenderError),
]


@pytest.mark.parametrize(("text", "cls"), DOCUMENT_TEXTS)
def test_every_document_text_maps_to_its_class(text: str, cls: type) -> None:
    assert error_class_for_text(text) is cls


@pytest.mark.parametrize(("text", "cls"), DOCUMENT_TEXTS)
def test_texts_match_loosely(text: str, cls: type) -> None:
    # Sentences joined otherwise or ended with "!": the unverified-sender text was read
    # as an authentication failure when its first sentence was not followed by a space.
    variants = [text.upper(), text.lower(), f"  {text}  ", text.rstrip("."),
                text.replace(" ", "   "), text + "\n", text.replace(". ", "."),
                text.replace(". ", ": "), text.rstrip(".") + "!"]
    for variant in variants:
        assert error_class_for_text(variant) is cls, variant


def test_correct_spelling_of_insufficient_also_maps() -> None:
    assert (error_class_for_text("The request was refused due to insufficient credit")
            is asyncsdk.InsufficientCreditError)


@pytest.mark.parametrize("text", ["", None, "Something new happened.", "fail"])
def test_unknown_text_is_plain_api_error(text: str | None) -> None:
    assert error_class_for_text(text) is asyncsdk.APIError


@pytest.mark.parametrize(
    ("status", "cls"),
    [(400, asyncsdk.InvalidRequestError), (401, asyncsdk.AuthenticationError),
     (403, asyncsdk.AuthenticationError), (404, asyncsdk.NotFoundError),
     (422, asyncsdk.InvalidRequestError), (429, asyncsdk.RateLimitError),
     (500, asyncsdk.ServerError), (503, asyncsdk.ServerError), (418, asyncsdk.APIError)],
)
def test_status_classes(status: int, cls: type) -> None:
    assert error_class_for_status(status) is cls


def test_hierarchy() -> None:
    for cls in (asyncsdk.AuthenticationError, asyncsdk.InsufficientCreditError,
                asyncsdk.InvalidRequestError, asyncsdk.InvalidEmailError,
                asyncsdk.FileNotDownloadableError, asyncsdk.FileFormatError,
                asyncsdk.JobNotFoundError, asyncsdk.JobNotReadyError,
                asyncsdk.UnverifiedSenderError, asyncsdk.NotFoundError,
                asyncsdk.RateLimitError, asyncsdk.ServerError):
        assert issubclass(cls, asyncsdk.APIError)
    assert issubclass(asyncsdk.InvalidInputError, ValueError)
    assert issubclass(asyncsdk.APITimeoutError, asyncsdk.APIConnectionError)
    for cls in (asyncsdk.APIError, asyncsdk.APIConnectionError, asyncsdk.ResponseDecodeError,
                asyncsdk.JobFailedError, asyncsdk.JobTimeoutError, asyncsdk.InvalidInputError,
                asyncsdk.UsageError):
        assert issubclass(cls, asyncsdk.SDKError)


def test_api_error_repr_shows_message_status_and_request_id_only() -> None:
    err = asyncsdk.NotFoundError("Not found.", operation="leads.get", status_code=404,
                                 url="https://h/x?api_key=REDACTED", body="{}",
                                 request_id="req_1")
    assert repr(err) == ("NotFoundError(message='Not found.', status_code=404, "
                         "operation='leads.get', request_id='req_1')")
    assert str(err) == "leads.get: Not found. (HTTP 404)"


@pytest.mark.parametrize(("cls", "status"), [(asyncsdk.RateLimitError, 429),
                                             (asyncsdk.ServerError, 503)])
def test_errors_survive_pickling(
        cls: type[asyncsdk.RateLimitError] | type[asyncsdk.ServerError], status: int) -> None:
    err = cls("slow down", operation="x", status_code=status, retry_after=2.0)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (back.retry_after, back.status_code, str(back)) == (2.0, status, str(err))
    conn = pickle.loads(pickle.dumps(asyncsdk.APITimeoutError("t", may_have_been_sent=False)))
    assert conn.may_have_been_sent is False


def test_an_error_without_a_text_says_its_status_once() -> None:
    """Before: ``validation.check: HTTP 404 (HTTP 404)``."""
    error = asyncsdk.NotFoundError("HTTP 404", operation="contacts.get", status_code=404)
    assert str(error) == "contacts.get: HTTP 404"
    texted = asyncsdk.NotFoundError("Not found.", operation="contacts.get", status_code=404)
    assert str(texted) == "contacts.get: Not found. (HTTP 404)"
