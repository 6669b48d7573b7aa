"""asyncsdk: an asyncio client for the contacts, leads, invoicing, email-validation and
transactional-mail HTTP interface.

Start with ``asyncsdk.Client`` (README.md has a tour). Everything public is importable
from here; modules with a leading underscore are private.
"""

from typing import TYPE_CHECKING

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
from ._lazy import lazy_attributes

if TYPE_CHECKING:  # for type checkers and IDEs; at run time these load on first use
    from ._client import Client
    from .jobs import ValidationJob
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
    from .models.contacts import (
        Contact,
        ContactInput,
        ContactList,
        ContactListCreate,
        ContactUpdate,
    )
    from .models.customers import Customer, CustomerCreate, CustomerUpdate
    from .models.invoices import Invoice, InvoiceLine, InvoiceUpdate
    from .models.leads import Lead, LeadInput
    from .models.mail import MailResult
    from .models.products import Product, ProductInput
    from .models.validation import CheckOutcome, CheckResult, EmailRow

# Models, code lists and the job helper are imported on first use (PEP 562), so that
# ``import asyncsdk`` costs little more than importing aiohttp.
_LAZY = {
    "CheckOutcome": ".models.validation",
    "CheckResult": ".models.validation",
    "Contact": ".models.contacts",
    "ContactInput": ".models.contacts",
    "ContactList": ".models.contacts",
    "ContactListCreate": ".models.contacts",
    "ContactUpdate": ".models.contacts",
    "Currency": ".models.codes",
    "Customer": ".models.customers",
    "CustomerCreate": ".models.customers",
    "CustomerType": ".models.codes",
    "CustomerUpdate": ".models.customers",
    "EmailRow": ".models.validation",
    "Industry": ".models.codes",
    "Invoice": ".models.invoices",
    "InvoiceLine": ".models.invoices",
    "InvoiceUpdate": ".models.invoices",
    "JobStatus": ".models.codes",
    "Lead": ".models.leads",
    "LeadInput": ".models.leads",
    "LeadSource": ".models.codes",
    "MailResult": ".models.mail",
    "MailState": ".models.codes",
    "PaymentTerms": ".models.codes",
    "Product": ".models.products",
    "ProductInput": ".models.products",
    "ProductType": ".models.codes",
    "Rating": ".models.codes",
    "Unit": ".models.codes",
    "ValidationJob": ".jobs",
    "Client": "._client",
    "Verdict": ".models.codes",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


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
    "Contact",
    "ContactInput",
    "ContactList",
    "ContactListCreate",
    "ContactUpdate",
    "Currency",
    "Customer",
    "CustomerCreate",
    "CustomerType",
    "CustomerUpdate",
    "EmailRow",
    "FileFormatError",
    "FileNotDownloadableError",
    "Industry",
    "InsufficientCreditError",
    "InvalidEmailError",
    "InvalidInputError",
    "InvalidRequestError",
    "Invoice",
    "InvoiceLine",
    "InvoiceUpdate",
    "JobFailedError",
    "JobNotFoundError",
    "JobNotReadyError",
    "JobStatus",
    "JobTimeoutError",
    "Lead",
    "LeadInput",
    "LeadSource",
    "MailResult",
    "MailState",
    "NotFoundError",
    "PaymentTerms",
    "Product",
    "ProductInput",
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
    "ValidationJob",
    "Verdict",
    "__version__",
]
