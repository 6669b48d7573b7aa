"""``client.products``: products of the invoicing area (list, get, create, update,
delete); ``ProductInput`` serves create and update. Safety and errors: see
``CrudResource`` in ``_base``.
"""

from __future__ import annotations

from ..models.products import Product, ProductInput
from ._areas import Area
from ._base import CrudResource, ExtraHeaders, ExtraQuery, ResourceId, crud_operations, per_call


class Products(CrudResource):
    """Products (see ``CrudResource`` for timeouts and errors)."""

    __slots__ = ()
    _ops = crud_operations("products", Area.INVOICING, "/mysite/api/v1/products/")

    async def list(
        self, *, request_timeout: float | None = None, attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> list[Product]:
        """All products."""
        return await self._list(self._ops.list, Product, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def get(
        self, id: ResourceId, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Product:
        """The product ``id``."""
        return await self._get(self._ops.get, id, Product, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def create(
        self, product: ProductInput, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Product:
        """Create ``product``; returns the product as the service answered it."""
        return await self._create(
            self._ops.create, ("product", product), ProductInput, Product,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))

    async def update(
        self, id: ResourceId, product: ProductInput, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Product:
        """Replace the product ``id`` with ``product``."""
        return await self._update(
            self._ops.update, id, ("product", product), ProductInput, Product,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))
