"""An aiohttp web backend sharing ONE asyncsdk.Client across all requests.

    python examples/web_backend.py --sandbox
    curl 'localhost:8081/check?email=a@example.com'

The client is created when the app starts and closed when it stops (``cleanup_ctx``),
so every request reuses the same connection pool. Errors become HTTP answers: bad input
400, the service refusing (or answering what cannot be read) 502, no answer 504.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

import asyncsdk

CLIENT = web.AppKey("client", asyncsdk.Client)


def make_app(client_factory: asyncsdk.Client | None = None) -> web.Application:
    """The app; pass a client (tests, sandbox) or let it read ASYNCSDK_* variables."""
    app = web.Application()

    async def client_context(app: web.Application) -> AsyncIterator[None]:
        client = client_factory or asyncsdk.Client()
        async with client:
            app[CLIENT] = client
            yield

    app.cleanup_ctx.append(client_context)
    app.router.add_get("/check", check)
    return app


async def check(request: web.Request) -> web.Response:
    email = request.query.get("email", "")
    try:
        result = await request.app[CLIENT].validation.check(email, request_timeout=10)
    except asyncsdk.InvalidInputError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    except asyncsdk.InvalidEmailError:
        return web.json_response({"email": email, "valid": False, "reason": "format"})
    except asyncsdk.APIConnectionError:
        return web.json_response({"error": "validation service unreachable"}, status=504)
    except asyncsdk.APIError as exc:
        return web.json_response({"error": exc.message}, status=502)
    except asyncsdk.ResponseDecodeError:  # answered, but not as the interface says
        return web.json_response({"error": "unreadable answer from the service"}, status=502)
    return web.json_response({
        "email": result.email,
        "valid": result.result == asyncsdk.Verdict.VALID,
        "verdict": str(result.result),
        "role": result.role,
    })


async def serve_with_sandbox(port: int) -> None:
    from asyncsdk.testing import Sandbox

    async with Sandbox() as sandbox:
        runner = web.AppRunner(make_app(sandbox.client()))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print(f"listening on http://127.0.0.1:{port}/check?email=someone@example.com")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", action="store_true")
    parser.add_argument("--port", type=int, default=8081)
    options = parser.parse_args()
    if options.sandbox:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_with_sandbox(options.port))
    else:
        web.run_app(make_app(), host="127.0.0.1", port=options.port)
