"""``client.invoices``: invoices and estimates (list, update, delete).

The document shows no create and no get-one operation, so there are none here. An
update is partial: only the fields set in ``InvoiceUpdate`` are sent. Safety and
errors: see ``CrudResource`` in ``_base``.
"""

from __future__ import annotations

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
        """Change the invoice ``id``: only the fields set in ``invoice`` are sent."""
        return await self._update(
            self._ops.update, id, ("invoice", invoice), InvoiceUpdate, Invoice,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))
