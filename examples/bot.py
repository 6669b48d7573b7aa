"""An async chat bot that answers "is this address valid?".

    python examples/bot.py --sandbox
    > is bob@example.com valid?
    bob@example.com looks valid.

Any chat framework plugs in at ``answer(text)``: it finds the addresses in a message,
checks them concurrently with the one shared client, and says what it found.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys

import asyncsdk

ADDRESS = re.compile(r"[^\s@<>(),;:\"']+@[^\s@<>(),;:\"']+\.[A-Za-z]{2,}")
SAYINGS = {
    asyncsdk.Verdict.VALID: "looks valid",
    asyncsdk.Verdict.CATCH_ALL: "is on a catch-all domain: it may or may not exist",
    asyncsdk.Verdict.UNKNOWN: "could not be verified",
    asyncsdk.Verdict.DISPOSABLE: "is a disposable address",
    asyncsdk.Verdict.BOUNCE: "would bounce",
}


async def answer(client: asyncsdk.Client, text: str) -> str:
    """The bot's reply to one message."""
    addresses = ADDRESS.findall(text)
    if not addresses:
        return "Send me an email address and I will tell you whether it is valid."
    lines = []
    async for outcome in client.validation.check_many(addresses, concurrency=4):
        if outcome.result is not None:
            verdict = outcome.result.result
            saying = SAYINGS.get(verdict, f"got the verdict {verdict}")  # type: ignore[arg-type]
            role = " (a role address, not a person)" if outcome.result.role else ""
            lines.append(f"{outcome.email} {saying}{role}.")
        elif isinstance(outcome.error, asyncsdk.InvalidEmailError | asyncsdk.InvalidInputError):
            lines.append(f"{outcome.email} is not a well-formed address.")
        else:
            lines.append(f"{outcome.email}: I could not check it right now.")
    return "\n".join(lines)


async def chat(client: asyncsdk.Client) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)  # stdin without blocking
        if not line:
            return
        print(await answer(client, line), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", action="store_true")
    if parser.parse_args().sandbox:
        from asyncsdk.testing import Sandbox

        async with Sandbox() as sandbox, sandbox.client() as client:
            await chat(client)
    else:
        async with asyncsdk.Client() as client:
            await chat(client)


if __name__ == "__main__":
    asyncio.run(main())
