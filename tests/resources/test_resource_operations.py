"""Every one of the 23 resource operations: what goes out, what comes back, how it fails.

The table lives in ``resource_cases.py``; each test here runs over all of it.
"""

from __future__ import annotations

from typing import Any

import pytest
from aioresponses import CallbackResult, aioresponses
from helpers import API_KEY
from resource_cases import CASES, Case, url

import asyncsdk

ALL = pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
#: The operations that read a body (a delete reads none: test_resource_inputs.py).
DECODING = pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name) for c in CASES if c.method != "DELETE"])


def answer(mocked: aioresponses, case: Case, **kwargs: Any) -> None:
    mocked.add(url(case.path), case.method, **kwargs)


def sent(mocked: aioresponses) -> list[tuple[str, str, Any]]:
    """(method, full URL, JSON body) of every request that went out, in order."""
    return [
        (method, str(u), call.kwargs.get("json"))
        for (method, u), calls in mocked.requests.items()
        for call in calls
    ]


@ALL
async def test_request_and_decoded_result(
    client: asyncsdk.Client, mocked: aioresponses, case: Case
) -> None:
    if case.answer is None:
        answer(mocked, case, status=204)
    else:
        answer(mocked, case, payload=case.answer, status=201 if case.unsafe else 200)
    result = await case.call(client)
    assert sent(mocked) == [(case.method, url(case.path), case.body)]
    case.check(result)


@ALL
async def test_404_is_not_found(
    client: asyncsdk.Client, mocked: aioresponses, case: Case
) -> None:
    answer(mocked, case, status=404, payload={"detail": "Not found."})
    with pytest.raises(asyncsdk.NotFoundError) as info:
        await case.call(client)
    assert info.value.status_code == 404
    assert info.value.operation == case.name
    assert API_KEY not in f"{info.value} {info.value!r} {info.value.url}"


@DECODING
async def test_answer_of_the_wrong_shape_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses, case: Case
) -> None:
    answer(mocked, case, payload="unexpected")  # neither the object nor the array expected
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await case.call(client)
    assert info.value.operation == case.name
    assert info.value.body == '"unexpected"'


@ALL
async def test_only_creates_are_not_repeated_after_a_server_error(
    client: asyncsdk.Client, mocked: aioresponses, case: Case
) -> None:
    answer(mocked, case, status=503, body="busy")
    answer(mocked, case, status=200 if case.answer is not None else 204,
           payload=case.answer)
    if case.unsafe:  # a POST may have created the object already: never sent twice
        with pytest.raises(asyncsdk.ServerError):
            await case.call(client)
        assert len(sent(mocked)) == 1
    else:  # GET, PUT (same body) and DELETE are idempotent: retried
        case.check(await case.call(client))
        assert len(sent(mocked)) == 2


@ALL
async def test_request_timeout_bounds_the_call(
    client: asyncsdk.Client, mocked: aioresponses, case: Case
) -> None:
    """Seen as aiohttp's bound of the attempt (its ``ClientTimeout.total``): within
    ``request_timeout`` when given, else within the client's timeout and past 3.5 s."""
    seen: list[float] = []

    def answered(url: Any, **kwargs: Any) -> CallbackResult:
        seen.append(kwargs["timeout"].total)
        return CallbackResult(status=204 if case.answer is None else 200,
                              payload=case.answer)

    answer(mocked, case, callback=answered, repeat=True)
    await case.call(client)
    await case.call(client, request_timeout=3.5)
    default, given = seen
    assert 3.5 < default <= client.timeout
    assert given <= 3.5
