"""Models of products: ``ProductInput`` (create and update) and ``Product`` (as read).

Gaps of the document, decided here:

* ``selling_price`` is a ``Decimal`` (an int or numeric text is accepted) with at most
  two places, sent as text with two places (``"12.50"``).
* The unit goes out under the body key ``unit`` (the update table's ``Unit`` is not
  used).
* Create and update take the same model (one table for both).
* The document shows no response body: ``Product`` has the input fields plus ``id``, all
  optional, unknown keys in ``extra``, unknown codes kept as int.
"""

from __future__ import annotations

from decimal import Decimal

import attrs

from ._base import UNSET, InputModel, ResponseModel, UnsetType
from .codes import ProductType, Unit

__all__ = ["Product", "ProductInput"]


@attrs.frozen(kw_only=True)
class ProductInput(InputModel):
    """A product to create or update: ``name`` and ``selling_price`` are required."""

    name: str
    selling_price: Decimal
    product_type: ProductType | UnsetType | None = UNSET
    unit: Unit | UnsetType | None = UNSET
    sku: str | UnsetType | None = UNSET
    description: str | UnsetType | None = UNSET


@attrs.frozen(kw_only=True)
class Product(ResponseModel):
    """A product as the service sends it (every field may be None)."""

    id: int | None = None
    name: str | None = None
    selling_price: Decimal | None = None
    product_type: ProductType | None = None
    unit: Unit | None = None
    sku: str | None = None
    description: str | None = None
