"""``client.contacts``: contact lists (list, get, create, update, delete).

Update sends ``{"contact": <list id>, "data": [<records>]}``: the list id goes into the
body as an int when it is one (or is all digits), as given otherwise. At least one
record is required. Safety and errors: see ``CrudResource`` in ``_base``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._checks import MAX_ID, check_id, refuse
from .._errors import InvalidInputError
from .._serde.converter import encode
from ..models.contacts import ContactList, ContactListCreate, ContactUpdate
from ._areas import Area
from ._base import (
    CrudResource,
    ExtraHeaders,
    ExtraQuery,
    ResourceId,
    check_model,
    crud_operations,
    per_call,
)


class Contacts(CrudResource):
    """Contact lists (see ``CrudResource`` for timeouts and errors)."""

    __slots__ = ()
    _ops = crud_operations("contacts", Area.CONTACTS, "/api/v1/contact/")

    async def list(
        self, *, request_timeout: float | None = None, attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> list[ContactList]:
        """All contact lists of the account."""
        return await self._list(self._ops.list, ContactList, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def get(
        self, id: ResourceId, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> ContactList:
        """The contact list ``id``."""
        return await self._get(self._ops.get, id, ContactList, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def create(
        self, contact_list: ContactListCreate, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> ContactList:
        """Create ``contact_list`` with its records; returns the created list."""
        return await self._create(self._ops.create, ("contact_list", contact_list),
                                  ContactListCreate, ContactList, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def update(
        self,
        id: ResourceId,
        records: Sequence[ContactUpdate],
        *,
        request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> ContactList:
        """Update ``records`` (each found by its ``uuid``) in the list ``id``; fields left
        ``UNSET`` are not sent. Returns the updated list."""
        path_id = check_id(id)
        if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
            raise InvalidInputError(
                f"records: expected a list of ContactUpdate, got {type(records).__name__}",
                field="records")
        if not records:
            raise InvalidInputError("records: expected at least one ContactUpdate",
                                    field="records")
        data = [encode(check_model(r, ContactUpdate, f"records[{i}]"))
                for i, r in enumerate(records)]
        body = {"contact": _list_id_in_body(path_id), "data": data}
        return await self._send(self._ops.update, path_id, body, ContactList,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))


def _list_id_in_body(path_id: int | str) -> int | str:
    """The list id as the body's ``contact`` (an integer in the document): an int, or a
    text of ASCII digits as its int; other text as given. Only ASCII digits: ``"²"`` or
    ``"٣"`` pass ``str.isdigit`` but are not the number the path names."""
    if isinstance(path_id, str) and path_id.isascii() and path_id.isdigit():
        number = int(path_id)
        if number > MAX_ID:
            raise refuse("id", "a list id of at most 2**63-1 (it goes into the body as "
                         "an integer)", path_id)
        return number
    return path_id
