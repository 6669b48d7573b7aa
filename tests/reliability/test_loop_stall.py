"""Big answers do not stall the event loop (issue 11, "Big answers stall the event loop").

An answer of ``OFFLOAD_DECODE_BYTES`` or more is read, parsed and decoded so that no
single C call (which holds the GIL, and so the loop) covers more than a piece of it:

* the body is joined in a worker thread, not on the loop;
* a listing is parsed there in pieces of at most ``OFFLOAD_SLICE_CHARS``
  (``_json_slices.read_json``), never handed whole to one
  ``json.loads``/``orjson.loads``, nor one element to one parse;
* the worker steps aside for the loop every ``OFFLOAD_SHARE_SECONDS`` while it parses
  and decodes (``_json_slices.gil_sharer``), and hands back nothing the caller's listing
  outlives;
* the cyclic collector is left alone: it runs as the application set it (on, off,
  thresholds, frozen objects) before, during and after a decode, and its young
  collections walk a few thousand objects at a time, never a whole listing.

No wall clock: what is asserted is where and in what pieces the work happens (the stall
figures themselves are in ``benchmarks/scen_looplag.py``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from helpers import API_KEY, USERNAME, watch_decoding_as_parsed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scripted_server import scripted_server

import asyncsdk
from asyncsdk import _constants
from asyncsdk._core import answer as _answer
from asyncsdk._serde import big_json as _json_slices
from asyncsdk._serde.big_json import NOT_READ, read_json
from asyncsdk._serde.converter import decode_list
from asyncsdk.models.contacts import ContactList

PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def contact(i: int) -> dict[str, Any]:
    return {"uuid": f"u{i}", "email": f"user{i}@example.com", "customer_name": f"P {i}",
            "mobile": 9000000000 + i, "age": i % 90, "isemail": True, "tags": ["a", i],
            "attributes": {"k": i}, "city": "Pune"}


def listing(lists: int, per_list: int) -> list[dict[str, Any]]:
    return [{"id": n, "name": f"list {n}", "is_email": True,
             "emaillist": [{"contact": per_list,
                            "data": [contact(n * per_list + i) for i in range(per_list)]}]}
            for n in range(lists)]


#: 20,000 contacts in 10 lists: ~3.4 MB, far over the offload threshold.
BIG = listing(10, 2_000)
BIG_BODY = json.dumps(BIG).encode()
LONGEST_ELEMENT = max(len(json.dumps(item)) for item in BIG)


async def answered(body: bytes, path: str,
                   call: Callable[[asyncsdk.Client], Awaitable[Any]]) -> Any:
    """``call(client)`` with ``path`` answered by ``body`` from a server on 127.0.0.1."""

    async def script(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    async with scripted_server() as server:
        server.on(path, script)
        async with asyncsdk.Client(API_KEY, USERNAME, base_url=server.base_url,
                                   max_retries=0) as c:
            return await call(c)


async def list_contacts(body: bytes) -> list[ContactList]:
    """``contacts.list()`` answered with ``body``."""
    got: list[ContactList] = await answered(body, "/api/v1/contact/",
                                            lambda c: c.contacts.list())
    return got


def test_the_listings_here_are_big_answers() -> None:
    assert len(BIG_BODY) > 8 * _constants.OFFLOAD_DECODE_BYTES
    assert len(BIG) == 10


# --- where and in what pieces the work happens -------------------------------------------
@dataclass
class Parses:
    """What the big-answer path parsed: whole bodies (``_json_loads``), the length of
    each piece parsed in one call (the scanner, or orjson's runs), and the threads."""

    whole: list[int] = field(default_factory=list)
    spans: list[int] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Parses:
    seen = Parses()
    real_loads, real_scan = _answer._json_loads, _json_slices._scan
    # Decided before ``_json_loads`` is replaced: without orjson, runs go to the scanner.
    run_loads = _answer._run_loads()

    def loads(raw: Any) -> Any:
        seen.whole.append(len(raw))
        return real_loads(raw)

    def scan(text: str, pos: int) -> tuple[Any, int]:
        seen.threads.add(threading.get_ident())
        item, end = real_scan(text, pos)
        seen.spans.append(end - pos)
        return item, end

    def parse_run(text: str) -> Any:
        seen.threads.add(threading.get_ident())
        seen.spans.append(len(text))
        return run_loads(text)  # type: ignore[misc]

    monkeypatch.setattr(_answer, "_json_loads", loads)
    monkeypatch.setattr(_json_slices, "_scan", scan)
    monkeypatch.setattr(_answer, "_run_loads",
                        lambda: None if run_loads is None else parse_run)
    return seen


@pytest.fixture
def scan_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Where each call of the scanner started."""
    calls: list[int] = []
    real_scan = _json_slices._scan

    def scan(text: str, pos: int) -> tuple[Any, int]:
        calls.append(pos)
        return real_scan(text, pos)

    monkeypatch.setattr(_json_slices, "_scan", scan)
    return calls


async def test_big_listing_is_parsed_in_slices_off_the_loop(
    parses: Parses, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: the whole body went to one ``json.loads`` (tens of ms to seconds
    holding the GIL), and was joined by one ``b"".join`` on the loop."""
    joined_off_loop: list[int] = []
    real_to_thread = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        if getattr(func, "__self__", None) == b"":  # b"".join
            joined_off_loop.append(sum(map(len, args[0])))
        return await real_to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    got = await list_contacts(BIG_BODY)

    assert [c.uuid for cl in got for g in cl.emaillist for c in g.data] == [
        f"u{i}" for i in range(20_000)]
    assert not [n for n in parses.whole if n >= _constants.OFFLOAD_DECODE_BYTES]
    # Regression (issue 11, 50,000 records): one parse per element held the GIL for
    # 5-10 ms each; now no parse covers more than a slice, however big the elements.
    assert LONGEST_ELEMENT > 4 * _constants.OFFLOAD_SLICE_CHARS
    assert max(parses.spans) <= _constants.OFFLOAD_SLICE_CHARS + 2
    assert sum(parses.spans) >= len(BIG_BODY) * 0.9  # the pieces cover the body
    assert parses.threads and threading.get_ident() not in parses.threads
    assert joined_off_loop == [len(BIG_BODY)]


async def test_small_answers_stay_on_the_loop_in_one_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hot path is unchanged: a small listing is read at once and parsed whole, on
    the loop, without a thread hop."""
    hops: list[Any] = []
    real_to_thread = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await real_to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    got = await list_contacts(json.dumps(listing(2, 3)).encode())
    assert [len(cl.emaillist[0].data) for cl in got] == [3, 3]
    assert hops == []


async def test_the_worker_steps_aside_for_the_loop_while_parsing_and_decoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (50,000 records, worst run 30-65 ms): the worker gave the GIL up only
    when the interpreter forced it (after its 5 ms switch interval, and not inside a C
    call). Now it sleeps a moment (releasing the GIL) every ``OFFLOAD_SHARE_SECONDS``
    of parsing and of decoding; with a clock that moves 1 ms a read, that is every
    other piece."""
    loop_thread = threading.get_ident()
    ticks = iter(range(10**9))
    pauses: list[tuple[int, float]] = []
    monkeypatch.setattr(_json_slices, "_clock", lambda: next(ticks) / 1000)
    monkeypatch.setattr(_json_slices, "_sleep",
                        lambda seconds: pauses.append((threading.get_ident(), seconds)))
    parsed: list[int] = []
    decoded: list[int] = []
    real_read, real_decode = _answer.read_json, _answer.decode_list

    def read(*args: Any, **kwargs: Any) -> Any:
        got = real_read(*args, **kwargs)
        parsed.append(len(pauses))
        return got

    def decode(*args: Any, **kwargs: Any) -> Any:
        got = real_decode(*args, **kwargs)
        decoded.append(len(pauses))
        return got

    monkeypatch.setattr(_answer, "read_json", read)
    monkeypatch.setattr(_answer, "decode_list", decode)
    got = await list_contacts(BIG_BODY)
    assert len(got) == len(BIG)
    assert pauses and {thread for thread, _ in pauses} != {loop_thread}
    assert all(0 < seconds <= 0.001 for _, seconds in pauses)
    # while parsing and decoding the records (a run of contacts to a slice, each run
    # decoded as it is parsed), and between the lists decoded
    assert parsed[0] >= len(BIG_BODY) // (2 * _constants.OFFLOAD_SLICE_CHARS)
    assert decoded[0] - parsed[0] >= len(BIG) // 3


async def test_a_big_listing_is_decoded_as_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (issue 39: 355-424 ms stalls at 50,000 contacts): the whole listing was
    parsed, then decoded, so every parsed dict lived beside its model until the end, and
    the collector's full collections (which hold the GIL, and so the loop) walked both.
    Now each run of records is decoded as soon as it is parsed: when the k-th contact is
    built, not much more than k records' worth of the body has been parsed (what the
    parses read, counted where they succeed); and the models are those of the ordinary
    decoding."""
    _, seen = watch_decoding_as_parsed(monkeypatch, _answer)
    got = await list_contacts(BIG_BODY)
    assert got == decode_list(BIG, ContactList)
    record = len(BIG_BODY) / 20_000
    assert len(seen) == 20_000
    assert all(at <= (k + 1) * record + 2 * _constants.OFFLOAD_SLICE_CHARS
               for k, at in enumerate(seen))


def test_gil_sharer_sleeps_only_once_its_interval_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    slept: list[float] = []
    monkeypatch.setattr(_json_slices, "_clock", lambda: now[0])
    monkeypatch.setattr(_json_slices, "_sleep", slept.append)
    share = _json_slices.gil_sharer(0.002)
    for step in range(10):  # 0.5 ms of work between calls
        now[0] = (step + 1) * 0.0005
        share()
    assert len(slept) == 2  # at 2.0 ms and at 4.0 ms, not at every call
    assert all(0 < seconds < 0.001 for seconds in slept)


async def test_the_worker_hands_back_nothing_the_listing_outlives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: the worker returned the listing itself, which the thread pool keeps
    (its future's result) until the thread is done with the call; a caller who dropped
    the listing first had it freed by the worker, holding the GIL for 30-60 ms at
    50,000 records, stalling whatever the loop did next. Now what the thread returns
    is emptied on the loop."""
    handed_back: list[Any] = []
    real_to_thread = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        got = await real_to_thread(func, *args, **kwargs)
        handed_back.append(got)
        return got

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    got = await list_contacts(BIG_BODY)
    assert len(got) == len(BIG)
    returned = handed_back[-1]  # the decode's (the first is the join of the body)
    assert returned == [] and not any(item is got for item in returned)


def _young_bound() -> int:
    """The most objects a young collection may walk without walking a whole listing
    (these tests' listings make 40,000 tracked objects and more). A generation-1
    collection holds about ``threshold1`` young collections' survivors (about 7,700
    objects on Python 3.11 and 3.12, 22,000 on 3.13; 5,500 seen alone on 3.11). At least
    20,000 leaves room for what another test's thread allocates meanwhile in a mixed run
    (two such runs went past ``threshold0 * (threshold1 + 5)``, 10,500 on 3.11) and still
    catches a walk of a listing."""
    young, old = gc.get_threshold()[:2]
    return max(young * (old + 5), 20_000)


@pytest.fixture
def young_collections() -> Iterator[list[int]]:
    """The number of objects each young (generation 0 or 1) collection walks."""
    sizes: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] < 2:
            sizes.append(sum(len(gc.get_objects(g)) for g in range(info["generation"] + 1)))

    was_on = gc.isenabled()
    gc.enable()
    gc.collect()
    gc.callbacks.append(watch)
    try:
        yield sizes
    finally:
        gc.callbacks.remove(watch)
        if not was_on:
            gc.disable()


async def test_no_young_collection_walks_a_big_listing(young_collections: list[int]) -> None:
    """Regression: the collector was switched off while the listing was decoded and back
    on after it, leaving every object made in the youngest generation: the next young
    collection (on whichever thread allocated next, the loop's often) walked them all in
    one C call holding the GIL."""
    got = await list_contacts(BIG_BODY)
    kept = [[] for _ in range(5_000)]  # allocations enough for several young collections
    assert got and kept and young_collections
    # 20,000 contacts made over 60,000 tracked objects; a young generation holds a few
    # thousand at most (see _young_bound).
    assert max(young_collections) < _young_bound(), max(young_collections)


def test_no_young_collection_walks_a_listing_decoded_on_the_loop(
    young_collections: list[int],
) -> None:
    """The same for ``decode_list`` on the loop (small answers)."""
    # BIG, parsed before the watch began: a json.loads here would be walked by the first
    # young collection after it on Python 3.12 (collections wait for the next bytecode)
    got = decode_list(BIG, ContactList)
    kept = [[] for _ in range(5_000)]
    assert len(got) == 10 and kept and young_collections
    assert max(young_collections) < _young_bound()


async def test_one_big_object_is_parsed_in_slices_off_the_loop(parses: Parses) -> None:
    """Regression: a big answer that is one object (``contacts.get`` of a list of
    20,000 contacts) went to one ``json.loads`` of the whole body in the worker, holding
    the GIL (and so the loop) for all of it."""
    one = BIG[0] | {"emaillist": [{"contact": 20_000,
                                   "data": [contact(i) for i in range(20_000)]}]}
    body = json.dumps(one).encode()
    got = await answered(body, "/api/v1/contact/7/", lambda c: c.contacts.get(7))
    assert [x.uuid for x in got.emaillist[0].data] == [f"u{i}" for i in range(20_000)]
    assert not [n for n in parses.whole if n >= _constants.OFFLOAD_DECODE_BYTES]
    assert max(parses.spans) <= _constants.OFFLOAD_SLICE_CHARS + 2
    assert sum(parses.spans) >= len(body) * 0.9
    assert threading.get_ident() not in parses.threads


@pytest.mark.parametrize("error", ["Invalid API Key", "Insufficient credit", "x"])
async def test_a_big_fail_answer_raises_what_a_small_one_raises(error: str) -> None:
    """The ``status: fail`` rule of the validation area holds for a big answer parsed in
    slices too (the interpreter's rules run on the parsed data): the same error as the
    same answer without its padding."""
    small = {"status": "fail", "error": error}
    big = {**small, "padding": ["x" * 100] * 5_000}
    assert len(json.dumps(big)) >= _constants.OFFLOAD_DECODE_BYTES
    raised = []
    for answer in (small, big):
        async with scripted_server() as server:
            server.on("/api/v1/single/check", server.answer(answer))
            async with asyncsdk.Client(API_KEY, USERNAME, base_url=server.base_url,
                                       max_retries=0) as c:
                with pytest.raises(asyncsdk.APIError) as caught:
                    await c.validation.check("a@example.com")
        raised.append((type(caught.value), caught.value.message))
    assert raised[0] == raised[1]
    assert error in raised[1][1]


# --- the collector is the application's -------------------------------------------------
GcSettings = tuple[bool, tuple[int, ...], int]


def gc_settings() -> GcSettings:
    """What an application may have set: on or off, the thresholds, objects frozen."""
    return gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()


def is_frozen(thing: object) -> bool:
    """Frozen objects are in no generation (untracked ones are in none either: the
    objects asked about here are lists, which are tracked)."""
    return not any(o is thing for o in gc.get_objects())


@pytest.fixture(params=["on", "off", "own thresholds", "objects frozen"])
def application_gc(request: pytest.FixtureRequest) -> Iterator[str]:
    """The collector as an application set it before calling the library; the settings
    of the test run restored after. With "objects frozen", an object of the application
    frozen before the call is still frozen after it."""
    way: str = request.param
    was_on, thresholds = gc.isenabled(), gc.get_threshold()
    mine: list[object] = []
    (gc.disable if way == "off" else gc.enable)()
    if way == "own thresholds":
        gc.set_threshold(500, 7, 9)
    if way == "objects frozen":
        gc.freeze()
    try:
        yield way
        assert is_frozen(mine) == (way == "objects frozen")
    finally:
        if way == "objects frozen":
            gc.unfreeze()
        gc.set_threshold(*thresholds)
        (gc.enable if was_on else gc.disable)()


class SettingsWatch:
    """Called at every step of a decode (where the worker may let the loop in): records
    the collector's settings, and halfway through changes them as the application's
    other threads may (the collector switched the other way), expecting that kept."""

    def __init__(self, way: str, change_at: int) -> None:
        self.first = self.expected = gc_settings()
        self.app_froze = way == "objects frozen"
        self.change_at = change_at
        self.seen: list[GcSettings] = []

    def __call__(self) -> None:
        # On or off and the thresholds at every step; the frozen count (a walk of every
        # frozen object: slow in a long test session) only at the start and the end.
        self.seen.append((gc.isenabled(), gc.get_threshold(), self.first[2]))
        if len(self.seen) == self.change_at:
            (gc.disable if gc.isenabled() else gc.enable)()
            self.expected = gc_settings()

    def assert_untouched(self) -> None:
        """On or off and the thresholds exactly as set, all along and after; nothing
        frozen or thawed. (Frozen objects of the application may die meanwhile, which
        lowers the count, never to nothing.)"""
        assert len(self.seen) > self.change_at
        before, after = self.seen[:self.change_at], [*self.seen[self.change_at:],
                                                     gc_settings()]
        assert {s[:2] for s in before} == {self.first[:2]}
        assert {s[:2] for s in after} == {self.expected[:2]}  # the application's change
        counts = {s[2] for s in after + before}
        if sys.version_info[:2] == (3, 12):
            # 3.12 moves objects of its own to the permanent generation as it allocates:
            # get_freeze_count() grows with no gc.freeze() anywhere (0, then 375, in a
            # bare interpreter), so the count tells nothing there. (The library calls
            # no gc function at all: test_guest.py.)
            return
        if self.app_froze:
            assert max(counts) <= self.first[2] and min(counts) > 0
        else:
            assert counts == {self.first[2]}


async def test_a_big_decode_leaves_the_collector_as_the_application_set_it(
    application_gc: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (issue 27): every decode switched the collector off (or, with objects
    frozen, raised the full collection's threshold) and at the end moved every young
    object of the application to the oldest generation, re-enabling a collector the
    application had switched off meanwhile. Off the loop (``contacts.list()`` of 20,000
    contacts, watched at each step of the worker) the collector stays the application's:
    on or off, its thresholds, what it froze, and a change it makes during the decode."""
    watch = SettingsWatch(application_gc, change_at=20)
    real_clock = _json_slices._clock

    def clock() -> float:  # the worker reads it at each step (``gil_sharer``)
        watch()
        return real_clock()

    monkeypatch.setattr(_json_slices, "_clock", clock)
    got = await list_contacts(BIG_BODY)
    assert len(got) == len(BIG)
    watch.assert_untouched()


def test_a_decode_on_the_loop_leaves_the_collector_as_the_application_set_it(
    application_gc: str,
) -> None:
    """The same for ``decode_list`` as small answers use it, on the loop's thread."""
    watch = SettingsWatch(application_gc, change_at=5)
    assert len(decode_list(BIG, ContactList, watch)) == len(BIG)
    watch.assert_untouched()


def test_the_library_never_calls_the_collector() -> None:
    """No module of the package imports ``gc``: the collector is the application's."""
    import ast
    from pathlib import Path

    root = Path(asyncsdk.__file__).parent
    users = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "gc" in names:
                users.append(str(path.relative_to(root)))
    assert users == []


# --- every check of the answer kept --------------------------------------------------------
@pytest.mark.parametrize("bad", ["element", "contact", "not a list", "cut", "trailing",
                                 "nan", "utf8"])
async def test_bad_big_answer_is_a_decode_error_holding_the_body(bad: str) -> None:
    body = BIG_BODY
    if bad == "element":  # the last list's id is not a number
        broken = [*BIG[:-1], {**BIG[-1], "id": "nine"}]
        body = json.dumps(broken).encode()
    elif bad == "contact":  # decoded as it is parsed, then read plain to name it
        body = BIG_BODY.replace(b'"mobile": 9000019999', b'"mobile": "x"')
    elif bad == "not a list":
        body = json.dumps({"lists": BIG}).encode()
    elif bad == "cut":
        body = BIG_BODY[:-100]
    elif bad == "trailing":
        body = BIG_BODY + b" x"
    elif bad == "nan":
        body = BIG_BODY[:-1] + b", NaN]"
    elif bad == "utf8":
        body = BIG_BODY[:-1] + b', "\xff"]'
    assert len(body) >= _constants.OFFLOAD_DECODE_BYTES
    with pytest.raises(asyncsdk.ResponseDecodeError) as caught:
        await list_contacts(body)
    assert caught.value.body  # the body shown (a preview), as for small answers
    if bad == "element":
        assert "$[9].id" in str(caught.value)
    if bad == "contact":
        assert "$[9].emaillist[0].data[1999].mobile" in str(caught.value)


# --- the sliced reader is json.loads, piece by piece --------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


#: Text that looks like the places where ``batch`` cuts a run of elements.
tricky_text = st.text(alphabet=st.sampled_from(list('{}[],:" k\\1')), max_size=12)
#: Records whose first member is always "k": ``batch`` looks for ``{"k":`` to cut at,
#: and meets it in nested records and inside strings too.
records = st.recursive(
    st.none() | st.integers(-99, 99) | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text,
    lambda inner: st.lists(inner, max_size=4)
    | st.builds(lambda first, rest: {"k": first, **rest}, inner,
                st.dictionaries(tricky_text, inner, max_size=3)),
    max_leaves=10)


@PROPERTY
@given(items=st.lists(json_values, max_size=8), window=st.integers(1, 40),
       slice_chars=st.integers(1, 60),
       indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_read_json_equals_json_loads(items: list[Any], window: int, slice_chars: int,
                                     indent: int | None, ascii_only: bool) -> None:
    body = json.dumps(items, indent=indent, ensure_ascii=ascii_only).encode()
    assert read_json(body, window=window, slice_chars=slice_chars) == json.loads(body)


@PROPERTY
@given(items=st.lists(records, max_size=30), window=st.integers(1, 300),
       slice_chars=st.integers(1, 300), separators=st.sampled_from(
           [(",", ":"), (", ", ": "), (" ,\n ", " : ")]))
def test_read_json_cuts_runs_of_records_only_between_them(
    items: list[Any], window: int, slice_chars: int, separators: tuple[str, str],
) -> None:
    """Many records to a parse (``batch``), cut where a record seems to start: inside
    strings, nested records and past the array's end the cut must be refused."""
    body = json.dumps({"rows": items}, separators=separators)
    body = json.dumps([json.loads(body), items, items], separators=separators)
    got = read_json(body.encode(), window=window, slice_chars=slice_chars)
    assert got == json.loads(body)


records_64 = st.recursive(  # what orjson reads as json does: 64-bit ints, finite floats
    st.none() | st.integers(-2**63, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | tricky_text,
    lambda inner: st.lists(inner, max_size=4)
    | st.builds(lambda first, rest: {"k": first, **rest}, inner,
                st.dictionaries(tricky_text, inner, max_size=3)),
    max_leaves=10)


@PROPERTY
@given(items=st.lists(records_64, max_size=30), slice_chars=st.integers(1, 300))
def test_runs_parsed_by_orjson_equal_json_loads(items: list[Any], slice_chars: int) -> None:
    """With the speedups extra, runs of records are parsed by ``orjson.loads`` (about
    twice the speed of the scanner); cut or not, the listing is the same."""
    fast = pytest.importorskip("orjson").loads
    body = json.dumps([{"rows": items}, items, items])
    got = read_json(body.encode(), window=64, slice_chars=slice_chars, loads=fast)
    assert got == json.loads(body)


@pytest.mark.parametrize("odd", ['"\\ud800"', "1e400", "-1e999"])
def test_a_run_orjson_refuses_is_read_by_the_scanner(odd: str) -> None:
    """orjson refuses a lone surrogate and a number beyond a double, which ``json``
    reads: such a run goes to the scanner, so the big path reads what it did before."""
    fast = pytest.importorskip("orjson").loads
    rows = [{"k": i, "v": "x" * 20} for i in range(200)]
    body = json.dumps(rows)[:-1] + ', {"k": 200, "v": ' + odd + "}]"
    with pytest.raises(ValueError):
        fast(body)
    assert read_json(body.encode(), slice_chars=2_000, loads=fast) == json.loads(body)


@pytest.mark.parametrize("rows", [
    [i * 1.5 for i in range(20_000)],
    [f'a,b",{i}' for i in range(20_000)],  # commas and quotes inside the strings
    [[i, "x"] for i in range(20_000)],
    [{f"k{i % 7}": i, "v": [i]} for i in range(20_000)],  # records of differing shapes
], ids=["numbers", "strings", "arrays", "mixed-records"])
def test_any_array_of_small_elements_is_parsed_in_runs(rows: list[Any],
                                                     scan_calls: list[int]) -> None:
    """Regression: an array of numbers or strings (or of records whose first member
    varies) was read one element per parse, several times slower than ``json.loads``."""
    body = json.dumps(rows).encode()
    assert read_json(body) == rows
    assert len(scan_calls) < len(rows) // 50


def test_a_map_keyed_by_ids_shares_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """An object with thousands of keys (ids) is not thousands of learned places: past
    ``_MAX_PLACES`` its members share one, so they are read whole after the first."""
    readers: list[Any] = []
    real_reader = _json_slices._Reader

    class Spy(real_reader):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            readers.append(self)

    monkeypatch.setattr(_json_slices, "_Reader", Spy)
    data = [{f"id{i}": {"a": i, "b": [i, "x"]} for i in range(5_000)}]
    body = json.dumps(data).encode()
    assert read_json(body, slice_chars=64) == data
    assert len(readers[0].descend) <= _json_slices._MAX_PLACES + 8


def test_runs_of_small_elements_are_parsed_many_to_a_call(scan_calls: list[int]) -> None:
    """Small records cost about what ``json.loads`` costs: a run of them is one parse,
    not one parse each."""
    rows = [contact(i) for i in range(3_000)]
    body = json.dumps(rows).encode()
    assert read_json(body) == rows
    assert len(scan_calls) < len(body) // 20_000  # a run fills most of a slice


@PROPERTY
@given(items=st.lists(json_values, max_size=6), cut=st.integers(0, 400),
       junk=st.sampled_from([b"", b"x", b"]", b",", b" ", b"\xff", b"[", b"1"]),
       window=st.integers(1, 40))
def test_read_json_gives_json_loads_or_not_read(items: list[Any], cut: int, junk: bytes,
                                                window: int) -> None:
    """Cut or spoilt bodies: what ``json.loads`` gives, or ``NOT_READ`` where it refuses
    (the caller then reads the body the ordinary way and raises its error)."""
    whole = json.dumps(items).encode()
    body = whole[:cut] + junk + whole[cut:]
    got = read_json(body, window=window)
    try:
        expected = json.loads(body)
    except ValueError:
        assert got is NOT_READ
    else:
        assert got == expected


@pytest.mark.parametrize("body", [b"", b"   ", b"[1", b"[1,]", b"[,1]", b"[1 2]", b"[1]]",
                                  b"{1}", b'{"a" 1}', b'{"a": 1,}', b"[NaN]", b"[Infinity]",
                                  b"\xef\xbb\xbf\xef\xbb\xbf[1]",  # a second mark (the first is
                                  # dropped as json.loads drops it: test_one_reading.py)
                                  # a trailing comma where a run of small elements was due
                                  # (found by the property test above)
                                  b'[{"": ["",]}, null]', b'[{"a": [1, 2,]}, 3]'])
def test_read_json_refuses_what_is_not_one_json_document(body: bytes) -> None:
    for window in (1, 2, 7, 1 << 20):
        assert read_json(body, window=window) is NOT_READ


@PROPERTY
@given(value=json_values, window=st.integers(1, 40), slice_chars=st.integers(1, 60),
       junk=st.sampled_from(["", " ", "x", "]", "}", ","]))
def test_read_json_equals_json_loads_for_any_document(value: Any, window: int,
                                                      slice_chars: int, junk: str) -> None:
    body = json.dumps(value) + junk
    try:
        expected = json.loads(body)
    except ValueError:
        expected = NOT_READ
    got = read_json(body.encode(), window=window, slice_chars=slice_chars)
    assert got is expected if expected is NOT_READ else got == expected


def test_read_json_reads_an_element_longer_than_its_window() -> None:
    item = {"k": "v" * 10_000, "n": [1.5e-3] * 500}
    body = json.dumps([item, 12345678901234567890, item]).encode()
    assert read_json(body, window=3) == [item, 12345678901234567890, item]
