"""asyncsdk: an asyncio client for the contacts, leads, invoicing, email-validation and
transactional-mail HTTP interface.

Start with ``asyncsdk.Client`` (README.md has a tour). Everything public is importable
from here; modules with a leading underscore are private.
"""

from ._client import Client
from ._convert import UNSET, UnsetType
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    ConfigurationError,
    FileFormatError,
    FileNotDownloadableError,
    InsufficientCreditError,
    InvalidEmailError,
    InvalidInputError,
    InvalidRequestError,
    JobFailedError,
    JobNotFoundError,
    JobNotReadyError,
    JobTimeoutError,
    NotFoundError,
    RateLimitError,
    ResponseDecodeError,
    SDKError,
    ServerError,
    UnverifiedSenderError,
    UsageError,
)
from .models.codes import (
    Currency,
    CustomerType,
    Industry,
    JobStatus,
    LeadSource,
    MailState,
    PaymentTerms,
    ProductType,
    Rating,
    Unit,
    Verdict,
)
from .models.validation import CheckOutcome, CheckResult, EmailRow

__version__ = "0.1.0"

__all__ = [
    "UNSET",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "CheckOutcome",
    "CheckResult",
    "Client",
    "ConfigurationError",
    "Currency",
    "CustomerType",
    "EmailRow",
    "FileFormatError",
    "FileNotDownloadableError",
    "Industry",
    "InsufficientCreditError",
    "InvalidEmailError",
    "InvalidInputError",
    "InvalidRequestError",
    "JobFailedError",
    "JobNotFoundError",
    "JobNotReadyError",
    "JobStatus",
    "JobTimeoutError",
    "LeadSource",
    "MailState",
    "NotFoundError",
    "PaymentTerms",
    "ProductType",
    "RateLimitError",
    "Rating",
    "ResponseDecodeError",
    "SDKError",
    "ServerError",
    "Unit",
    "UnsetType",
    "UnverifiedSenderError",
    "UsageError",
    "Verdict",
    "__version__",
]
