"""A big listing decoded as it is parsed (``_serde.listing.builders`` handed to
``big_json.read_json``): the same models as ``decode_list(json.loads(body))``, each
record decoded as soon as its run is parsed (its parsed dict dies young), and a
listing that cannot be decoded read plain, so that the ordinary decoding names the
failure.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import watch_decoding_as_parsed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsdk._serde import listing
from asyncsdk._serde.big_json import NOT_READ, read_json
from asyncsdk._serde.converter import DecodeFailure, decode, decode_list
from asyncsdk.models.contacts import Contact, ContactGroup, ContactList
from asyncsdk.models.validation import CheckResult


def contact(i: int) -> dict[str, Any]:
    return {"uuid": f"u{i}", "email": f"user{i}@example.com", "mobile": 9000000000 + i,
            "age": i % 90, "isemail": True, "tags": ["a", i], "attributes": {"k": i},
            "dob": "2001-02-03" if i % 2 else None, "city": "Pune"}


def listing_of(lists: int, per_list: int) -> list[dict[str, Any]]:
    return [{"id": n, "name": f"list {n}", "emaillist": [
        {"contact": n, "data": [contact(n * per_list + i) for i in range(per_list)]}]}
        for n in range(lists)]


def test_the_places_of_a_contact_listing() -> None:
    assert set(listing.builders(ContactList)) == {
        "$[]", '$[]."emaillist"[]', '$[]."emaillist"[]."data"[]'}
    assert listing.builders(dict) == {}
    assert listing.builders(ContactList) is listing.builders(ContactList)  # found once


def test_a_listing_read_with_builders_is_the_decoded_listing() -> None:
    body = json.dumps(listing_of(4, 300)).encode()
    got = read_json(body, slice_chars=2_000, window=4_096,
                    build=listing.builders(ContactList))
    assert got == decode_list(json.loads(body), ContactList)
    assert all(type(c) is Contact for cl in got for g in cl.emaillist for c in g.data)


def test_records_are_decoded_as_their_runs_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 39): the whole listing was parsed first, then decoded, so
    50,000 parsed dicts lived beside their models (and were walked by every full
    collection). Now a record is decoded right after its run is parsed: when the k-th
    contact is built, not much more than k records' worth of text has been parsed."""
    body = json.dumps(listing_of(5, 400)).encode()
    record = len(body) / 2_000
    _, seen = watch_decoding_as_parsed(monkeypatch)
    got = read_json(body, slice_chars=4_000, build=listing.builders(ContactList))
    assert sum(len(g.data) for cl in got for g in cl.emaillist) == 2_000 == len(seen)
    assert all(at <= (k + 1) * record + 2 * 4_000 for k, at in enumerate(seen))


def test_a_listing_that_cannot_be_decoded_is_read_plain() -> None:
    """A record that is not a contact: the builder refuses it, the document is read
    again without builders, and the ordinary decoding names the failure."""
    data = listing_of(3, 50)
    data[2]["emaillist"][0]["data"][7]["mobile"] = "not a number"
    body = json.dumps(data).encode()
    got = read_json(body, slice_chars=500, build=listing.builders(ContactList))
    assert got == data
    with pytest.raises(DecodeFailure, match=r"\$\[2\]\.emaillist\[0\]\.data\[7\]\.mobile"):
        decode_list(got, ContactList)
    assert read_json(body[:-1], build=listing.builders(ContactList)) is NOT_READ


def test_a_member_named_like_a_path_is_not_decoded() -> None:
    """Places quote member names: an unknown member called ``emaillist"[]."data`` is
    not the place of the contacts, and stays in ``extra`` as the dicts it is."""
    odd = 'emaillist"[]."data'
    data = [{"id": 1, odd: [[contact(1)]], "emaillist[].data": [contact(2)],
             "emaillist": [{"contact": 1, "data": [contact(3)]}]}]
    body = json.dumps(data).encode()
    got = read_json(body, slice_chars=50, build=listing.builders(ContactList))
    assert got == decode_list(data, ContactList)
    assert got[0].extra == {odd: [[contact(1)]], "emaillist[].data": [contact(2)]}


def test_a_decoded_model_passes_through_the_converter_as_it_is() -> None:
    group = decode({"contact": 1, "data": [contact(1)]}, ContactGroup)
    assert decode(group, ContactGroup) is group
    assert decode({"emaillist": [group]}, ContactList).emaillist == [group]
    with pytest.raises(DecodeFailure, match="expected an object"):
        decode(group, CheckResult)  # a model of another class is no answer


records = st.fixed_dictionaries({
    "uuid": st.text(max_size=5), "mobile": st.integers(0, 10**12),
    "tags": st.lists(st.text(max_size=3), max_size=2),
    "attributes": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
}, optional={"unknown": st.text(max_size=4), "isemail": st.booleans()})
groups = st.fixed_dictionaries({"contact": st.integers(0, 99),
                                "data": st.lists(records, max_size=12)})
lists = st.lists(st.fixed_dictionaries({"id": st.integers(0, 99)},
                                       optional={"emaillist": st.lists(groups, max_size=3),
                                                 "other": st.lists(records, max_size=2)}),
                 max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=lists, window=st.integers(1, 200), slice_chars=st.integers(1, 300))
def test_any_listing_read_with_builders_is_the_decoded_listing(
    data: list[dict[str, Any]], window: int, slice_chars: int,
) -> None:
    body = json.dumps(data).encode()
    got = read_json(body, window=window, slice_chars=slice_chars,
                    build=listing.builders(ContactList))
    assert got == decode_list(data, ContactList)


# A small answer with what a slice's edge may cut: multi-byte UTF-8, escapes (a
# surrogate pair, an escaped quote and backslash), white space, a byte order mark, a
# big integer, unknown keys; and with a value no model takes.
_ODD_RECORD = ('{"uuid": "\\ud83d\\ude00é\\"\\\\", "mobile": "12", "dob": '
               '"2001-02-03T04:05:06.5+05:30", "id_x": 123456789012345678901234}')
ODD_BODIES = [
    f' \n[{{"id": 1, "name": "ü\\u00fc", "emaillist": [{{"contact": 1, "data": '
    f'[{_ODD_RECORD}, {{"isemail": "true"}}]}}], "new": {{"a": [1]}}}}, {{"id": "2"}}]\r\n',
    f'\ufeff[{{"id": 1, "emaillist": [{{"data": [{_ODD_RECORD}, {{"mobile": "--5"}}]}}]}}]',
]


@pytest.mark.parametrize("body", ODD_BODIES)
def test_a_listing_reads_as_json_loads_wherever_the_text_is_cut(body: str) -> None:
    """At every window size (so every byte of the body is once the edge), the listing
    is what ``json.loads`` and the ordinary decoding make of it: the same models, or
    the same failure."""
    raw = body.encode()

    def decoded(data: Any) -> Any:
        try:
            return decode_list(data, ContactList)
        except DecodeFailure as failure:
            return str(failure)

    expected = decoded(json.loads(raw))
    for window in range(1, len(raw) + 1):
        got = read_json(raw, window=window, slice_chars=window % 17 + 1,
                        build=listing.builders(ContactList))
        if got is NOT_READ:  # the caller parses it with json.loads (a BOM)
            got = json.loads(raw)
        assert decoded(got) == expected, window


def test_a_cut_listing_is_no_listing() -> None:
    """A body that ends early (a connection cut, a cap) is never a shorter listing:
    ``NOT_READ`` for every prefix, so the caller's ``json.loads`` says it is no JSON."""
    raw = ODD_BODIES[0].encode()
    end = len(raw.rstrip())
    for cut in range(end):
        for window in (1, 7, 64):
            got = read_json(raw[:cut], window=window, slice_chars=5,
                            build=listing.builders(ContactList))
            assert got is NOT_READ, (cut, window)
