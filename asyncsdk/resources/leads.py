"""``client.leads``: sales leads (list, get, create, update, delete).

An update replaces the lead: ``LeadInput`` has the same required fields for both.
Safety and errors: see ``CrudResource`` in ``_base``.
"""

from __future__ import annotations

from ..models.leads import Lead, LeadInput
from ._areas import Area
from ._base import CrudResource, ExtraHeaders, ExtraQuery, ResourceId, crud_operations, per_call


class Leads(CrudResource):
    """Sales leads (see ``CrudResource`` for timeouts and errors)."""

    __slots__ = ()
    _ops = crud_operations("leads", Area.CRM, "/mysite/api/v1/lead/")

    async def list(
        self, *, request_timeout: float | None = None, attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> list[Lead]:
        """All leads."""
        return await self._list(self._ops.list, Lead, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def get(
        self, id: ResourceId, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Lead:
        """The lead ``id``."""
        return await self._get(self._ops.get, id, Lead, per_call(
            request_timeout, attempt_timeout, extra_headers, extra_query))

    async def create(
        self, lead: LeadInput, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Lead:
        """Create ``lead``; returns the lead as the service answered it."""
        return await self._create(
            self._ops.create, ("lead", lead), LeadInput, Lead, per_call(
                request_timeout, attempt_timeout, extra_headers, extra_query))

    async def update(
        self, id: ResourceId, lead: LeadInput, *, request_timeout: float | None = None,
        attempt_timeout: float | None = None, extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> Lead:
        """Replace the lead ``id`` with ``lead`` (same required fields as create)."""
        return await self._update(
            self._ops.update, id, ("lead", lead), LeadInput, Lead,
            per_call(request_timeout, attempt_timeout, extra_headers, extra_query))
