"""Models of contact lists: the list and its records as read, and the create/update input.

Gaps of the document, decided here:

* Contact emails are plain text, not checked as addresses: a list may well hold
  addresses that are not (yet) valid, and the document does not ask for it (leads and
  customers do).
* ``customer_type`` of a contact is the contact's own 0 or 1 (not ``CustomerType``); the
  body key is ``customer_type`` (the parameter table's ``customertype`` is not used).
* Dates go out as ``DD-MM-YYYY`` on create (``ContactInput``) and as
  ``YYYY-MM-DDTHH:MM:SS`` on update (``ContactUpdate``; a ``datetime.date`` is sent at
  midnight, a ``datetime.datetime`` with its time). A model keeps a date as it is sent
  (a create's without its time; an update's to the second, its wall-clock time without
  a zone, midnight as the date), so ``from_dict(to_dict())`` gives it back equal.
* Every response field is optional (None when missing); unknown keys land in ``extra``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar

import attrs

from .._checks import OneOf
from ._base import DATE_DMY, DATETIME_ISO, UNSET, InputModel, ResponseModel, UnsetType

__all__ = [
    "Contact",
    "ContactGroup",
    "ContactInput",
    "ContactList",
    "ContactListCreate",
    "ContactUpdate",
]

#: A contact's own customer type: 0 or 1 (not the ``CustomerType`` of invoicing).
ContactCustomerType = Annotated[int, OneOf(0, 1)]


@attrs.frozen(kw_only=True)
class Contact(ResponseModel):
    """One contact record of a list, as the service sends it."""

    uuid: str | None = None
    email: str | None = None
    customer_name: str | None = None
    mobile: int | None = None
    sex: str | None = None
    age: int | None = None
    dob: dt.date | None = None
    ip_address: str | None = None
    city: str | None = None
    country: str | None = None
    bounsestatus: int | None = None
    validation_status: int | None = None
    isemail: bool | None = None
    webpush_status: bool | None = None
    marriage_date: dt.date | None = None
    sms: bool | None = None
    messaging_app: bool | None = None
    dndphone: bool | None = None
    device_id: str | None = None
    customer_type: int | None = None
    tags: list[Any] | None = attrs.field(default=None, hash=False)  # hashable model
    attributes: dict[str, Any] | None = attrs.field(default=None, hash=False)
    status: str | None = None
    http_referer: str | None = None
    browser_name: str | None = None
    os_name: str | None = None
    device_model: str | None = None
    device_brand: str | None = None
    device_type: str | None = None
    user_agent: str | None = None
    pin_code: str | None = None
    source_ip: str | None = None


@attrs.frozen(kw_only=True)
class ContactGroup(ResponseModel):
    """One entry of ``ContactList.emaillist``: the list id (``contact``) and records."""

    contact: int | None = None
    data: list[Contact] | None = attrs.field(default=None, hash=False)  # hashable model


@attrs.frozen(kw_only=True)
class ContactList(ResponseModel):
    """A contact list with its channel flags and records (``emaillist``)."""

    id: int | None = None
    name: str | None = None
    is_email: bool | None = None
    is_push: bool | None = None
    is_sms: bool | None = None
    app_id: str | None = None
    emaillist: list[ContactGroup] | None = attrs.field(default=None, hash=False)

    @property
    def contacts(self) -> list[Contact]:
        """Every record of every ``emaillist`` entry, in order."""
        return [c for group in self.emaillist or () for c in group.data or ()]


@attrs.frozen(kw_only=True)
class _ContactRecordInput(InputModel):
    """The fields a contact record has on create and on update."""

    email: str
    mobile: int
    customer_name: str | UnsetType | None = UNSET
    sex: str | UnsetType | None = UNSET
    age: int | UnsetType | None = UNSET
    dob: dt.date | UnsetType | None = UNSET
    ip_address: str | UnsetType | None = UNSET
    city: str | UnsetType | None = UNSET
    country: str | UnsetType | None = UNSET
    isemail: bool | UnsetType | None = UNSET
    webpush_status: bool | UnsetType | None = UNSET
    marriage_date: dt.date | UnsetType | None = UNSET
    sms: bool | UnsetType | None = UNSET
    messaging_app: bool | UnsetType | None = UNSET
    device_id: str | UnsetType | None = UNSET
    customer_type: ContactCustomerType | UnsetType | None = UNSET
    status: str | UnsetType | None = UNSET
    tags: list[Any] | UnsetType | None = UNSET
    attributes: dict[str, Any] | UnsetType | None = UNSET
    pin_code: str | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class ContactInput(_ContactRecordInput):
    """A contact record to create, inside ``ContactListCreate.emaillist``.

    ``email`` and ``mobile`` (an int) are required; ``dob`` and ``marriage_date`` are sent
    as ``DD-MM-YYYY``; ``customer_type`` is 0 or 1.
    """

    _date_format: ClassVar[str] = DATE_DMY


@attrs.frozen(kw_only=True)
class ContactUpdate(_ContactRecordInput):
    """A record to update in a list (``client.contacts.update``), found by ``uuid``.

    ``uuid``, ``email`` and ``mobile`` are required; fields left ``UNSET`` are not sent,
    ``None`` is sent as null. ``dob``/``marriage_date`` go out as ``YYYY-MM-DDTHH:MM:SS``.
    """

    _date_format: ClassVar[str] = DATETIME_ISO

    uuid: str
    bounsestatus: int | UnsetType | None = UNSET
    validation_status: int | UnsetType | None = UNSET
    dndphone: bool | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class ContactListCreate(InputModel):
    """A new contact list: ``name``, ``is_email`` and its records (``emaillist``) are
    required; each record is encoded by ``ContactInput`` (dates ``DD-MM-YYYY``)."""

    _date_format: ClassVar[str] = DATE_DMY

    name: str
    is_email: bool
    emaillist: list[ContactInput]
    is_push: bool | UnsetType | None = UNSET
    is_sms: bool | UnsetType | None = UNSET
    app_id: str | UnsetType | None = UNSET
