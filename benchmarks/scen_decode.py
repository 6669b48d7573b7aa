"""Scenario 3: decoding the answer of ``contacts.list`` (contact lists holding N contact
records) into models, in-process from the same bytes (no server: this isolates decoding).

* ``json.loads`` -> dicts: the floor (no models at all).
* asyncsdk: ``json.loads`` (or orjson with the ``speedups`` extra) then the converter's
  ``decode_list(data, ContactList)``, what ``contacts.list()`` does with a small answer
  (each model built by its own constructor, through the converter's generated reader).
* asyncsdk, big-answer path: what ``contacts.list()`` does with an answer of
  ``OFFLOAD_DECODE_BYTES`` or more (this one: 8 MB), less the thread hop:
  ``big_json.read_json`` in slices, each run of records decoded as it is parsed
  (``listing.builders``), then ``decode_list`` (passing the models through).
* pydantic v2: ``TypeAdapter(list[ContactList]).validate_json`` of equivalent models
  (same fields and types, ``extra="allow"`` like asyncsdk's ``extra``), parsing included.

The targets (issue 39) are paired: pydantic and each asyncsdk contender alternate, and
the ratio is taken per repeat.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
from collections.abc import Callable
from typing import Any

from ._common import Clock, Paired, Section, Target, has_module, median, ratio, spread
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
    from asyncsdk._serde.converter import decode_list
    from asyncsdk.models.contacts import ContactList

    def decode(body: bytes) -> Any:
        return decode_list(loads(body), ContactList)

    return decode


def _big_path_decoder(fast: bool) -> Callable[[bytes], Any]:
    from asyncsdk._serde.big_json import FAST_LOADS, read_json
    from asyncsdk._serde.converter import decode_list
    from asyncsdk.models.contacts import ContactList

    try:
        from asyncsdk._serde.listing import builders
    except ImportError:  # the code before issue 39 (a before/after run): parsed, then decoded
        extra: dict[str, Any] = {}
    else:
        extra = {"build": builders(ContactList)}
    loads = FAST_LOADS if fast else None

    def decode(body: bytes) -> Any:
        return decode_list(read_json(body, loads=loads, **extra), ContactList)

    return decode


def _count(lists: Any) -> int:
    """Records in a decoded answer (checks every contender decoded everything)."""
    if lists and isinstance(lists[0], dict):
        return sum(len(g["data"]) for cl in lists for g in cl["emaillist"])
    return sum(len(g.data) for cl in lists for g in cl.emaillist)


JSON_SDK = "asyncsdk: json.loads + decode_list"
ORJSON_SDK = "asyncsdk + orjson: orjson.loads + decode_list"
BIG_SDK = "asyncsdk big-answer path (json): read_json, decoded as parsed"
BIG_ORJSON_SDK = "asyncsdk big-answer path (orjson): read_json, decoded as parsed"
DECODE = 0.70  # issue 39: at least this times pydantic v2, with json and with orjson


def contenders() -> tuple[list[tuple[str, Callable[[bytes], Any]]], list[str]]:
    found: list[tuple[str, Callable[[bytes], Any]]] = []
    notes: list[str] = []
    if has_module("pydantic"):
        found.append(("pydantic v2 validate_json (baseline)", _pydantic_decoder()))
    else:
        notes.append("pydantic skipped: not installed (extra `bench`); ratios are to "
                     "json.loads instead")
    found.append(("json.loads -> dicts (no models)", json.loads))
    found.append((JSON_SDK, _asyncsdk_decoder(json.loads)))
    found.append((BIG_SDK, _big_path_decoder(False)))
    if has_module("orjson"):
        import orjson

        found.append(("orjson.loads -> dicts (no models)", orjson.loads))
        found.append((ORJSON_SDK, _asyncsdk_decoder(orjson.loads)))
        found.append((BIG_ORJSON_SDK, _big_path_decoder(True)))
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
        for sdk in (JSON_SDK, ORJSON_SDK, BIG_SDK, BIG_ORJSON_SDK):
            if sdk in rates:
                section.pairs.append(Paired(
                    f"decode {records:,} contacts, {sdk}: records per CPU second",
                    "records/s",
                    rates[sdk], rates[base], "pydantic v2 `validate_json`", ">=", DECODE))
    else:
        section.targets.append(Target("asyncsdk >= 0.70x pydantic v2", None,
                                      "pydantic not installed"))
    for json_side, orjson_side in ((JSON_SDK, ORJSON_SDK), (BIG_SDK, BIG_ORJSON_SDK)):
        if orjson_side in rates:  # issue 39: orjson never slower than json
            section.pairs.append(Paired(
                f"decode {records:,} contacts: {orjson_side} vs the same with json",
                "records/s", rates[orjson_side], rates[json_side], json_side, ">=", 1.0))
    return section
