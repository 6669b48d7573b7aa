"""asyncsdk: an asyncio client for the contacts, leads, invoicing, email-validation and
transactional-mail HTTP interface.

Start with ``asyncsdk.Client`` (README.md has a tour). Everything public is importable
from here; modules with a leading underscore are private.

The public names are in the ``TYPE_CHECKING`` block below (type checkers read it;
``X as X`` marks each as exported) and in the table ``_LAZY`` after it (name -> module),
from which every name is imported on first use (PEP 562), so ``import asyncsdk`` costs
little. ``__all__`` is the table's names; tests/test_public_api.py reads this file with
``ast`` and holds the block and the table to the same names and modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

__version__ = "0.1.0"

if TYPE_CHECKING:  # the public names, as type checkers see them (the docstring)
    from ._client import (
        Client as Client,
    )
    from ._core.clock import (
        Clock as Clock,
    )
    from ._core.credentials import (
        CREDENTIAL_FIELDS as CREDENTIAL_FIELDS,
    )
    from ._core.credentials import (
        redact_secrets as redact_secrets,
    )
    from ._core.credentials import (
        redact_url as redact_url,
    )
    from ._errors import (
        APIConnectionError as APIConnectionError,
    )
    from ._errors import (
        APIError as APIError,
    )
    from ._errors import (
        APITimeoutError as APITimeoutError,
    )
    from ._errors import (
        AuthenticationError as AuthenticationError,
    )
    from ._errors import (
        ConfigurationError as ConfigurationError,
    )
    from ._errors import (
        FileFormatError as FileFormatError,
    )
    from ._errors import (
        FileNotDownloadableError as FileNotDownloadableError,
    )
    from ._errors import (
        InsufficientCreditError as InsufficientCreditError,
    )
    from ._errors import (
        InvalidEmailError as InvalidEmailError,
    )
    from ._errors import (
        InvalidInputError as InvalidInputError,
    )
    from ._errors import (
        InvalidRequestError as InvalidRequestError,
    )
    from ._errors import (
        JobFailedError as JobFailedError,
    )
    from ._errors import (
        JobNotFoundError as JobNotFoundError,
    )
    from ._errors import (
        JobNotReadyError as JobNotReadyError,
    )
    from ._errors import (
        JobTimeoutError as JobTimeoutError,
    )
    from ._errors import (
        NotFoundError as NotFoundError,
    )
    from ._errors import (
        RateLimitError as RateLimitError,
    )
    from ._errors import (
        ResponseDecodeError as ResponseDecodeError,
    )
    from ._errors import (
        SDKError as SDKError,
    )
    from ._errors import (
        ServerError as ServerError,
    )
    from ._errors import (
        UnverifiedSenderError as UnverifiedSenderError,
    )
    from ._errors import (
        UsageError as UsageError,
    )
    from ._response import (
        RawResponse as RawResponse,
    )
    from .models._vocabulary import (
        UNSET as UNSET,
    )
    from .models._vocabulary import (
        UnsetType as UnsetType,
    )
    from .models.codes import (
        Currency as Currency,
    )
    from .models.codes import (
        CustomerType as CustomerType,
    )
    from .models.codes import (
        Industry as Industry,
    )
    from .models.codes import (
        JobStatus as JobStatus,
    )
    from .models.codes import (
        LeadSource as LeadSource,
    )
    from .models.codes import (
        MailState as MailState,
    )
    from .models.codes import (
        PaymentTerms as PaymentTerms,
    )
    from .models.codes import (
        ProductType as ProductType,
    )
    from .models.codes import (
        Rating as Rating,
    )
    from .models.codes import (
        Unit as Unit,
    )
    from .models.codes import (
        Verdict as Verdict,
    )
    from .models.contacts import (
        Contact as Contact,
    )
    from .models.contacts import (
        ContactGroup as ContactGroup,
    )
    from .models.contacts import (
        ContactInput as ContactInput,
    )
    from .models.contacts import (
        ContactList as ContactList,
    )
    from .models.contacts import (
        ContactListCreate as ContactListCreate,
    )
    from .models.contacts import (
        ContactUpdate as ContactUpdate,
    )
    from .models.customers import (
        Customer as Customer,
    )
    from .models.customers import (
        CustomerCreate as CustomerCreate,
    )
    from .models.customers import (
        CustomerUpdate as CustomerUpdate,
    )
    from .models.invoices import (
        Invoice as Invoice,
    )
    from .models.invoices import (
        InvoiceLine as InvoiceLine,
    )
    from .models.invoices import (
        InvoiceLineItem as InvoiceLineItem,
    )
    from .models.invoices import (
        InvoiceUpdate as InvoiceUpdate,
    )
    from .models.leads import (
        Lead as Lead,
    )
    from .models.leads import (
        LeadInput as LeadInput,
    )
    from .models.mail import (
        MailResult as MailResult,
    )
    from .models.products import (
        Product as Product,
    )
    from .models.products import (
        ProductInput as ProductInput,
    )
    from .models.validation import (
        CheckFailure as CheckFailure,
    )
    from .models.validation import (
        CheckOutcome as CheckOutcome,
    )
    from .models.validation import (
        CheckResult as CheckResult,
    )
    from .models.validation import (
        CheckSuccess as CheckSuccess,
    )
    from .models.validation import (
        EmailRow as EmailRow,
    )
    from .resources.validation.jobs import (
        ValidationJob as ValidationJob,
    )


#: Every public name -> the module it is imported from on first use: the names and
#: modules of the ``TYPE_CHECKING`` block above (tests/test_public_api.py holds the two
#: equal).
_LAZY: dict[str, str] = {
    "Client": "._client",
    "Clock": "._core.clock",
    "CREDENTIAL_FIELDS": "._core.credentials",
    "redact_secrets": "._core.credentials",
    "redact_url": "._core.credentials",
    "APIConnectionError": "._errors",
    "APIError": "._errors",
    "APITimeoutError": "._errors",
    "AuthenticationError": "._errors",
    "ConfigurationError": "._errors",
    "FileFormatError": "._errors",
    "FileNotDownloadableError": "._errors",
    "InsufficientCreditError": "._errors",
    "InvalidEmailError": "._errors",
    "InvalidInputError": "._errors",
    "InvalidRequestError": "._errors",
    "JobFailedError": "._errors",
    "JobNotFoundError": "._errors",
    "JobNotReadyError": "._errors",
    "JobTimeoutError": "._errors",
    "NotFoundError": "._errors",
    "RateLimitError": "._errors",
    "ResponseDecodeError": "._errors",
    "SDKError": "._errors",
    "ServerError": "._errors",
    "UnverifiedSenderError": "._errors",
    "UsageError": "._errors",
    "RawResponse": "._response",
    "UNSET": ".models._vocabulary",
    "UnsetType": ".models._vocabulary",
    "Currency": ".models.codes",
    "CustomerType": ".models.codes",
    "Industry": ".models.codes",
    "JobStatus": ".models.codes",
    "LeadSource": ".models.codes",
    "MailState": ".models.codes",
    "PaymentTerms": ".models.codes",
    "ProductType": ".models.codes",
    "Rating": ".models.codes",
    "Unit": ".models.codes",
    "Verdict": ".models.codes",
    "Contact": ".models.contacts",
    "ContactGroup": ".models.contacts",
    "ContactInput": ".models.contacts",
    "ContactList": ".models.contacts",
    "ContactListCreate": ".models.contacts",
    "ContactUpdate": ".models.contacts",
    "Customer": ".models.customers",
    "CustomerCreate": ".models.customers",
    "CustomerUpdate": ".models.customers",
    "Invoice": ".models.invoices",
    "InvoiceLine": ".models.invoices",
    "InvoiceLineItem": ".models.invoices",
    "InvoiceUpdate": ".models.invoices",
    "Lead": ".models.leads",
    "LeadInput": ".models.leads",
    "MailResult": ".models.mail",
    "Product": ".models.products",
    "ProductInput": ".models.products",
    "CheckFailure": ".models.validation",
    "CheckOutcome": ".models.validation",
    "CheckResult": ".models.validation",
    "CheckSuccess": ".models.validation",
    "EmailRow": ".models.validation",
    "ValidationJob": ".resources.validation.jobs",
}
__all__ = sorted([*_LAZY, "__version__"])


if not TYPE_CHECKING:  # hidden from type checkers: a module ``__getattr__`` would make
    # every misspelt name (``from asyncsdk import Clinet``) an ``Any`` they accept
    __getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

# What built the table is not part of the package's face: ``dir(asyncsdk)`` shows the
# public names and the module's own dunders only.
del annotations, TYPE_CHECKING, lazy_attributes
