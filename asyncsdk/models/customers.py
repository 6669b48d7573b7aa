"""Models of customers: ``CustomerCreate``, ``CustomerUpdate`` and ``Customer`` (as read).

Gaps of the document, decided here:

* ``CustomerUpdate`` requires only ``email``; every other field is ``UNSET`` by default
  and left out of the body, so an update is partial. ``None`` is sent as null (e.g.
  ``last_name=None`` clears it).
* ``billing_zipcode``/``shipping_zipcode`` are sent as text; read as text even when the
  service sends a number. ``billing_country``/``shipping_country`` are sent as country
  codes (ints, 1 or 26 to 247); ``Customer.shipping_country`` keeps whatever arrived,
  an int or a text (the document types it as a string, its samples send an integer).
* ``portal_language`` is a plain int (only 0, English, is documented).
* The document shows no response body: ``Customer`` has the input fields plus ``id``,
  all optional, unknown keys in ``extra``, unknown codes kept as int.
"""

from __future__ import annotations

import attrs

from .._checks import CountryCode, Email
from ._base import UNSET, InputModel, ResponseModel, UnsetType
from .codes import Currency, CustomerType, PaymentTerms

__all__ = ["Customer", "CustomerCreate", "CustomerUpdate"]


@attrs.frozen(kw_only=True)
class _CustomerFields(InputModel):
    """The customer fields that are optional both on create and on update."""

    last_name: str | UnsetType | None = UNSET
    crn_number: str | UnsetType | None = UNSET
    company_name: str | UnsetType | None = UNSET
    phone: str | UnsetType | None = UNSET
    website: str | UnsetType | None = UNSET
    billing_state: str | UnsetType | None = UNSET
    billing_city: str | UnsetType | None = UNSET
    billing_address: str | UnsetType | None = UNSET
    billing_zipcode: str | UnsetType | None = UNSET
    billing_country: CountryCode | UnsetType | None = UNSET
    currency: Currency | UnsetType | None = UNSET
    payment_terms: PaymentTerms | UnsetType | None = UNSET
    enable_portal: bool | UnsetType | None = UNSET
    portal_language: int | UnsetType | None = UNSET
    shipping_state: str | UnsetType | None = UNSET
    shipping_city: str | UnsetType | None = UNSET
    shipping_address: str | UnsetType | None = UNSET
    shipping_zipcode: str | UnsetType | None = UNSET
    shipping_country: CountryCode | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class CustomerCreate(_CustomerFields):
    """A new customer: ``customer_type``, ``first_name`` and ``email`` are required."""

    customer_type: CustomerType
    first_name: str
    email: Email


@attrs.frozen(kw_only=True)
class CustomerUpdate(_CustomerFields):
    """Changes to a customer: only ``email`` is required; fields left ``UNSET`` are not
    sent."""

    email: Email
    customer_type: CustomerType | UnsetType | None = UNSET
    first_name: str | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class Customer(ResponseModel):
    """A customer as the service sends it (every field may be None)."""

    id: int | None = None
    customer_type: CustomerType | None = None
    first_name: str | None = None
    last_name: str | None = None
    crn_number: str | None = None
    company_name: str | None = None
    email: str | None = None
    phone: str | None = None
    website: str | None = None
    billing_state: str | None = None
    billing_city: str | None = None
    billing_address: str | None = None
    billing_zipcode: str | None = None
    billing_country: int | None = None
    currency: Currency | None = None
    payment_terms: PaymentTerms | None = None
    enable_portal: bool | None = None
    portal_language: int | None = None
    shipping_state: str | None = None
    shipping_city: str | None = None
    shipping_address: str | None = None
    shipping_zipcode: str | None = None
    shipping_country: int | str | None = None
