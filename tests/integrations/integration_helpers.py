"""What the integration tests share: a distinctive account, the oracle that finds any
form of its credentials in what a tool wrote, the check that the service still got them
where the interface puts them, and the calls a tool is shown (every area, a retry,
refusals, a job whose result is hosted elsewhere).

The oracle is independent of the library's scrubber: ``auth_helpers.leaks`` (raw,
percent-encoded in each style, form- and JSON-escaped, Python reprs, HTML references)
and the key in base64.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

from auth_helpers import leaks

import asyncsdk
from asyncsdk.testing import RecordedRequest, Sandbox

#: A key with characters that every encoding changes, and a user name; both distinctive.
KEY = "Zq7k3y+/=ä9xLeak"
USER = "jdoe.leaky"
SECRETS = (KEY, USER)


def credentials_in(*texts: Any) -> list[str]:
    """Each form of ``KEY`` or ``USER`` found in ``texts`` (each JSON-dumped unless
    text), e.g. ``["percent:Zq7k3y%2B%2F%3D%C3%A49xLeak"]``; empty when none."""
    joined = "\n".join(t if isinstance(t, str) else json.dumps(t, default=repr)
                       for t in texts)
    found = leaks(joined, SECRETS)
    for form in {base64.b64encode(KEY.encode()).decode(),
                 base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("=")}:
        if form in joined:
            found.append(f"base64:{form}")
    return found


def assert_the_service_got_them(requests: Iterable[RecordedRequest]) -> int:
    """Every request the sandbox received carries the credentials exactly where the
    interface puts them (validation: query ``api`` + ``username``; mail: form; the
    resource areas: query ``api_key``), and a hosted file none. Returns how many
    requests of the library there were."""
    count = 0
    for r in requests:
        if r.path.startswith("/files/"):  # a hosted result (or the sandbox's own fetch)
            assert not credentials_in(r.path, r.query, r.body.decode("utf-8", "replace"))
            continue
        count += 1
        if r.path.startswith("/api/v1/mail/"):
            assert (r.form.get("api"), r.form.get("username")) == (KEY, USER), r.path
        elif r.path.startswith(("/api/v1/single/", "/api/v1/jobs/")):
            assert (r.query.get("api"), r.query.get("username")) == (KEY, USER), r.path
        else:
            assert r.query.get("api_key") == KEY, r.path
    return count


def sandbox(**options: Any) -> Sandbox:
    """A sandbox of this account, with demo data, jobs done at once, results hosted."""
    return Sandbox(api_key=KEY, username=USER, demo_data=True, job_polls=0,
                   download_shape="url", **options)


async def exercise(client: asyncsdk.Client, sb: Sandbox) -> list[asyncsdk.SDKError]:
    """Calls of every area and shape through ``client``: checks (one answered 503 then
    retried), every resource list, a mail (form), a job from a hosted file with its
    rows from a result hosted elsewhere (fetched without credentials), and three
    refusals (404, a bad address, 500 after the retries), which are returned. The
    client is on a ``VirtualClock`` (retries without their pauses)."""
    errors: list[asyncsdk.SDKError] = []
    await client.validation.check("ann@example.com")
    sb.faults.status("/api/v1/single/check", 503, times=1)
    await client.validation.check("sales@example.com")
    for area in (client.contacts, client.leads, client.customers, client.products,
                 client.invoices):
        await area.list()
    await client.mail.send(sender="me@example.com", to="you@example.org", subject="hi",
                           html="<p>hi</p>")
    job = await client.validation.create_job(
        sb.host_file("email\nann@example.com\nx@mailinator.com\n"))
    await job.wait()
    assert len([row async for row in job.rows()]) == 2
    for refused in (lambda: client.contacts.get(999_999),
                    lambda: client.validation.check("ann@localhost"),
                    lambda: client.validation.check("bob@example.com")):
        if len(errors) == 2:  # the last: 500 on every attempt
            sb.faults.status("/api/v1/single/check", 500,
                             times=client.max_retries + 1)
        try:
            await refused()
        except asyncsdk.APIError as exc:
            errors.append(exc)
    assert [type(e) for e in errors] == [asyncsdk.NotFoundError, asyncsdk.InvalidEmailError,
                                         asyncsdk.ServerError]
    return errors
