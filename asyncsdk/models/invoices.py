"""Models of invoices and estimates: ``InvoiceUpdate`` with its ``InvoiceLine``s, and
``Invoice`` (as read).

Gaps of the document, decided here:

* Every field of ``InvoiceUpdate`` is optional (``UNSET`` by default, left out of the
  body), so an update may be partial; ``None`` is sent as null. ``id`` in the body is
  optional; ``client.invoices.update`` refuses one that is not the id in the path. It,
  ``customer`` and a line's ``products`` are record ids (0 to 2**63-1, as an id in a
  path).
* Dates go out as ``YYYY-MM-DD``.
* An ``InvoiceLine`` requires ``products`` (the product id), ``quantity`` and ``rate``;
  ``discount`` and ``discount_unit`` are optional. Quantities and amounts are
  ``Decimal``s with at most two places, sent as text with two places.
* ``terms``, ``status``, ``invoice_type`` and ``discount_unit`` are plain ints (their
  meanings are not documented).
* The document shows no response body: ``Invoice`` has the update fields, all
  optional; its lines are ``InvoiceLineItem``s; unknown keys land in ``extra``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import ClassVar

import attrs

from .._checks import RecordId
from ._base import DATE_ISO, UNSET, InputModel, ResponseModel, UnsetType

__all__ = ["Invoice", "InvoiceLine", "InvoiceLineItem", "InvoiceUpdate"]


@attrs.frozen(kw_only=True)
class InvoiceLine(InputModel):
    """One line of an invoice to send: a product, its quantity, rate and discount."""

    products: RecordId
    quantity: Decimal
    rate: Decimal
    discount: Decimal | UnsetType | None = UNSET
    discount_unit: int | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class InvoiceUpdate(InputModel):
    """Changes to an invoice or estimate; every field is optional (``UNSET`` fields are
    not sent). ``productinvoices`` holds the lines."""

    _date_format: ClassVar[str] = DATE_ISO

    id: RecordId | UnsetType | None = UNSET
    productinvoices: list[InvoiceLine] | UnsetType | None = UNSET
    invoice_number: str | UnsetType | None = UNSET
    order_number: str | UnsetType | None = UNSET
    invoice_date: dt.date | UnsetType | None = UNSET
    terms: int | UnsetType | None = UNSET
    due_date: dt.date | UnsetType | None = UNSET
    subject: str | UnsetType | None = UNSET
    status: int | UnsetType | None = UNSET
    invoice_type: int | UnsetType | None = UNSET
    is_recurring_invoices: bool | UnsetType | None = UNSET
    customer: RecordId | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class InvoiceLineItem(ResponseModel):
    """One line of an ``Invoice`` as the service sends it."""

    id: int | None = None
    products: int | None = None
    quantity: Decimal | None = None
    rate: Decimal | None = None
    discount: Decimal | None = None
    discount_unit: int | None = None


@attrs.frozen(kw_only=True)
class Invoice(ResponseModel):
    """An invoice or estimate as the service sends it (every field may be None)."""

    id: int | None = None
    productinvoices: list[InvoiceLineItem] | None = attrs.field(default=None, hash=False)
    invoice_number: str | None = None
    order_number: str | None = None
    invoice_date: dt.date | None = None
    terms: int | None = None
    due_date: dt.date | None = None
    subject: str | None = None
    status: int | None = None
    invoice_type: int | None = None
    is_recurring_invoices: bool | None = None
    customer: int | None = None
