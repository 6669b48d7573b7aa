"""``asyncsdk contacts|leads|customers|products|invoices ACTION``: read and change a
resource area, as JSON on stdout.

Each area has the actions its library class has (invoices: list, update, delete).
``create`` and ``update`` read one JSON object (``--json FILE``, or ``-`` for standard
input) and build the area's input model with the model's own ``from_dict``: bad input
is refused (exit 2) before anything is sent. ``delete`` needs ``--yes``: the service
cannot undo it, and the command never asks (it runs in scripts). A create, update or
delete whose answer never came may have taken effect: exit 3, saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from .. import Client, InvalidInputError
from ..models.contacts import ContactListCreate, ContactUpdate
from ..models.customers import CustomerCreate, CustomerUpdate
from ..models.invoices import InvoiceUpdate
from ..models.leads import LeadInput
from ..models.products import ProductInput
from ..resources.contacts import Contacts
from ..resources.customers import Customers
from ..resources.invoices import Invoices
from ..resources.leads import Leads
from ..resources.products import Products
from .common import (
    EXIT_OK,
    Environment,
    UsageProblem,
    not_safe_to_repeat,
    print_json,
    read_text_file,
    utf8_text,
)


class InputModel(Protocol):
    """An input model of the library, as this module uses it: read from JSON data."""

    def from_dict(self, data: Mapping[str, Any]) -> Any: ...


#: The library's class of each area: the actions a command has are the methods it has.
AREAS: dict[str, type] = {"contacts": Contacts, "leads": Leads, "customers": Customers,
                          "products": Products, "invoices": Invoices}
ACTIONS = ("list", "get", "create", "update", "delete")
#: One record of each area, as a message names it.
RECORD = {"contacts": "contact list", "leads": "lead", "customers": "customer",
          "products": "product", "invoices": "invoice"}
#: The input model of each area's ``create`` and ``update`` (contacts' update takes a
#: list of ``ContactUpdate`` records: see ``contact_records``).
CREATE_INPUT: dict[str, InputModel] = {
    "contacts": ContactListCreate, "leads": LeadInput, "customers": CustomerCreate,
    "products": ProductInput}
UPDATE_INPUT: dict[str, InputModel] = {
    "contacts": ContactUpdate, "leads": LeadInput, "customers": CustomerUpdate,
    "products": ProductInput, "invoices": InvoiceUpdate}
#: The keys of the JSON object that ``contacts update`` reads (the service's update
#: input; ``contact``, the list id, is optional: ID names the list).
CONTACT_UPDATE_KEYS = ("contact", "data")


def actions_of(name: str) -> tuple[str, ...]:
    """The actions of the area ``name``: those of ``ACTIONS`` its library class has."""
    return tuple(action for action in ACTIONS if hasattr(AREAS[name], action))


async def cmd_resource(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """One action of a resource area (``args.command``), its answer as JSON."""
    await RUN[args.action](getattr(client, args.command), args, env)
    return EXIT_OK


async def list_records(area: Any, args: argparse.Namespace, env: Environment) -> None:
    """``AREA list``: every record."""
    print_json(await area.list(), env.stdout)


async def get_record(area: Any, args: argparse.Namespace, env: Environment) -> None:
    """``AREA get ID``: one record."""
    print_json(await area.get(args.id), env.stdout)


async def create_record(area: Any, args: argparse.Namespace, env: Environment) -> None:
    """``AREA create --json FILE|-``: the created record, as the service answered it."""
    record = read_model(CREATE_INPUT[args.command], args.json, await read_input(args.json))
    with not_safe_to_repeat(env, may_have_been_created(args.command, env)):
        made = await area.create(record)
    print_json(made, env.stdout)


async def update_record(area: Any, args: argparse.Namespace, env: Environment) -> None:
    """``AREA update ID --json FILE|-``: the record as the service answered the change."""
    data = await read_input(args.json)
    if args.command == "contacts":
        change: Any = contact_records(args.id, args.json, data)
    else:
        change = read_model(UPDATE_INPUT[args.command], args.json, data)
    with not_safe_to_repeat(env, may_have_been_changed(args.command, args.id, env)):
        changed = await area.update(args.id, change)
    print_json(changed, env.stdout)


async def delete_record(area: Any, args: argparse.Namespace, env: Environment) -> None:
    """``AREA delete ID --yes``: deleted, said on stderr (stdout stays empty)."""
    record = f"{RECORD[args.command]} {args.id}"
    if not args.yes:
        raise UsageProblem(f"deleting the {record} cannot be undone: add --yes to delete it")
    with not_safe_to_repeat(env, may_have_been_deleted(record)):
        await area.delete(args.id)
    env.say(f"deleted the {record}")


RUN: dict[str, Callable[[Any, argparse.Namespace, Environment], Awaitable[None]]] = {
    "list": list_records, "get": get_record, "create": create_record,
    "update": update_record, "delete": delete_record}


def may_have_been_created(name: str, env: Environment) -> str:
    """What an unanswered create means: running it again may make a second record."""
    return (f"the {RECORD[name]} may have been created: the request may have reached the "
            f"service, but no answer saying what it did came back. Look for it "
            f"({env.command(name, 'list')}) before creating it again, as running this "
            f"command again may create it twice")


def may_have_been_changed(name: str, id: str, env: Environment) -> str:
    """What an unanswered update means: unknown, but sending it again is harmless."""
    look = env.command(name, "get", id) if "get" in actions_of(name) \
        else env.command(name, "list")
    return (f"the {RECORD[name]} {id} may have been changed: the request may have reached "
            f"the service, but no answer saying what it did came back. Read it ({look}) "
            f"to see; running this command again is safe: it sends the same change")


def may_have_been_deleted(record: str) -> str:
    """What an unanswered delete means: unknown; a delete sent again finds none if the
    first went through."""
    return (f"the {record} may have been deleted: the request may have reached the "
            f"service, but no answer saying what it did came back. Running this command "
            f"again is safe: if the first delete went through, it answers not found")


async def read_input(source: str) -> Any:
    """The JSON value of ``--json SOURCE`` (a file, or ``-``: standard input)."""
    where = f"--json {source}"
    if source == "-":
        text = await asyncio.to_thread(read_stdin, where)
    else:
        text = await asyncio.to_thread(read_text_file, where, source)
    return parse_json(where, text)


def read_stdin(where: str) -> str:
    """Standard input to its end, as UTF-8 text. A terminal is refused: the command would
    sit waiting for JSON typed by hand (pipe it in, or give a file)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        raise UsageProblem(f"{where}: standard input is a terminal: pipe the JSON object "
                           f"in (... | asyncsdk ... --json -), or give a file")
    binary = getattr(stream, "buffer", None)  # bytes, so that UTF-8 is checked as in a file
    return stream.read() if binary is None else utf8_text(where, binary.read())


def parse_json(where: str, text: str) -> Any:
    """``text`` as JSON; a key given twice, NaN or Infinity are refused (each would send
    something other than what the text seems to say)."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys(where),
                          parse_constant=not_json(where))
    except json.JSONDecodeError as exc:
        raise UsageProblem(f"{where}, line {exc.lineno} column {exc.colno}: not JSON "
                           f"({exc.msg})") from None


def unique_keys(where: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` hook: the object, or ``UsageProblem`` for a key given twice."""

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        made: dict[str, Any] = {}
        for key, value in pairs:
            if key in made:
                raise UsageProblem(f"{where}: the key {key!r} is given twice in one object")
            made[key] = value
        return made

    return build


def not_json(where: str) -> Callable[[str], Any]:
    """A ``json.loads`` hook for NaN and Infinity: refused, JSON has no such numbers."""

    def refuse(constant: str) -> Any:
        raise UsageProblem(f"{where}: {constant} is not a JSON number")

    return refuse


def read_model(model: InputModel, source: str, data: Any) -> Any:
    """``model.from_dict(data)``; its refusal names ``--json SOURCE`` too."""
    try:
        return model.from_dict(data)
    except InvalidInputError as exc:
        raise InvalidInputError(f"--json {source}: {exc}", field=exc.field) from None


def contact_records(id: str, source: str, data: Any) -> list[Any]:
    """The records of ``contacts update``: ``data`` is the service's update input
    (``{"data": [record, ...]}``; a ``contact`` in it must name the list ID), each
    record read as a ``ContactUpdate``."""
    where = f"--json {source}"
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: expected an object with the key \"data\" (a list "
                                f"of records), got {json_type(data)}")
    unknown = [key for key in data if key not in CONTACT_UPDATE_KEYS]
    if unknown:
        raise InvalidInputError(f"{where}: {unknown[0]!r} is not a field of a contact list "
                                f"update (its fields: contact, data)", field=unknown[0])
    if "contact" in data and not same_list(id, data["contact"]):
        raise InvalidInputError(f"{where}: contact: expected the list id given as ID "
                                f"({id!r}), or no contact key, got {data['contact']!r}",
                                field="contact")
    records = data.get("data")
    if not isinstance(records, list) or not records:
        got = json_type(records) if "data" in data else "no data key"
        raise InvalidInputError(f"{where}: data: expected a list of at least one record "
                                f"(each with uuid, email, mobile), got {got}", field="data")
    return [contact_record(where, index, record) for index, record in enumerate(records)]


def contact_record(where: str, index: int, record: Any) -> Any:
    """One record of ``contacts update``, its refusal placed at ``data[INDEX]``."""
    try:
        return ContactUpdate.from_dict(record)
    except InvalidInputError as exc:
        field = f"data[{index}]" + (f".{exc.field}" if exc.field else "")
        raise InvalidInputError(f"{where}: data[{index}]: {exc}", field=field) from None


def same_list(id: str, contact: Any) -> bool:
    """Whether the body's ``contact`` names the list ``id`` (an int is its digits)."""
    if isinstance(contact, bool):
        return False
    if isinstance(contact, int):
        return id.isascii() and id.isdigit() and int(id) == contact
    return isinstance(contact, str) and contact == id


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, for a refusal."""
    names = {type(None): "null", bool: "true/false", str: "a string", list: "a list",
             dict: "an object"}
    if isinstance(value, list) and not value:
        return "an empty list"
    return names.get(type(value), "a number")
