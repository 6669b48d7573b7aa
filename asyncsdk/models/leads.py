"""Models of leads: ``LeadInput`` (create and update) and ``Lead`` (as read).

Gaps of the document, decided here:

* The document shows no response body: ``Lead`` has the input fields plus ``id``, all
  optional (None when missing), unknown keys in ``extra``, unknown codes kept as int.
* Create and update take the same model with the same required fields (the document
  gives one table for both); an update therefore replaces the lead.
* ``status`` is a plain int (its meaning is not documented); ``country`` is a country
  code, 1 or 26 to 247.
"""

from __future__ import annotations

import attrs

from .._checks import CountryCode, Email
from ._base import UNSET, InputModel, ResponseModel, UnsetType
from .codes import Industry, LeadSource, Rating

__all__ = ["Lead", "LeadInput"]


@attrs.frozen(kw_only=True)
class LeadInput(InputModel):
    """A lead to create or update.

    Required: ``name``, ``email`` (a valid address), ``company``, ``industry``,
    ``source``, ``funnel`` (the name of an existing funnel), ``status`` and ``rating``.
    """

    name: str
    email: Email
    company: str
    industry: Industry
    source: LeadSource
    funnel: str
    status: int
    rating: Rating
    mobile: str | UnsetType | None = UNSET
    phone: str | UnsetType | None = UNSET
    title: str | UnsetType | None = UNSET
    fax: str | UnsetType | None = UNSET
    website: str | UnsetType | None = UNSET
    annual_revenue: int | UnsetType | None = UNSET
    number_of_employees: int | UnsetType | None = UNSET
    street: str | UnsetType | None = UNSET
    state: str | UnsetType | None = UNSET
    city: str | UnsetType | None = UNSET
    zipcode: str | UnsetType | None = UNSET
    messenger_id: str | UnsetType | None = UNSET
    microblog_id: str | UnsetType | None = UNSET
    professional_network_id: str | UnsetType | None = UNSET
    social_network_id: str | UnsetType | None = UNSET
    score: int | UnsetType | None = UNSET
    country: CountryCode | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class Lead(ResponseModel):
    """A lead as the service sends it (every field may be None)."""

    id: int | None = None
    name: str | None = None
    email: str | None = None
    company: str | None = None
    industry: Industry | None = None
    source: LeadSource | None = None
    funnel: str | None = None
    status: int | None = None
    rating: Rating | None = None
    mobile: str | None = None
    phone: str | None = None
    title: str | None = None
    fax: str | None = None
    website: str | None = None
    annual_revenue: int | None = None
    number_of_employees: int | None = None
    street: str | None = None
    state: str | None = None
    city: str | None = None
    zipcode: str | None = None
    messenger_id: str | None = None
    microblog_id: str | None = None
    professional_network_id: str | None = None
    social_network_id: str | None = None
    score: int | None = None
    country: int | None = None
