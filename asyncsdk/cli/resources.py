"""``asyncsdk contacts|leads|customers|products|invoices list|get ID``: read a resource
area, as JSON on stdout."""

from __future__ import annotations

import argparse

from .. import Client
from .common import EXIT_OK, Environment, print_json


async def cmd_resource(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """``list`` or ``get ID`` of a resource area, as JSON."""
    area = getattr(client, args.command)
    if args.action == "list":
        print_json(await area.list(), env.stdout)
    else:
        print_json(await area.get(args.id), env.stdout)
    return EXIT_OK
