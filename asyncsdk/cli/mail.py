"""``asyncsdk mail send``: send one HTML mail (the body given inline or read from a file)."""

from __future__ import annotations

import argparse
import asyncio

from .. import Client
from .common import EXIT_OK, Environment, not_safe_to_repeat, print_json, read_text_file

#: What an unanswered send means, and how to find out before sending again (the service
#: has no call that looks a sent mail up).
MAY_HAVE_BEEN_SENT = (
    "the mail may have been sent: the request may have reached the service, but no "
    "answer saying what it did came back. The service has no way to look a sent mail "
    "up: check with the recipient (or their inbox) before sending again, as running this "
    "command again may send it twice")


async def cmd_mail(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Send one mail; the ``MailResult`` as JSON. No answer after the request may have
    left: ``OutcomeUnknown`` (exit 3), saying that the mail may have been sent."""
    html = args.html
    if html is None:
        html = await asyncio.to_thread(read_html, args.html_file)
    with not_safe_to_repeat(env, MAY_HAVE_BEEN_SENT):
        sent = await client.mail.send(sender=args.sender, to=args.to, subject=args.subject,
                                      html=html)
    print_json(sent, env.stdout)
    return EXIT_OK


def read_html(name: str) -> str:
    """The text of ``--html-file NAME`` (``common.read_text_file``)."""
    return read_text_file(f"--html-file {name}", name)
