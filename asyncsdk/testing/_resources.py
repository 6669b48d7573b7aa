"""The resource areas: contact lists, leads, customers, products and invoices.

Status codes (the document shows none): list and get 200, create 201 with the created
object, update 200 with the whole updated object, delete 204 with an empty body.
Failures answer JSON: 401 ``{"detail": ...}`` for a missing or unknown ``api_key``,
404 ``{"detail": "Not found."}`` for an unknown id, 400 ``{"field": [messages]}`` for
bad input, 415 when a body is not sent as ``application/json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from . import _texts
from ._fields import Errors, FieldSpec, check_fields
from ._state import STATE_KEY, SandboxState

__all__ = ["CONTACT_RECORD_DEFAULTS", "ROUTES", "Reject", "new_contact_record"]


class Reject(Exception):
    """Raised by a handler to answer ``response`` at once."""

    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


def _fail(body: Any, status: int) -> Reject:
    return Reject(web.json_response(body, status=status))


# -- field tables (from the interface document) ---------------------------------------
INDUSTRY_CODES = frozenset(set(range(2, 65)) - {61})
SOURCE_CODES = frozenset(range(2, 20))
RATING_CODES = frozenset(range(2, 7))

_S = FieldSpec
_REQUIRED_STR = _S("str", required=True)

CONTACT_LIST_CREATE: dict[str, FieldSpec] = {
    "name": _REQUIRED_STR,
    "is_email": _S("bool", required=True),
    "is_push": _S("bool"),
    "is_sms": _S("bool"),
    "app_id": _S("str"),
    "emaillist": _S("list", required=True),
}

_RECORD_COMMON: dict[str, FieldSpec] = {
    "email": _S("email", required=True),
    "mobile": _S("int", required=True),
    "customer_name": _S(),
    "sex": _S(),
    "age": _S("int"),
    "ip_address": _S(),
    "city": _S(),
    "country": _S(),
    "isemail": _S("bool"),
    "webpush_status": _S("bool"),
    "sms": _S("bool"),
    "messaging_app": _S("bool"),
    "device_id": _S(),
    "customer_type": _S("int", choices=frozenset({0, 1})),
    "status": _S(),
    "tags": _S("list"),
    "attributes": _S("dict"),
    "pin_code": _S(),
}
CONTACT_RECORD_CREATE: dict[str, FieldSpec] = {
    **_RECORD_COMMON,
    "dob": _S("date_dmy"),
    "marriage_date": _S("date_dmy"),
}
CONTACT_RECORD_UPDATE: dict[str, FieldSpec] = {
    "uuid": _REQUIRED_STR,
    **_RECORD_COMMON,
    "dob": _S("datetime_iso"),
    "marriage_date": _S("datetime_iso"),
    "bounsestatus": _S("int"),
    "validation_status": _S("int"),
    "dndphone": _S("bool"),
}

CONTACT_RECORD_DEFAULTS: dict[str, Any] = {
    "email": "",
    "customer_name": "",
    "mobile": 0,
    "sex": "",
    "age": None,
    "dob": None,
    "ip_address": None,
    "city": "",
    "country": "",
    "bounsestatus": 0,
    "validation_status": 0,
    "isemail": True,
    "webpush_status": False,
    "marriage_date": None,
    "sms": False,
    "messaging_app": False,
    "dndphone": False,
    "device_id": "",
    "customer_type": 0,
    "tags": [],
    "attributes": {},
    "status": "",
    "http_referer": "",
    "browser_name": "",
    "os_name": "",
    "device_model": "",
    "device_brand": "",
    "device_type": "",
    "user_agent": "",
    "pin_code": "",
    "source_ip": "",
}

LEAD: dict[str, FieldSpec] = {
    "name": _REQUIRED_STR,
    "email": _S("email", required=True),
    "mobile": _S(),
    "phone": _S(),
    "company": _REQUIRED_STR,
    "title": _S(),
    "fax": _S(),
    "website": _S(),
    "annual_revenue": _S("int"),
    "industry": _S("int", required=True, choices=INDUSTRY_CODES),
    "source": _S("int", required=True, choices=SOURCE_CODES),
    "funnel": _REQUIRED_STR,
    "status": _S("int", required=True),
    "number_of_employees": _S("int"),
    "rating": _S("int", required=True, choices=RATING_CODES),
    "street": _S(),
    "state": _S(),
    "city": _S(),
    "zipcode": _S(),
    "messenger_id": _S(),
    "microblog_id": _S(),
    "professional_network_id": _S(),
    "social_network_id": _S(),
    "score": _S("int"),
    "country": _S("country"),
}

CUSTOMER: dict[str, FieldSpec] = {
    "customer_type": _S("int", required=True, choices=frozenset({1, 2})),
    "first_name": _REQUIRED_STR,
    "last_name": _S(),
    "crn_number": _S(),
    "company_name": _S(),
    "email": _S("email", required=True),
    "phone": _S(),
    "website": _S(),
    "billing_state": _S(),
    "billing_city": _S(),
    "billing_address": _S(),
    "billing_zipcode": _S("zipcode"),
    "currency": _S("int", choices=frozenset(range(6))),
    "payment_terms": _S("int", choices=frozenset(range(6))),
    "enable_portal": _S("bool"),
    "portal_language": _S("int", choices=frozenset({0})),
    "shipping_state": _S(),
    "shipping_city": _S(),
    "shipping_address": _S(),
    "shipping_zipcode": _S("zipcode"),
    "billing_country": _S("country"),
    "shipping_country": _S("country"),
}
# On update only ``email`` is required (the document's rule); everything else is partial.
CUSTOMER_UPDATE: dict[str, FieldSpec] = {
    name: (rule if name == "email" else FieldSpec(rule.kind, False, rule.choices))
    for name, rule in CUSTOMER.items()
}

PRODUCT: dict[str, FieldSpec] = {
    "product_type": _S("int", choices=frozenset({0, 1})),
    "name": _REQUIRED_STR,
    "unit": _S("int", choices=frozenset(range(7))),
    "selling_price": _S("decimal", required=True),
    "sku": _S(),
    "description": _S(),
}

INVOICE_UPDATE: dict[str, FieldSpec] = {
    "productinvoices": _S("list"),
    "invoice_number": _S(),
    "order_number": _S(),
    "invoice_date": _S("date_iso"),
    "terms": _S("int"),
    "due_date": _S("date_iso"),
    "subject": _S(),
    "status": _S("int"),
    "invoice_type": _S("int"),
    "is_recurring_invoices": _S("bool"),
    "customer": _S("int"),
}
INVOICE_LINE: dict[str, FieldSpec] = {
    "quantity": _S("decimal"),
    "rate": _S("decimal"),
    "discount": _S("decimal"),
    "discount_unit": _S("int"),
    "products": _S("int"),
}
INVOICE_DEFAULTS: dict[str, Any] = {
    "productinvoices": [],
    "invoice_number": "",
    "order_number": "",
    "invoice_date": None,
    "terms": 0,
    "due_date": None,
    "subject": "",
    "status": 0,
    "invoice_type": 0,
    "is_recurring_invoices": False,
    "customer": None,
}


# -- helpers ----------------------------------------------------------------------------
def _state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


def _authenticate(request: web.Request) -> None:
    if _state(request).account_by_key(request.query.get("api_key")) is None:
        raise _fail({"detail": _texts.UNAUTHORIZED_DETAIL}, 401)


def _object_id(request: web.Request, store: Mapping[int, Any]) -> int:
    raw = request.match_info["id"]
    # ASCII digits only: "²" is a digit to str.isdigit but not to int().
    if not (raw.isascii() and raw.isdigit()) or int(raw) not in store:
        raise _fail({"detail": _texts.NOT_FOUND_DETAIL}, 404)
    return int(raw)


async def _json_body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        detail = f'Unsupported media type "{request.content_type}" in request.'
        raise _fail({"detail": detail}, 415)
    try:
        body = json.loads(await request.read(), parse_constant=_no_constant)
    except ValueError as exc:
        raise _fail({"detail": f"JSON parse error - {exc}"}, 400) from None
    if not isinstance(body, dict):
        kind = type(body).__name__
        msg = f"Invalid data. Expected a dictionary, but got {kind}."
        raise _fail({"non_field_errors": [msg]}, 400)
    return body


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON: refused as Django REST framework refuses them
    (stored, they made every later answer that held them invalid JSON)."""
    raise ValueError(f"Out of range float values are not JSON compliant: {name}")


def _raise_if(errors: Errors) -> None:
    if errors:
        raise _fail(errors, 400)


def new_contact_record(state: SandboxState, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A stored contact record: a fresh uuid, the defaults, then ``fields``."""
    return {"uuid": state.next_uuid(), **CONTACT_RECORD_DEFAULTS, **fields}


def contact_list_view(list_id: int, stored: Mapping[str, Any]) -> dict[str, Any]:
    """The wire shape of a contact list (records nested under ``emaillist``)."""
    return {
        "id": list_id,
        "name": stored["name"],
        "is_email": stored["is_email"],
        "is_push": stored["is_push"],
        "is_sms": stored["is_sms"],
        "app_id": stored["app_id"],
        "emaillist": [{"contact": list_id, "data": stored["records"]}],
    }


def _check_records(
    items: list[Any], spec: Mapping[str, FieldSpec]
) -> tuple[list[dict[str, Any]], Errors]:
    cleaned: list[dict[str, Any]] = []
    nested: list[Errors] = []
    for item in items:
        if not isinstance(item, dict):
            nested.append({"non_field_errors": ["Invalid data. Expected a dictionary."]})
            cleaned.append({})
            continue
        clean, errors = check_fields(item, spec)
        cleaned.append(clean)
        nested.append(errors)
    return cleaned, ({"records": nested} if any(nested) else {})


# -- contact lists ----------------------------------------------------------------------
async def contacts_list(request: web.Request) -> web.Response:
    _authenticate(request)
    store = _state(request).contact_lists
    return web.json_response([contact_list_view(i, v) for i, v in sorted(store.items())])


async def contacts_get(request: web.Request) -> web.Response:
    _authenticate(request)
    store = _state(request).contact_lists
    list_id = _object_id(request, store)
    return web.json_response(contact_list_view(list_id, store[list_id]))


async def contacts_create(request: web.Request) -> web.Response:
    _authenticate(request)
    state = _state(request)
    body = await _json_body(request)
    clean, errors = check_fields(body, CONTACT_LIST_CREATE)
    records: list[dict[str, Any]] = []
    if "emaillist" in clean and clean["emaillist"] is not None:
        records, nested = _check_records(clean["emaillist"], CONTACT_RECORD_CREATE)
        if nested:
            errors["emaillist"] = nested["records"]
    _raise_if(errors)
    list_id = state.next_id("contact_list")
    state.contact_lists[list_id] = {
        "name": clean["name"],
        "is_email": clean["is_email"],
        "is_push": clean.get("is_push") or False,
        "is_sms": clean.get("is_sms") or False,
        "app_id": clean.get("app_id"),
        "records": [new_contact_record(state, r) for r in records],
    }
    return web.json_response(contact_list_view(list_id, state.contact_lists[list_id]), status=201)


async def contacts_update(request: web.Request) -> web.Response:
    _authenticate(request)
    state = _state(request)
    list_id = _object_id(request, state.contact_lists)
    body = await _json_body(request)
    _, errors = check_fields(body, {"contact": _S("int", True), "data": _S("list", True)})
    _raise_if(errors)
    if body["contact"] != list_id:
        _raise_if({"contact": [f"Does not match the list id in the path ({list_id})."]})
    updates, nested = _check_records(body["data"], CONTACT_RECORD_UPDATE)
    if nested:
        _raise_if({"data": nested["records"]})
    stored = state.contact_lists[list_id]
    by_uuid = {r["uuid"]: r for r in stored["records"]}
    unknown = [u["uuid"] for u in updates if u["uuid"] not in by_uuid]
    if unknown:  # checked before any change, so a bad request changes nothing
        detail = f"No contact record with uuid {unknown[0]!r} in list {list_id}."
        raise _fail({"detail": detail, "data": [{"uuid": [detail]}]}, 400)
    for update in updates:
        by_uuid[update["uuid"]].update(update)
    return web.json_response(contact_list_view(list_id, stored))


async def contacts_delete(request: web.Request) -> web.Response:
    _authenticate(request)
    store = _state(request).contact_lists
    del store[_object_id(request, store)]
    return web.Response(status=204)


# -- leads, customers, products, invoices: one generic shape -------------------------------
@dataclass(frozen=True)
class _Area:
    name: str
    store: Callable[[SandboxState], dict[int, dict[str, Any]]]
    create: Mapping[str, FieldSpec] | None
    update: Mapping[str, FieldSpec]
    partial_update: bool
    """Update merges into the stored object (the update spec says what is required)."""
    view: Callable[[int, Mapping[str, Any]], dict[str, Any]]

    async def list(self, request: web.Request) -> web.Response:
        _authenticate(request)
        store = self.store(_state(request))
        return web.json_response([self.view(i, v) for i, v in sorted(store.items())])

    async def get(self, request: web.Request) -> web.Response:
        _authenticate(request)
        store = self.store(_state(request))
        obj_id = _object_id(request, store)
        return web.json_response(self.view(obj_id, store[obj_id]))

    async def post(self, request: web.Request) -> web.Response:
        _authenticate(request)
        state = _state(request)
        assert self.create is not None
        clean, errors = check_fields(await _json_body(request), self.create)
        _raise_if(errors)
        obj_id = state.next_id(self.name)
        self.store(state)[obj_id] = clean
        return web.json_response(self.view(obj_id, clean), status=201)

    async def put(self, request: web.Request) -> web.Response:
        _authenticate(request)
        store = self.store(_state(request))
        obj_id = _object_id(request, store)
        body = await _json_body(request)
        clean, errors = check_fields(body, self.update)
        if self.name == "invoice" and isinstance(clean.get("productinvoices"), list):
            lines, nested = _check_records(clean["productinvoices"], INVOICE_LINE)
            if nested:
                errors["productinvoices"] = nested["records"]
            clean["productinvoices"] = lines
        _raise_if(errors)
        if self.partial_update:
            store[obj_id].update(clean)
        else:
            store[obj_id] = clean
        return web.json_response(self.view(obj_id, store[obj_id]))

    async def delete(self, request: web.Request) -> web.Response:
        _authenticate(request)
        store = self.store(_state(request))
        del store[_object_id(request, store)]
        return web.Response(status=204)


def _view_with(spec: Mapping[str, FieldSpec]) -> Callable[[int, Mapping[str, Any]], dict[str, Any]]:
    """Every documented field (None when never set), then anything seeded besides."""

    def view(obj_id: int, stored: Mapping[str, Any]) -> dict[str, Any]:
        return {"id": obj_id, **dict.fromkeys(spec), **stored}

    return view


def _invoice_view(obj_id: int, stored: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": obj_id, **INVOICE_DEFAULTS, **stored}


AREAS: dict[str, _Area] = {
    "/mysite/api/v1/lead/": _Area("lead", lambda s: s.leads, LEAD, LEAD, False, _view_with(LEAD)),
    "/mysite/api/v1/customers/": _Area(
        "customer", lambda s: s.customers, CUSTOMER, CUSTOMER_UPDATE, True, _view_with(CUSTOMER)
    ),
    "/mysite/api/v1/products/": _Area(
        "product", lambda s: s.products, PRODUCT, PRODUCT, False, _view_with(PRODUCT)
    ),
    "/mysite/api/v1/invoices/": _Area(
        "invoice", lambda s: s.invoices, None, INVOICE_UPDATE, True, _invoice_view
    ),
}


def _routes() -> list[web.RouteDef]:
    contact = "/api/v1/contact/"
    routes = [
        web.get(contact, contacts_list),
        web.post(contact, contacts_create),
        web.get(contact + "{id}/", contacts_get),
        web.put(contact + "{id}/", contacts_update),
        web.delete(contact + "{id}/", contacts_delete),
    ]
    for prefix, area in AREAS.items():
        routes += [web.get(prefix, area.list), web.put(prefix + "{id}/", area.put),
                   web.delete(prefix + "{id}/", area.delete)]  # fmt: skip
        if area.create is not None:  # invoices: the interface has no create and no get
            routes += [web.post(prefix, area.post), web.get(prefix + "{id}/", area.get)]
    return routes


ROUTES = _routes()
"""Every resource route (contacts, leads, customers, products, invoices)."""
