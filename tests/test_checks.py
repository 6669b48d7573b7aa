"""The argument checks of ``_checks`` (one function per rule) and code-list inputs.

Issue 11: ids and job ids that are huge, in other scripts' digits or thousands of digits
long are ``InvalidInputError`` naming the field, never a bare ``ValueError``.
Issue 14: a member of another code list (``industry=Rating.ACTIVE``) is refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from aioresponses import aioresponses
from hypothesis import given
from hypothesis import strategies as st

import asyncsdk
from asyncsdk._checks import (
    MAX_ID,
    check_count,
    check_http_url,
    check_id,
    check_job_id,
    check_number,
    check_seconds,
)

HOSTILE_IDS: list[Any] = [10**5000, -(10**5000), "²", "9" * 5000, "١٢", "1" * 20, 2**63,
                          True, 1.0, None, b"1"]


@pytest.mark.parametrize("value", HOSTILE_IDS, ids=lambda v: type(v).__name__)
def test_hostile_job_ids_are_invalid_input(value: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        check_job_id(value)
    assert info.value.field == "job_id" and len(str(info.value)) < 300


@pytest.mark.parametrize("value", [10**5000, -(10**5000), 2**63, "x" * 5000, "a/b", "",
                                   "a\nb", True, None, 1.5],
                         ids=lambda v: type(v).__name__)
def test_hostile_ids_are_invalid_input(value: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        check_id(value)
    assert info.value.field == "id" and len(str(info.value)) < 300


@given(st.one_of(st.integers(), st.text(max_size=30), st.floats(), st.none(), st.booleans(),
                 st.integers().map(str)))
def test_job_id_check_gives_an_id_or_invalid_input(value: Any) -> None:
    try:
        got = check_job_id(value)
    except asyncsdk.InvalidInputError:
        return
    assert type(got) is int and 0 <= got <= MAX_ID
    assert got == (int(value.strip()) if isinstance(value, str) else value)


async def test_calls_with_hostile_ids_send_nothing(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    for value in (10**5000, "²", "9" * 5000):
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            await client.validation.job(value).status()  # type: ignore[arg-type]
        assert info.value.field == "job_id"
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            client.validation.job_from_dict({"job_id": value})
        assert info.value.field == "job_id"
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        await client.leads.get(10**5000)
    assert info.value.field == "id"
    assert not mocked.requests


def test_numbers_counts_and_urls_have_one_rule_each() -> None:
    assert check_seconds(30, "t") == 30 and type(check_seconds(30, "t")) is int
    for bad in (0, -1, float("nan"), float("inf"), True, "30"):
        with pytest.raises(asyncsdk.InvalidInputError, match=r"^t: expected a positive"):
            check_seconds(bad, "t")
    assert check_number(1.0, "f", minimum=1.0, strict=False) == 1.0
    with pytest.raises(asyncsdk.InvalidInputError, match=r"f: expected a number >= 1"):
        check_number(0.5, "f", minimum=1.0, strict=False)
    assert check_count(0, "n", 0) == 0
    with pytest.raises(asyncsdk.InvalidInputError, match="n: expected an integer >= 1"):
        check_count(0, "n")
    with pytest.raises(asyncsdk.ConfigurationError):
        check_http_url("ftp://x", "base_url", error=asyncsdk.ConfigurationError)
    assert check_http_url("https://h/x", "u") == "https://h/x"


def _lead(**changes: Any) -> asyncsdk.LeadInput:
    fields: dict[str, Any] = dict(
        name="Ann", email="ann@example.com", company="Acme", industry=asyncsdk.Industry.BANKS,
        source=asyncsdk.LeadSource.CHAT, funnel="Default", status=1,
        rating=asyncsdk.Rating.ACTIVE)
    return asyncsdk.LeadInput(**{**fields, **changes})


@pytest.mark.parametrize(("field", "value"), [
    ("industry", asyncsdk.Rating.ACTIVE), ("industry", asyncsdk.Currency.EUR),
    ("source", asyncsdk.Industry.BANKS), ("rating", asyncsdk.Unit.KG),
    ("industry", asyncsdk.Industry(61)), ("rating", asyncsdk.Rating(99)), ("industry", 61)])
def test_another_lists_member_or_an_unknown_code_is_refused(field: str, value: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        _lead(**{field: value})
    assert info.value.field == field and "code" in str(info.value)


def test_a_refused_code_is_shown_as_it_was_written() -> None:
    """An unknown code read by ``from_dict`` (an open enum's made-up member) showed as
    ``got <Industry.61: 61>``; another list's member shows its name and its value."""
    refused = [(lambda: _lead(industry=asyncsdk.Industry(61)), "got 61"),
               (lambda: _lead(industry=61), "got 61"),
               (lambda: asyncsdk.LeadInput.from_dict({**_lead().to_dict(), "industry": 61}),
                "got 61"),
               (lambda: _lead(industry=asyncsdk.Rating.ACTIVE),
                f"got Rating.ACTIVE ({int(asyncsdk.Rating.ACTIVE)})")]
    for build, shown in refused:
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            build()
        assert str(info.value).endswith(shown) and "<" not in str(info.value)


@pytest.mark.parametrize("value", [asyncsdk.CustomerType.BUSINESS, asyncsdk.Currency.AUD])
def test_a_code_lists_member_is_refused_in_a_field_of_codes_of_its_own(value: Any) -> None:
    """A contact's ``customer_type`` is 0 or 1, its own codes, "not ``CustomerType``"
    (README): before, ``CustomerType.BUSINESS`` (1) and ``Currency.AUD`` (0) were taken
    and sent as those numbers, under the contact's meaning of them."""
    for build in (lambda: asyncsdk.ContactInput(email="a@example.com", mobile=1,
                                                customer_type=value),
                  lambda: asyncsdk.ContactUpdate(uuid="u", email="a@example.com", mobile=1,
                                                 customer_type=value)):
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            build()
        assert info.value.field == "customer_type" and "one of 0, 1" in str(info.value)
    assert asyncsdk.ContactInput(email="a@example.com", mobile=1,
                                 customer_type=int(value)).customer_type == int(value)

def test_a_plain_int_of_a_code_becomes_its_member() -> None:
    lead = _lead(industry=6)
    assert lead.industry is asyncsdk.Industry.BANKS


def test_unknown_values_are_readable_enum_values() -> None:
    unknown = asyncsdk.Verdict("Risky")
    assert unknown == "Risky" and str(unknown) == "Risky" and unknown not in list(asyncsdk.Verdict)
    assert isinstance(unknown, asyncsdk.Verdict)
    assert asyncsdk.Verdict(" valid ") is asyncsdk.Verdict.VALID
    code = asyncsdk.Industry(99)
    assert code == 99 and int(code) == 99 and isinstance(code, asyncsdk.Industry)
    assert list(asyncsdk.Industry).count(code) == 0


@given(st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(list('ab@."\\ \t\x00\x1f\x7f\u00a0\u2028é')), max_size=40),
    st.builds(lambda a, b: f"{a}@{b}", st.text(max_size=130), st.text(max_size=130)),
))
def test_check_email_shortcut_accepts_what_email_value_accepts(text: str) -> None:
    """``check_email`` takes the usual address in one match; whatever it accepts or
    refuses, ``email_value`` (the module's decision) does the same."""
    from asyncsdk._checks import Refused, check_email, email_value

    try:
        expected = email_value(text)
    except Refused:
        with pytest.raises(asyncsdk.InvalidInputError):
            check_email(text, "email")
    else:
        assert check_email(text, "email") == expected


def test_check_email_decides_every_ascii_character_as_email_value_does() -> None:
    """``check_email`` takes printable ASCII with string methods before its regex: for
    every ASCII character in every position of an address, and with no "@" or two, it
    accepts and refuses exactly what ``email_value`` (the module's decision) does."""
    from asyncsdk._checks import Refused, check_email, email_value

    for code in range(128):
        c = chr(code)
        for text in (f"a{c}b@x.io", f"{c}@x", f"a@x{c}", f"ab{c}", c, f"{c}{c}@{c}"):
            try:
                expected = email_value(text)
            except Refused:
                with pytest.raises(asyncsdk.InvalidInputError):
                    check_email(text, "email")
            else:
                assert check_email(text, "email") == expected, repr(text)
