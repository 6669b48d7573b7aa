"""Scenario 3: decoding the answer of ``contacts.list`` (contact lists holding N contact
records) into models, in-process from the same bytes (no server: this isolates decoding).

* ``json.loads`` -> dicts: the floor (no models at all).
* asyncsdk: ``json.loads`` (or orjson with the ``speedups`` extra) then
  ``Transport.decode_many(op, data, ContactList)`` - exactly what ``contacts.list()`` does
  after reading the body (the converter's cattrs-generated functions, each model built
  by its own constructor).
* pydantic v2: ``TypeAdapter(list[ContactList]).validate_json`` of equivalent models
  (same fields and types, ``extra="allow"`` like asyncsdk's ``extra``), parsing included.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
from collections.abc import Callable
from typing import Any

from ._common import API_KEY, Clock, Section, Target, has_module, median, ratio, spread
from ._data import contact_lists_body


def _pydantic_decoder() -> Callable[[bytes], Any]:
    from pydantic import BaseModel, ConfigDict, TypeAdapter

    class PContact(BaseModel):
        model_config = ConfigDict(extra="allow")
        uuid: str | None = None
        email: str | None = None
        customer_name: str | None = None
        mobile: int | None = None
        sex: str | None = None
        age: int | None = None
        dob: dt.date | None = None
        ip_address: str | None = None
        city: str | None = None
        country: str | None = None
        bounsestatus: int | None = None
        validation_status: int | None = None
        isemail: bool | None = None
        webpush_status: bool | None = None
        marriage_date: dt.date | None = None
        sms: bool | None = None
        messaging_app: bool | None = None
        dndphone: bool | None = None
        device_id: str | None = None
        customer_type: int | None = None
        tags: list[Any] | None = None
        attributes: dict[str, Any] | None = None
        status: str | None = None
        http_referer: str | None = None
        browser_name: str | None = None
        os_name: str | None = None
        device_model: str | None = None
        device_brand: str | None = None
        device_type: str | None = None
        user_agent: str | None = None
        pin_code: str | None = None
        source_ip: str | None = None

    class PContactGroup(BaseModel):
        model_config = ConfigDict(extra="allow")
        contact: int | None = None
        data: list[PContact] | None = None

    class PContactList(BaseModel):
        model_config = ConfigDict(extra="allow")
        id: int | None = None
        name: str | None = None
        is_email: bool | None = None
        is_push: bool | None = None
        is_sms: bool | None = None
        app_id: str | None = None
        emaillist: list[PContactGroup] | None = None

    adapter = TypeAdapter(list[PContactList])
    return adapter.validate_json


def _asyncsdk_decoder(loads: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    from asyncsdk._core.answer import Interpreter
    from asyncsdk._core.credentials import Credentials
    from asyncsdk._core.operation import Operation
    from asyncsdk.models.contacts import ContactList
    from asyncsdk.resources._areas import Area

    transport = Interpreter(Credentials(api_key=API_KEY, username=None))  # the client's
    op = Operation("contacts.list", "GET", Area.CONTACTS, "/api/v1/contact/", True)

    def decode(body: bytes) -> Any:
        return transport.decode_many(op, loads(body), ContactList)

    return decode


def _count(lists: Any) -> int:
    """Records in a decoded answer (checks every contender decoded everything)."""
    if lists and isinstance(lists[0], dict):
        return sum(len(g["data"]) for cl in lists for g in cl["emaillist"])
    return sum(len(g.data) for cl in lists for g in cl.emaillist)


def contenders() -> tuple[list[tuple[str, Callable[[bytes], Any]]], list[str]]:
    found: list[tuple[str, Callable[[bytes], Any]]] = []
    notes: list[str] = []
    if has_module("pydantic"):
        found.append(("pydantic v2 validate_json (baseline)", _pydantic_decoder()))
    else:
        notes.append("pydantic skipped: not installed (extra `bench`); ratios are to "
                     "json.loads instead")
    found.append(("json.loads -> dicts (no models)", json.loads))
    found.append(("asyncsdk: json.loads + decode_many", _asyncsdk_decoder(json.loads)))
    if has_module("orjson"):
        import orjson

        found.append(("orjson.loads -> dicts (no models)", orjson.loads))
        found.append(("asyncsdk + orjson: orjson.loads + decode_many",
                      _asyncsdk_decoder(orjson.loads)))
    else:
        notes.append("orjson rows skipped: orjson not installed (extra `speedups`)")
    return found, notes


def run(*, records: int, repeats: int) -> Section:
    body = contact_lists_body(records)
    section = Section(
        "decode", "Scenario 3 - contacts.list: decoding contact records into models",
        f"{records:,} contact records ({len(body) / 1e6:.1f} MB of JSON, lists of 1,000), "
        f"decoded in-process from the same bytes, {repeats} runs per contender, "
        "alternated; parsing included in every row. Records per second of process CPU "
        "time (single-threaded, so ≈ wall time on an idle machine, and robust to other "
        "load); higher is better.",
        ["contender", "records/s median", "min-max", "x baseline", "ms per 10k records"])
    found, section.notes = contenders()
    rates: dict[str, list[float]] = {name: [] for name, _ in found}
    for name, decode in found:  # warm-up (builds the decoders) and a correctness check
        got = _count(decode(body))
        if got != records:
            raise RuntimeError(f"{name} decoded {got} records, not {records}")
    for _ in range(repeats):
        for name, decode in found:
            gc.collect()
            with Clock() as clock:
                decode(body)
            rates[name].append(records / clock.cpu)
    base = found[0][0]
    for name, _ in found:
        m = median(rates[name])
        section.rows.append([name, f"{m:,.0f}", spread(rates[name]),
                             f"{ratio(m, median(rates[base])):.2f}",
                             f"{10_000 / m * 1000:.1f}"])
    if base.startswith("pydantic"):
        # issue 12 item 4: >= 0.80x with orjson; std json keeps the older 0.70x floor.
        for sdk, floor in (("asyncsdk: json.loads + decode_many", 0.70),
                           ("asyncsdk + orjson: orjson.loads + decode_many", 0.80)):
            if sdk in rates:
                r = ratio(median(rates[sdk]), median(rates[base]))
                section.targets.append(Target(
                    f"{sdk.split(':')[0]} >= {floor:.2f}x pydantic v2", r >= floor,
                    f"{r:.2f}x"))
    else:
        section.targets.append(Target("asyncsdk >= 0.70x pydantic v2", None,
                                      "pydantic not installed"))
    return section
