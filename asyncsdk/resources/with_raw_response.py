"""The types of ``client.with_raw_response``, for type checkers only.

At run time ``client.with_raw_response`` is ``_raw.WithRawResponse``, a proxy that wraps
whatever method it is asked for. Type checkers instead see ``RawAreas`` below: each
area with its awaitable methods, taking exactly their parameters and returning
``RawResponse`` of their usual result (``raw.parsed`` is a ``list[ContactList]`` for
``contacts.list``), so a misspelt method or a wrong argument is an error, not ``Any``.
Nothing here runs: the module body is a ``TYPE_CHECKING`` block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["RawAreas"]

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

    from .._response import RawResponse
    from .contacts import Contacts
    from .customers import Customers
    from .invoices import Invoices
    from .leads import Leads
    from .mail import Mail
    from .products import Products
    from .validation.resource import Validation

    P = ParamSpec("P")
    R = TypeVar("R")

    class RawMethod(Generic[P, R]):
        """An area's method through ``with_raw_response``: its own parameters, its
        usual result in a ``RawResponse``."""

        def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[RawResponse[R]]:
            ...

    def _raw(method: Callable[Concatenate[Any, P], Awaitable[R]]) -> RawMethod[P, R]: ...

    class ContactsRaw:
        list = _raw(Contacts.list)
        get = _raw(Contacts.get)
        create = _raw(Contacts.create)
        update = _raw(Contacts.update)
        delete = _raw(Contacts.delete)

    class LeadsRaw:
        list = _raw(Leads.list)
        get = _raw(Leads.get)
        create = _raw(Leads.create)
        update = _raw(Leads.update)
        delete = _raw(Leads.delete)

    class CustomersRaw:
        list = _raw(Customers.list)
        get = _raw(Customers.get)
        create = _raw(Customers.create)
        update = _raw(Customers.update)
        delete = _raw(Customers.delete)

    class ProductsRaw:
        list = _raw(Products.list)
        get = _raw(Products.get)
        create = _raw(Products.create)
        update = _raw(Products.update)
        delete = _raw(Products.delete)

    class InvoicesRaw:
        list = _raw(Invoices.list)
        update = _raw(Invoices.update)
        delete = _raw(Invoices.delete)

    class ValidationRaw:
        check = _raw(Validation.check)
        create_job = _raw(Validation.create_job)

    class MailRaw:
        send = _raw(Mail.send)

    class RawAreas:
        """``client.with_raw_response``: the areas whose methods make one request."""

        contacts: ContactsRaw
        leads: LeadsRaw
        customers: CustomersRaw
        products: ProductsRaw
        invoices: InvoicesRaw
        validation: ValidationRaw
        mail: MailRaw
