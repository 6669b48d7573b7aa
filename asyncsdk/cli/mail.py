"""``asyncsdk mail send``: send one HTML mail (the body given inline or read from a file)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from .. import Client
from .common import EXIT_OK, Environment, UsageProblem, print_json


async def cmd_mail(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Send one mail; the ``MailResult`` as JSON."""
    html = args.html
    if html is None:
        path = Path(args.html_file)
        if await asyncio.to_thread(path.is_dir):
            raise UsageProblem(f"{args.html_file}: is a directory, not a file")
        if not await asyncio.to_thread(path.is_file):
            raise UsageProblem(f"{args.html_file}: no such file")
        html = await asyncio.to_thread(path.read_text, "utf-8")
    sent = await client.mail.send(sender=args.sender, to=args.to, subject=args.subject,
                                  html=html)
    print_json(sent, env.stdout)
    return EXIT_OK
