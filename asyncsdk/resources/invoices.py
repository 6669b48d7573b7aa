"""``client.invoices``: invoices and estimates (list, update, delete).

The document shows no create and no get-one operation, so there are none here. An
update is partial: only the fields set in ``InvoiceUpdate`` are sent; an ``id`` set in
it must be the path's (the request would otherwise name two invoices). Safety and
errors: see ``CrudResource`` in ``_base``.
"""

from __future__ import annotations

from .._checks import check_id
from .._errors import InvalidInputError
from ..models.invoices import Invoice, InvoiceUpdate
from ._areas import Area
from ._base import CrudResource, ExtraHeaders, ExtraQuery, ResourceId, crud_operations, per_call


class Invoices(CrudResource):
    """Invoices and estimates (see ``CrudResource`` for timeouts and errors)."""

    __slots__ = ()
    _ops = crud_operations("invoices", Area.INVOICING, "/mysite/api/v1/invoices/")

    async def list(
        self, *, request_timeout: float | None = None, attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> list[Invoice]:
        """All invoices and estimates."""
        return await self._list(self._ops.list, Invoice, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def update(
        self, id: ResourceId, invoice: InvoiceUpdate, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Invoice:
        """Change the invoice ``id``: only the fields set in ``invoice`` are sent
        (``invoice.id``, if set, must be ``id``)."""
        if isinstance(invoice, InvoiceUpdate):  # anything else: refused by ``_update``
            _same_invoice(check_id(id), invoice.id)
        return await self._update(
            self._ops.update, id, ("invoice", invoice), InvoiceUpdate, Invoice,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))


def _same_invoice(path_id: int | str, body_id: object) -> None:
    """Refuse a body ``id`` that names another invoice than the path: the service would
    be asked to change one invoice with a body saying it is another. Unset or None: the
    path alone names it; a path id in ASCII digits (``"0021"``) is its number."""
    if not isinstance(body_id, int) or body_id == path_id:
        return
    if isinstance(path_id, str) and path_id.isascii() and path_id.isdigit() \
            and int(path_id) == body_id:
        return
    raise InvalidInputError(
        f"id: expected the invoice's id in the path ({path_id!r}), or the id left unset, "
        f"got {body_id!r}", field="id")
