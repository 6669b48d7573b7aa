"""``client.customers``: customers of the invoicing area (list, get, create, update,
delete). An update is partial: only the fields set in ``CustomerUpdate`` are sent.
Safety and errors: see ``CrudResource`` in ``_base``.
"""

from __future__ import annotations

from ..models.customers import Customer, CustomerCreate, CustomerUpdate
from ._areas import Area
from ._base import CrudResource, ExtraHeaders, ExtraQuery, ResourceId, crud_operations, per_call


class Customers(CrudResource):
    """Customers (see ``CrudResource`` for timeouts and errors)."""

    __slots__ = ()
    _ops = crud_operations("customers", Area.INVOICING, "/mysite/api/v1/customers/")

    async def list(
        self, *, request_timeout: float | None = None, attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> list[Customer]:
        """All customers."""
        return await self._list(self._ops.list, Customer, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def get(
        self, id: ResourceId, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Customer:
        """The customer ``id``."""
        return await self._get(self._ops.get, id, Customer, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def create(
        self, customer: CustomerCreate, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Customer:
        """Create ``customer``; returns the customer as the service answered it."""
        return await self._create(
            self._ops.create, ("customer", customer), CustomerCreate, Customer,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))

    async def update(
        self, id: ResourceId, customer: CustomerUpdate, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Customer:
        """Change the customer ``id``: only the fields set in ``customer`` are sent."""
        return await self._update(
            self._ops.update, id, ("customer", customer), CustomerUpdate, Customer,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))
