"""The raw-HTTP helper of the sandbox's own tests."""

from __future__ import annotations

from typing import Any

import aiohttp

from asyncsdk.testing import Sandbox


class Api:
    """Raw calls to a sandbox, credentials filled in unless given."""

    def __init__(self, sb: Sandbox, http: aiohttp.ClientSession) -> None:
        self.sb = sb
        self.http = http

    async def validation(self, path: str, **params: Any) -> Any:
        query = {"api": self.sb.api_key, "username": self.sb.username, **params}
        query = {k: str(v) for k, v in query.items() if v is not None}
        async with self.http.get(f"/api/v1/{path}", params=query) as resp:
            assert resp.status == 200
            return await resp.json()

    async def check(self, email: str | None, **params: Any) -> Any:
        return await self.validation("single/check", email=email, **{"timeout": 30, **params})

    async def create_job(self, url: str | None, **params: Any) -> Any:
        return await self.validation("jobs/create", file_name=url, **{"timeout": 30, **params})

    async def status(self, job_id: int | str, **params: Any) -> Any:
        return await self.validation("jobs/status", job_id=job_id, **params)

    async def resource(
        self, method: str, path: str, body: Any = None, *, api_key: str | None = "default"
    ) -> tuple[int, Any]:
        """(status, decoded JSON or None) of a resource call."""
        params = {"api_key": self.sb.api_key if api_key == "default" else api_key}
        params = {k: v for k, v in params.items() if v is not None}
        async with self.http.request(method, path, params=params, json=body) as resp:
            raw = await resp.read()
            return resp.status, (await resp.json() if raw else None)

    async def mail(self, method: str = "POST", **fields: Any) -> Any:
        form = {
            "api": self.sb.api_key,
            "username": self.sb.username,
            "from": "news@example.com",
            "to": "ada@example.org",
            "subject": "Hello",
            "message": "<p>Hi</p>",
            **fields,
        }
        form = {k: v for k, v in form.items() if v is not None}
        kwargs: dict[str, Any] = {"data": form} if method == "POST" else {"params": form}
        async with self.http.request(method, "/api/v1/mail/send/", **kwargs) as resp:
            assert resp.status == 200
            return await resp.json()
