"""asyncsdk: an asyncio client for the contacts, leads, invoicing, email-validation and
transactional-mail HTTP interface.

Start with ``asyncsdk.Client`` (README.md has a tour). Everything public is importable
from here; modules with a leading underscore are private.

The public names are listed once, in the ``TYPE_CHECKING`` block below (type checkers
read it; ``X as X`` marks each as exported). At run time that block is not executed: the
same imports are read from this file's source and every name is imported on first use
(PEP 562), so ``import asyncsdk`` costs little and ``__all__``, ``dir()`` and the lazy
imports cannot drift from what type checkers see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes, provide

__version__ = "0.1.0"

if TYPE_CHECKING:  # THE list of public names (see the module docstring)
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
    from .models._base import (
        UNSET as UNSET,
    )
    from .models._base import (
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


def _public_names() -> dict[str, str]:
    """{name: module} from the ``TYPE_CHECKING`` block of this file's source (read with
    a regular expression: ``ast`` would cost more than the rest of the import)."""
    import re

    loader = __spec__.loader if __spec__ is not None else None
    get_source = getattr(loader, "get_source", None)
    source = get_source(__name__) if get_source is not None else None
    if source is None:  # no source through the loader: read the file itself
        with open(__file__, encoding="utf-8") as handle:
            source = handle.read()
    block = source.split("\nif TYPE_CHECKING:", 1)[1].split("\n\n", 1)[0]
    return {name: module
            for module, names in re.findall(r"from (\S+) import \(([^)]*)\)", block)
            for name in re.findall(r"(\w+) as \1\b", names)}


_LAZY = _public_names()
__all__ = sorted([*_LAZY, "__version__"])

# The models' ``to_dict()`` goes through the one converter, a floor above them: named
# here, imported at the first ``to_dict()``.
provide("wire_form", "asyncsdk._serde.converter:to_wire")


if not TYPE_CHECKING:  # hidden from type checkers: a module ``__getattr__`` would make
    # every misspelt name (``from asyncsdk import Clinet``) an ``Any`` they accept
    __getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

# What built the table is not part of the package's face: ``dir(asyncsdk)`` shows the
# public names and the module's own dunders only.
del annotations, TYPE_CHECKING, lazy_attributes, provide
