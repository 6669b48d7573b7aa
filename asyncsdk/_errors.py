"""The exceptions of asyncsdk, and the table that maps the service's error texts to them.

Every exception the library raises on purpose derives from ``SDKError``::

    SDKError
    ├── InvalidInputError (also ValueError)  bad argument, caught before anything is sent
    │   └── ConfigurationError                 no credential or URL for what was called
    ├── UsageError (also RuntimeError)         client closed, or used from another loop
    ├── APIError                               the service answered, and said no
    │   ├── AuthenticationError                wrong key/username, HTTP 401/403
    │   ├── InsufficientCreditError            "...refused due to insufficent credit."
    │   ├── InvalidRequestError                missing/invalid parameter, HTTP 400/422
    │   ├── InvalidEmailError                  "Email Format is not correct."
    │   ├── FileNotDownloadableError           jobs/create could not fetch the file
    │   ├── FileFormatError                    jobs/create could not read the file
    │   ├── JobNotFoundError                   job id of another account / unknown
    │   ├── JobNotReadyError                   download while the job is processing
    │   ├── UnverifiedSenderError              mail sender domain not verified
    │   ├── NotFoundError                      HTTP 404
    │   ├── RateLimitError                     HTTP 429 (``retry_after``)
    │   └── ServerError                        HTTP 5xx (``retry_after``)
    ├── APIConnectionError                     no usable answer (``may_have_been_sent``)
    │   └── APITimeoutError                    ...because time ran out
    ├── ResponseDecodeError                    an answer of a shape we cannot read
    ├── JobFailedError                         a validation job ended in ``fail``
    └── JobTimeoutError                        ``wait(deadline=...)`` passed

No exception carries a credential, in any encoding: messages, ``error_text``, ``url`` and
``body`` are scrubbed before an exception is built (``_core.credentials``: whole tokens
only, so a one-letter user name never garbles a text), checked again as the exception leaves
the transport, exceptions of aiohttp (which hold the full URL) are never chained, and the
library frames an exception passed through keep no local variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._response import RawResponse

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "ConfigurationError",
    "FileFormatError",
    "FileNotDownloadableError",
    "InsufficientCreditError",
    "InvalidEmailError",
    "InvalidInputError",
    "InvalidRequestError",
    "JobFailedError",
    "JobNotFoundError",
    "JobNotReadyError",
    "JobTimeoutError",
    "NotFoundError",
    "RateLimitError",
    "ResponseDecodeError",
    "SDKError",
    "ServerError",
    "UnverifiedSenderError",
    "UsageError",
]


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class SDKError(Exception):
    """Base class of every error raised by asyncsdk."""

    def __reduce__(self) -> Any:
        # Keyword-only constructors do not survive the default pickling; bulk workers hand
        # errors between processes, so rebuild from the stored attributes instead.
        return (_rebuild, (type(self), self.args, self.__dict__))


class InvalidInputError(SDKError, ValueError):
    """An argument was refused before anything was sent.

    ``field`` names the offending field or argument (or is None).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConfigurationError(InvalidInputError):
    """A credential or area URL needed by the call is set neither as argument nor in the
    environment (the message names both the argument and the variable), or a URL given
    is not an absolute http(s) one (the message names the argument or variable)."""


class UsageError(SDKError, RuntimeError):
    """The client was used in a way that cannot work (closed, or from another loop)."""


class APIError(SDKError):
    """The service answered and refused the request.

    Attributes:
        operation: the operation name, e.g. ``"validation.check"``.
        status_code: HTTP status of the answer (also for a ``fail`` in a 200 answer's
            body: then 200); None where there was no answer to speak of.
        error_text: the service's own error text, if it gave one.
        url: the request URL with every credential (and a ``user:password@`` password)
            replaced by ``REDACTED``.
        body: the raw answer body (redacted), for inspection.
        request_id: the service's request id header, if any.
        headers: the answer's headers (case-insensitive, each value scrubbed of the
            credentials), e.g. ``Retry-After`` and rate-limit headers; None where no
            answer came with the error.
        response: the answer as a ``RawResponse`` (``status_code``, ``headers``,
            ``request_id``, ``elapsed``, ``attempts``, redacted ``url``; ``parsed`` is
            None: the body is ``body``); None where no answer came with the error.
        may_have_been_sent: as ``APIConnectionError``'s: True where the request may
            have taken effect at the service though it answered with an error (a 5xx,
            ``ServerError``): reconcile before sending an unsafe operation again; False
            for a refusal (the service said no: nothing was done).
    """

    #: A refusal: the service did not act on the request (``ServerError``: it may have).
    may_have_been_sent: bool = False

    def __init__(
        self,
        message: str,
        *,
        operation: str = "",
        status_code: int | None = None,
        error_text: str | None = None,
        url: str | None = None,
        body: str | None = None,
        request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        response: RawResponse[None] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.status_code = status_code
        self.error_text = error_text
        self.url = url
        self.body = body
        self.request_id = request_id
        self.headers = headers
        self.response = response

    def __str__(self) -> str:
        where = f"{self.operation}: " if self.operation else ""
        status = f" (HTTP {self.status_code})" if self.status_code is not None else ""
        if status and self.message == f"HTTP {self.status_code}":  # no text of its own
            status = ""
        return f"{where}{self.message}{status}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status_code={self.status_code!r}, "
            f"operation={self.operation!r}, request_id={self.request_id!r})"
        )


class AuthenticationError(APIError):
    """Wrong API key or username (or HTTP 401/403)."""


class InsufficientCreditError(APIError):
    """The account has no credit left for validation or mail."""


class InvalidRequestError(APIError):
    """The service found a parameter missing or invalid (or HTTP 400/422)."""


class InvalidEmailError(APIError):
    """The service found the address malformed ("Email Format is not correct.")."""


class FileNotDownloadableError(APIError):
    """jobs/create: the service could not fetch the file at the given URL."""


class FileFormatError(APIError):
    """jobs/create: the fetched file is not a list of addresses the service can read."""


class JobNotFoundError(APIError):
    """The job id is unknown or belongs to another account."""


class JobNotReadyError(APIError):
    """The job's result was asked for while the job is still processing."""


class UnverifiedSenderError(APIError):
    """mail.send: the sender's domain is not verified for this account."""


class NotFoundError(APIError):
    """HTTP 404: no resource with that id."""


class RateLimitError(APIError):
    """HTTP 429 after the retries (or, in bulk, the call's budget) were spent.
    ``retry_after`` is the server's wish in seconds (capped at 60), or None. A bulk check
    that its pace held back until its budget ended is one too, never sent: its message
    says "not sent" and its ``status_code`` is None."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(APIError):
    """HTTP 5xx after the retries were spent (or at once, for an operation that is not
    safe to repeat). ``may_have_been_sent`` is True: the service may have acted on the
    request before it failed. ``retry_after``: as for ``RateLimitError``, from the
    answer's ``Retry-After`` (a 503 in maintenance says when to come back), or None."""

    may_have_been_sent = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class APIConnectionError(SDKError):
    """No usable answer arrived: the connection failed, broke, or the body was cut short.

    ``may_have_been_sent`` is True when the request may have reached the service: for an
    operation that is not safe to repeat (a create, ``mail.send``, ``jobs/create``) the
    caller must reconcile before sending again. ``status_code`` and ``request_id`` are
    None (no answer), as on every error without one.
    """

    status_code: int | None = None
    request_id: str | None = None

    def __init__(
        self,
        message: str,
        *,
        operation: str = "",
        url: str | None = None,
        may_have_been_sent: bool = True,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.url = url
        self.may_have_been_sent = may_have_been_sent

    def __str__(self) -> str:
        where = f"{self.operation}: " if self.operation else ""
        return f"{where}{self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, operation={self.operation!r}, "
            f"may_have_been_sent={self.may_have_been_sent!r})"
        )


class APITimeoutError(APIConnectionError):
    """The call's time ran out (``timeout`` / ``request_timeout``) before an answer."""


class ResponseDecodeError(SDKError):
    """The answer could not be read as the shape expected. ``body`` holds it (redacted,
    possibly shortened), ``status_code`` its HTTP status. ``may_have_been_sent`` is True:
    the service answered, and may have done what was asked (a create, a mail)."""

    may_have_been_sent = True
    request_id: str | None = None

    def __init__(
        self,
        message: str,
        *,
        operation: str = "",
        status_code: int | None = None,
        url: str | None = None,
        body: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.status_code = status_code
        self.url = url
        self.body = body

    def __str__(self) -> str:
        where = f"{self.operation}: " if self.operation else ""
        return f"{where}{self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status_code={self.status_code!r}, "
            f"operation={self.operation!r})"
        )


class JobFailedError(SDKError):
    """The validation job ended in ``fail``."""

    def __init__(self, message: str, *, job_id: int) -> None:
        super().__init__(message)
        self.job_id = job_id


class JobTimeoutError(SDKError):
    """``wait(deadline=...)`` passed before the job finished. ``last_status`` is the
    status seen last; the job itself goes on at the service and can be waited on again."""

    def __init__(self, message: str, *, job_id: int, last_status: object = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.last_status = last_status


# --- The service's error texts -------------------------------------------------------
# Keys are normalised (see normalise_error_text). The service's texts vary in case,
# spacing and the trailing dot, and spells "insufficent"; both spellings are listed.
_ERROR_TEXTS: dict[str, type[APIError]] = {
    "required parameter missing or invalid": InvalidRequestError,
    "request method is not correct": InvalidRequestError,
    "user authentication failed. wrong api key or username": AuthenticationError,
    "email format is not correct": InvalidEmailError,
    "the request was refused due to insufficent credit": InsufficientCreditError,
    "the request was refused due to insufficient credit": InsufficientCreditError,
    "file is not downloadable": FileNotDownloadableError,
    "file format is not correct": FileFormatError,
    "this job id not associated to your users": JobNotFoundError,
    "list is currently processing. please wait some times": JobNotReadyError,
    "domain authentication failed. unverified sender found": UnverifiedSenderError,
}
# Fragments that identify a text even when the service rewords the rest of it.
#: Most specific first: "Domain authentication failed. Unverified Sender found." holds
#: "authentication failed" too, and is about the sender, not the key.
_ERROR_FRAGMENTS: tuple[tuple[str, type[APIError]], ...] = (
    ("unverified sender", UnverifiedSenderError),
    ("authentication failed", AuthenticationError),
    ("insufficent credit", InsufficientCreditError),
    ("insufficient credit", InsufficientCreditError),
    ("currently processing", JobNotReadyError),
    ("not associated to your user", JobNotFoundError),
    ("not downloadable", FileNotDownloadableError),
    ("file format is not correct", FileFormatError),
    ("email format is not correct", InvalidEmailError),
    ("parameter missing or invalid", InvalidRequestError),
    ("method is not correct", InvalidRequestError),
)
_SPACES = re.compile(r"\s+")


def normalise_error_text(text: str) -> str:
    """Casefold, fold white space and drop trailing dots, so texts compare loosely."""
    return _SPACES.sub(" ", text).strip().rstrip(". ").casefold()


def error_class_for_text(text: str | None) -> type[APIError]:
    """The exception class for a service error text; ``APIError`` for an unknown one."""
    if not text:
        return APIError
    norm = normalise_error_text(text)
    found = _ERROR_TEXTS.get(norm)
    if found is not None:
        return found
    for fragment, cls in _ERROR_FRAGMENTS:
        if fragment in norm:
            return cls
    return APIError


def error_class_for_status(status: int) -> type[APIError]:
    """The exception class for a non-2xx HTTP status with no recognised error text."""
    if status in (401, 403):
        return AuthenticationError
    if status in (400, 422):
        return InvalidRequestError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    return APIError
