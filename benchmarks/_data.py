"""The data the benchmark server sends and scenario 3 decodes: contact records with the
fields of the interface document (``Contact record (response)``)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

#: Records per contact list in the ``/api/v1/contact/`` answer.
RECORDS_PER_LIST = 1_000


def contact_record(i: int) -> dict[str, Any]:
    """One record, deterministic in ``i``; every field of the document, some null."""
    return {
        "uuid": f"{i:08x}-1b2c-4d3e-8f40-{i:012x}",
        "email": f"person{i}@example.com",
        "customer_name": f"Person {i}",
        "mobile": 9_100_000_000 + i,
        "sex": "F" if i % 2 else "M",
        "age": None if i % 7 == 0 else 18 + i % 60,
        "dob": None if i % 5 == 0 else f"19{60 + i % 40}-{1 + i % 12:02d}-{1 + i % 28:02d}",
        "ip_address": None if i % 3 == 0 else f"10.0.{i % 256}.{(i // 256) % 256}",
        "city": "Pune",
        "country": "India",
        "bounsestatus": i % 2,
        "validation_status": i % 4,
        "isemail": True,
        "webpush_status": bool(i % 2),
        "marriage_date": None if i % 4 else "2015-06-20",
        "sms": False,
        "messaging_app": bool(i % 3),
        "dndphone": False,
        "device_id": f"tok-{i:010d}",
        "customer_type": i % 2,
        "tags": ["vip"] if i % 10 == 0 else [],
        "attributes": {"plan": "gold"} if i % 10 == 0 else {},
        "status": "active",
        "http_referer": "https://example.com/landing",
        "browser_name": "Firefox",
        "os_name": "Linux",
        "device_model": "",
        "device_brand": "",
        "device_type": "desktop",
        "user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "pin_code": f"{411000 + i % 100}",
        "source_ip": "203.0.113.7",
    }


def contact_lists(records: int) -> list[dict[str, Any]]:
    """The answer of ``GET /api/v1/contact/``: lists of ``RECORDS_PER_LIST`` records each
    (``records`` in all)."""
    lists = []
    start = 0
    list_id = 1
    while start < records or not lists:
        count = min(RECORDS_PER_LIST, records - start)
        lists.append({
            "id": list_id,
            "name": f"list {list_id}",
            "is_email": True,
            "is_push": False,
            "is_sms": True,
            "app_id": None,
            "emaillist": [{"contact": list_id,
                           "data": [contact_record(i) for i in range(start, start + count)]}],
        })
        start += count
        list_id += 1
    return lists


def contact_lists_body(records: int) -> bytes:
    return json.dumps(contact_lists(records)).encode()


def check_body(email: str) -> bytes:
    """The answer of a successful single check."""
    return b'{"email": %s, "status": "success", "result": "Valid", "role": false}' % (
        json.dumps(email).encode())


#: The header of a job's result (the interface document's ``emaillist.csv``).
RESULT_HEADER = ("Email", "Name", "Status", "Role Based Emails")
VERDICTS = ("Valid", "CatchAll", "Unknown", "Disposable", "Bounce")


def result_csv(rows: int) -> bytes:
    """A job's result CSV of ``rows`` rows (CRLF; every tenth name quoted, with a comma)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(RESULT_HEADER)
    writer.writerows(
        (f"user{i}@example{i % 97}.com", f"Doe, J{i}" if i % 10 == 0 else f"Person {i}",
         VERDICTS[i % 5], "True" if i % 7 == 0 else "False")
        for i in range(rows))
    return out.getvalue().encode()


def result_json(csv_body: bytes) -> bytes:
    """The JSON wire shape of a result: ``{"status": "success", "result": "<csv>"}``."""
    return json.dumps({"status": "success", "result": csv_body.decode()}).encode()
