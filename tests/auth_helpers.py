"""Every form a credential can come back in, an oracle that finds any of them, and a
one-handler HTTP server on 127.0.0.1.

Independent of ``asyncsdk._core.credentials``: the tests use it to check the scrubber, not the
scrubber's own pattern.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from urllib.parse import quote, quote_plus, urlencode

import yarl
from aiohttp import web


def _yarl_query(secret: str) -> str:
    """The value as aiohttp puts it on the wire in a query."""
    return yarl.URL("http://h/").with_query({"k": secret}).raw_query_string[2:]


ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "percent": lambda s: quote(s, safe=""),
    "percent-lower": lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(),
                                      quote(s, safe="")),
    "percent-keep-slash": lambda s: quote(s),
    "percent-twice": lambda s: quote(quote(s, safe=""), safe=""),
    "plus-for-space": quote_plus,
    "form": lambda s: urlencode({"k": s})[2:],
    "wire-query": _yarl_query,
    "json-ascii": lambda s: json.dumps(s)[1:-1],
    "json-utf8": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "json-slash": lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    "repr": lambda s: repr(s)[1:-1],
    "ascii": lambda s: ascii(s)[1:-1],
    "bytes-repr": lambda s: repr(s.encode())[2:-1],
    "plus-read-as-space": lambda s: s.replace("+", " "),
    "html": lambda s: "".join(f"&#{ord(c)};" for c in s),
}


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


#: A credential of at most this many characters is part of a word where an apostrophe
#: or hyphen joins it to a word character ("t" in "can't", "o" in "o-ring"): the
#: scrubber leaves it there (it would garble the message), so it is no leak.
JOINED_MAX = 3


def _joined(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is joined to a word by an apostrophe or hyphen."""
    before = text[start - 2: start] if start >= 2 else ""
    after = text[end: end + 2]
    return ((len(before) == 2 and before[1] in "'-" and _word(before[0])
             and _word(text[start]))
            or (len(after) == 2 and after[0] in "'-" and _word(after[1])
                and _word(text[end - 1])))


def leaks(text: str, secrets: Iterable[str]) -> list[str]:
    """Each ``encoding:secret`` found in ``text`` as a whole token (not inside a word;
    for a short secret, not joined to one: ``JOINED_MAX``)."""
    found = []
    for secret in secrets:
        for name, encode in ENCODINGS.items():
            form = encode(secret)
            start = text.find(form)
            while start != -1:
                end = start + len(form)
                before = text[start - 1] if start else " "
                after = text[end] if end < len(text) else " "
                if not _word(before) and not _word(after) and not (
                        len(secret) <= JOINED_MAX and _joined(text, start, end)):
                    found.append(f"{name}:{form}")
                    break
                start = text.find(form, start + 1)
    return found


@asynccontextmanager
async def serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """Answer every request with ``handler`` on 127.0.0.1; yields the base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
