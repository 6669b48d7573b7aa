"""``asyncsdk mail send``: send one HTML mail (the body given inline or read from a file)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from .. import Client
from .common import EXIT_OK, Environment, UsageProblem, not_safe_to_repeat, print_json

#: What an unanswered send means, and how to find out before sending again (the service
#: has no call that looks a sent mail up).
MAY_HAVE_BEEN_SENT = (
    "the mail may have been sent: the request may have reached the service, but its "
    "answer never came. The service has no way to look a sent mail up: check with the "
    "recipient (or their inbox) before sending again, as running this command again may "
    "send it twice")


async def cmd_mail(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Send one mail; the ``MailResult`` as JSON. No answer after the request may have
    left: ``OutcomeUnknown`` (exit 3), saying that the mail may have been sent."""
    html = args.html
    if html is None:
        path = Path(args.html_file)
        if await asyncio.to_thread(path.is_dir):
            raise UsageProblem(f"{args.html_file}: is a directory, not a file")
        if not await asyncio.to_thread(path.is_file):
            raise UsageProblem(f"{args.html_file}: no such file")
        html = await asyncio.to_thread(path.read_text, "utf-8")
    with not_safe_to_repeat(env, MAY_HAVE_BEEN_SENT):
        sent = await client.mail.send(sender=args.sender, to=args.to, subject=args.subject,
                                      html=html)
    print_json(sent, env.stdout)
    return EXIT_OK
