"""``asyncsdk AREA create|update|delete``: the write commands of the resource areas, each
where the library's area has the operation. Input is one JSON object (a file or stdin)
read by the model's own ``from_dict``; bad input is one line, exit 2, nothing sent; an
answer that never came is exit 3, saying what may have happened."""

from __future__ import annotations

import collections.abc
import datetime as dt
import io
import json
import signal
import typing
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cli_support import asyncsdk, environment, run, start, wait_until

import asyncsdk as sdk
from asyncsdk.cli.app import build_parser
from asyncsdk.cli.resources import AREAS, CREATE_INPUT, UPDATE_INPUT, actions_of
from asyncsdk.testing import Sandbox

DEMO_UUID = "00000000-0000-4000-8000-000000000001"  # the demo's first contact record
LEAD = sdk.LeadInput(name="Ann Lee", email="ann@example.com", company="Acme",
                     industry=sdk.Industry.BANKS, source=sdk.LeadSource.TRADE_SHOW,
                     funnel="Default", status=1, rating=sdk.Rating.ACTIVE)
#: A valid create input of each area that has create.
CREATES: dict[str, Any] = {
    "contacts": sdk.ContactListCreate(name="Newsletter", is_email=True, emaillist=[
        sdk.ContactInput(email="ann@example.com", mobile=919800000001,
                         dob=dt.date(1990, 4, 5), customer_type=1)]),
    "leads": LEAD,
    "customers": sdk.CustomerCreate(customer_type=sdk.CustomerType.BUSINESS,
                                    first_name="Ann", email="ann@example.com"),
    "products": sdk.ProductInput(name="Widget", selling_price=Decimal("12.5"), unit=sdk.Unit.KG),
}
#: A valid update input of each area, as the JSON object the command reads.
UPDATES: dict[str, dict[str, Any]] = {
    "contacts": {"data": [sdk.ContactUpdate(uuid=DEMO_UUID, email="ada@example.com",
                                            mobile=447700900001, city="Pune").to_dict()]},
    "leads": LEAD.to_dict(),
    "customers": sdk.CustomerUpdate(email="ann@example.com", last_name=None).to_dict(),
    "products": sdk.ProductInput(name="Gadget", selling_price=Decimal("3.10")).to_dict(),
    "invoices": sdk.InvoiceUpdate(due_date=dt.date(2024, 3, 31), productinvoices=[
        sdk.InvoiceLine(products=1, quantity=Decimal(2), rate=Decimal("12.50"))]).to_dict(),
}
WRITES = ("POST", "PUT", "DELETE")


def write_json(value: Any, name: str = "in.json") -> str:
    """``value`` as JSON in ``name`` (in the test's working directory); the name."""
    Path(name).write_text(json.dumps(value), encoding="utf-8")
    return name


def give_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """``text`` as this process's standard input (a pipe, not a terminal)."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def writes(sb: Sandbox) -> list[Any]:
    """The requests the sandbox received that would change something."""
    return [r for r in sb.requests if r.method in WRITES]


# --- what each area has, as the library has it ---------------------------------------


@pytest.mark.parametrize("name", sorted(AREAS))
def test_each_area_has_the_actions_the_readme_lists(name: str) -> None:
    # README "Resources": invoices have only list, update and delete.
    expected = (("list", "update", "delete") if name == "invoices"
                else ("list", "get", "create", "update", "delete"))
    assert actions_of(name) == expected
    parser = build_parser()
    for action in {"get", "create"} - set(expected):
        with pytest.raises(SystemExit) as stopped:
            parser.parse_args([name, action, "1"])
        assert stopped.value.code == 2


@pytest.mark.parametrize("name", sorted(CREATE_INPUT))
def test_create_reads_the_model_the_library_create_takes(name: str) -> None:
    hints = typing.get_type_hints(AREAS[name].create)
    assert CREATE_INPUT[name] in hints.values()


@pytest.mark.parametrize("name", sorted(UPDATE_INPUT))
def test_update_reads_the_model_the_library_update_takes(name: str) -> None:
    hints = typing.get_type_hints(AREAS[name].update)
    taken = (collections.abc.Sequence[sdk.ContactUpdate] if name == "contacts"
             else UPDATE_INPUT[name])
    assert taken in hints.values()


# --- create --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CREATES))
def test_create_sends_the_model_and_prints_the_answer(name: str, server: Sandbox) -> None:
    model = CREATES[name]
    code, out, err = run(name, "create", "--json", write_json(model.to_dict()))
    assert code == 0, err
    (sent,) = writes(server)
    assert sent.method == "POST" and sent.json == model.to_dict()
    made = json.loads(out)
    assert made["id"] is not None  # the service's answer, with the id it gave
    again = run(name, "get", str(made["id"]))  # ... and the record is there
    assert json.loads(again[1]) == made


def test_create_reads_standard_input(server: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    give_stdin(monkeypatch, "\ufeff" + LEAD.to_json())  # a byte order mark is dropped
    code, out, err = run("leads", "create", "--json", "-")
    assert code == 0, err
    (sent,) = writes(server)
    assert sent.json == LEAD.to_dict()
    assert json.loads(out)["name"] == "Ann Lee"


def test_create_reads_a_text_only_standard_input(
    server: Sandbox, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(LEAD.to_json()))  # no bytes under it
    code, _, err = run("leads", "create", "--json", "-")
    assert code == 0, err
    assert writes(server)[0].json == LEAD.to_dict()


def test_create_reads_a_real_pipe(server: Sandbox, tmp_path: Path) -> None:
    done = asyncsdk("products", "create", "--json", "-", env=environment(server),
                    cwd=tmp_path, input=CREATES["products"].to_json())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == "Widget"
    assert [r.method for r in writes(server)] == ["POST"]


# --- update --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UPDATES))
def test_update_sends_the_change_and_prints_the_answer(name: str,
                                                       demo_server: Sandbox) -> None:
    code, out, err = run(name, "update", "1", "--json", write_json(UPDATES[name]))
    assert code == 0, err
    (sent,) = writes(demo_server)
    assert sent.method == "PUT" and sent.path.endswith("/1/")
    expected = ({"contact": 1, **UPDATES[name]} if name == "contacts" else UPDATES[name])
    assert sent.json == expected  # contacts: the list id goes into the body as an int
    assert json.loads(out)["id"] == 1


def test_update_reads_standard_input(demo_server: Sandbox,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    give_stdin(monkeypatch, json.dumps(UPDATES["invoices"]))
    code, out, err = run("invoices", "update", "2", "--json", "-")
    assert code == 0, err
    assert json.loads(out)["due_date"] == "2024-03-31"
    (sent,) = writes(demo_server)
    assert sent.path.endswith("/invoices/2/")


def test_contacts_update_takes_the_documented_body_with_its_own_list_id(
    demo_server: Sandbox,
) -> None:
    body = {"contact": 1, **UPDATES["contacts"]}
    code, _, err = run("contacts", "update", "1", "--json", write_json(body))
    assert code == 0, err
    assert writes(demo_server)[0].json == body


# --- delete --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AREAS))
def test_delete_with_yes_deletes(name: str, demo_server: Sandbox) -> None:
    code, out, err = run(name, "delete", "2", "--yes")
    assert code == 0, err
    assert out == ""  # nothing to print: stdout stays empty for a pipe
    assert err.strip().splitlines() == [f"asyncsdk: deleted the {RECORDS[name]} 2"]
    (sent,) = writes(demo_server)
    assert sent.method == "DELETE" and sent.path.endswith("/2/")
    _, listed, _ = run(name, "list")
    assert [r["id"] for r in json.loads(listed)] == [1]


RECORDS = {"contacts": "contact list", "leads": "lead", "customers": "customer",
           "products": "product", "invoices": "invoice"}


@pytest.mark.parametrize("name", sorted(AREAS))
def test_delete_without_yes_is_refused_unsent(name: str, demo_server: Sandbox) -> None:
    code, out, err = run(name, "delete", "1")
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "cannot be undone" in err and "--yes" in err
    assert not writes(demo_server)


def test_deleting_a_record_that_is_not_there_is_a_plain_failure(demo_server: Sandbox) -> None:
    code, _, err = run("leads", "delete", "99", "--yes")
    assert code == 1, err
    assert "may have been" not in err


# --- bad input: one line, exit 2, nothing sent ---------------------------------------


@pytest.mark.parametrize(("argv", "text", "says"), [
    (["leads", "create"], "[1, 2]", "expected an object (LeadInput), got list"),
    (["leads", "create"], '"Ann"', "expected an object (LeadInput), got str"),
    (["leads", "create"], "null", "expected an object (LeadInput)"),
    (["contacts", "update", "1"], "[]", 'expected an object with the key "data"'),
    (["leads", "create"], json.dumps({**LEAD.to_dict(), "nmae": "A"}),
     "$.nmae: not a field of LeadInput (its fields: name, email, company"),
    (["customers", "update", "1"], '{"emial": "a@example.com"}',
     "$.emial: not a field of CustomerUpdate (its fields: "),
    (["contacts", "update", "1"], '{"records": []}',
     "'records' is not a field of a contact list update (its fields: contact, data)"),
    (["products", "create"], '{"name": "W", "selling_price": "cheap"}',
     "$.selling_price: expected a decimal number, got 'cheap'"),
    (["invoices", "update", "1"], '{"due_date": 5}', "$.due_date"),
    (["contacts", "update", "1"], json.dumps({"data": [{"uuid": DEMO_UUID,
                                                        "email": "a@example.com"}]}),
     "data[0]: ContactUpdate at $.mobile: missing (required)"),
    (["contacts", "update", "1"], '{"data": []}', "data: expected a list of at least one"),
    (["contacts", "update", "1"], json.dumps({"contact": 2, **UPDATES["contacts"]}),
     "contact: expected the list id given as ID ('1')"),
    (["invoices", "update", "1"], '{"id": 2}', "id: expected the invoice's id in the path"),
    (["leads", "update", "a/b"], LEAD.to_json(), "id: expected an int >= 0 or a non-empty"),
    (["products", "update", " 1"], CREATES["products"].to_json(), "id: expected an int >= 0"),
    (["leads", "delete", "a/b", "--yes"], None, "id: expected an int >= 0"),
    (["leads", "create"], '{"name": "A", "name": "B"}', "the key 'name' is given twice"),
    (["products", "create"], '{"name": "W", "selling_price": NaN}', "NaN is not a JSON"),
    (["leads", "create"], '{"name": ', "line 1 column 10: not JSON (Expecting value)"),
])
def test_bad_input_is_one_line_and_nothing_is_sent(
    argv: list[str], text: str | None, says: str, demo_server: Sandbox,
) -> None:
    json_flag = [] if text is None else ["--json", "in.json"]
    if text is not None:
        Path("in.json").write_text(text, encoding="utf-8")
    code, out, err = run(*argv, *json_flag)
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asyncsdk: error: "), err
    assert says in lines[0]
    if text is not None and not says.startswith("id:"):  # an ID's refusal names ID
        assert "--json in.json" in lines[0]  # where the bad input came from
    assert not writes(demo_server)


@pytest.mark.parametrize(("make", "says"), [
    (lambda: None, "--json in.json: no such file"),
    (lambda: Path("in.json").mkdir(), "--json in.json: is a directory"),
    (lambda: Path("in.json").write_bytes(b'{"name": "\xff"}'),
     "--json in.json, line 1: not UTF-8 text"),
])
def test_an_input_file_that_cannot_be_read_is_refused_unsent(
    make: Any, says: str, server: Sandbox,
) -> None:
    make()
    code, out, err = run("leads", "create", "--json", "in.json")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"asyncsdk: error: {says}")
    assert not server.requests


def test_standard_input_that_is_a_terminal_is_refused(
    server: Sandbox, monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())  # it would wait for typing, silently
    code, _, err = run("leads", "create", "--json", "-")
    assert code == 2
    assert "standard input is a terminal" in err
    assert not server.requests


def test_bad_standard_input_is_refused_unsent(server: Sandbox,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    give_stdin(monkeypatch, '{"name": "Ann"')
    code, _, err = run("leads", "create", "--json", "-")
    assert code == 2
    assert err.startswith("asyncsdk: error: --json -, line 1 column 15: not JSON")
    assert not server.requests


# --- answers that never came ---------------------------------------------------------


def test_a_create_whose_answer_was_lost_says_it_may_have_been_created(
    server: Sandbox,
) -> None:
    server.faults.reset("*", method="POST", process=True)  # made, the answer lost
    code, out, err = run("leads", "create", "--json", write_json(LEAD.to_dict()))
    assert code == 3, err
    assert out == "" and "Traceback" not in err
    assert len(writes(server)) == 1  # sent once: a create is never repeated
    assert "the lead may have been created" in err
    assert "asyncsdk leads list" in err and "may create it twice" in err
    _, listed, _ = run("leads", "list")
    assert len(json.loads(listed)) == 1  # it was indeed made


@pytest.mark.parametrize(("argv", "method", "says"), [
    (["leads", "update", "1", "--json", "lead.json"], "PUT",
     "the lead 1 may have been changed"),
    (["invoices", "update", "1", "--json", "invoice.json"], "PUT",
     "the invoice 1 may have been changed"),
    (["customers", "delete", "1", "--yes"], "DELETE", "the customer 1 may have been deleted"),
])
def test_an_update_or_delete_without_an_answer_says_its_outcome_is_unknown(
    argv: list[str], method: str, says: str, demo_server: Sandbox,
) -> None:
    write_json(LEAD.to_dict(), "lead.json")
    write_json(UPDATES["invoices"], "invoice.json")
    demo_server.faults.reset("*", method=method, times=None, process=True)
    code, out, err = run("--max-retries", "1", *argv)
    assert code == 3, err
    assert out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("asyncsdk: error: ") and "Traceback" not in err
    assert lines[1].startswith(f"asyncsdk: {says}")
    assert "running this command again is safe" in lines[1].lower()
    assert len(writes(demo_server)) == 2  # idempotent: the library retried it
    look = "invoices list" if argv[0] == "invoices" else f"{argv[0]} get 1"
    assert argv[1] == "delete" or f"asyncsdk --max-retries 1 {look}" in lines[1]


def test_ctrl_c_while_a_create_is_in_flight_says_it_may_have_been_created(
    server: Sandbox, tmp_path: Path,
) -> None:
    server.faults.delay("*", 60.0, method="POST")
    (tmp_path / "lead.json").write_text(LEAD.to_json(), encoding="utf-8")
    with start("leads", "create", "--json", "lead.json", env=environment(server),
               cwd=tmp_path) as proc:
        wait_until(lambda: bool(writes(server)), "the create at the service")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "the lead may have been created" in err and "interrupted" in err


def test_a_create_answered_with_a_5xx_may_have_been_created(server: Sandbox) -> None:
    server.faults.status("*", 502, method="POST")
    code, _, err = run("products", "create", "--json",
                       write_json(CREATES["products"].to_dict()))
    assert code == 3, err
    assert "the product may have been created" in err


def test_a_refused_update_is_a_plain_failure(demo_server: Sandbox) -> None:
    code, out, err = run("leads", "update", "99", "--json", write_json(LEAD.to_dict()))
    assert code == 1, err
    assert out == "" and "may have been" not in err


def test_no_secret_in_what_a_failed_write_prints(server: Sandbox) -> None:
    server.faults.reset("*", method="POST", process=True)
    code, out, err = run("--api-key", server.api_key, "--username", server.username,
                         "--base-url", server.base_url, "leads", "create", "--json",
                         write_json(LEAD.to_dict()))
    assert code == 3, err
    assert server.api_key not in out + err and server.username not in out + err
    assert "with your --api-key/--username/--base-url" in err  # asked for, not printed


@pytest.mark.parametrize("action", ["create", "update", "delete"])
def test_the_help_of_a_write_tells_its_exit_status_3(
    action: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["leads", action, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status 3" in text
    assert ("--yes" in text) == (action == "delete")
    assert ("--json FILE" in text) == (action != "delete")


@pytest.mark.parametrize(("area", "one"), [("invoices", "an invoice"), ("leads", "a lead"),
                                           ("contacts", "a contact list")])
def test_an_areas_help_names_one_record_as_english_does(
    area: str, one: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """It said "change a invoice"."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([area, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"delete {one} (needs --yes)" in text and f"change {one} from" in text
