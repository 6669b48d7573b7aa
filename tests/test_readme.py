"""Every snippet of the README works as written: the Python blocks run against a sandbox
(their printed lines checked against the ``# -> ...`` comments; a block that is a script
as it stands runs as one, in a process of its own with no event loop around it, and the
text names every placeholder the test fills in for it), the pytest examples run
in a user's project, the shell commands parse, and the first command prints what the
README shows."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import asyncsdk
from asyncsdk.cli.app import build_parser
from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(language: str, text: str = README) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


PYTHON = blocks("python")
SNIPPETS = [b for b in PYTHON if "def test_" not in b]
PYTEST_EXAMPLES = [b for b in PYTHON if "def test_" in b]


def expected_output(code: str) -> list[str]:
    """The ``# -> text`` comments of the snippet's print lines, in order."""
    return [m.group(1).rstrip() for m in re.finditer(r"print\(.*# -> (.*)$", code, re.M)]


#: What the snippets hold in place of the sandbox's values: (in the code, as the README's
#: text names it, the sandbox's attribute). The text must name each, or a reader runs the
#: Quickstart against a placeholder (issue 38: it named the ``...`` only).
PLACEHOLDERS = (
    ('api_key="..."', "`...`", "api_key"),
    ('username="..."', "`...`", "username"),
    ('"https://api.example.com"', "`https://api.example.com`", "base_url"),
)


def fill_placeholders(code: str, sb: Sandbox) -> str:
    for placeholder, _, attribute in PLACEHOLDERS:
        name = placeholder.split("=")[0] + "=" if "=" in placeholder else ""
        code = code.replace(placeholder, f'{name}"{getattr(sb, attribute)}"')
    return code


def test_the_readme_says_to_replace_every_placeholder_its_snippets_hold() -> None:
    said = re.search(r"`asyncsdk sandbox` serves it and prints (.*?)\. [A-Z]",
                     " ".join(README.split()))
    assert said is not None, "the README says what `asyncsdk sandbox` prints, to use"
    for placeholder, shown, _ in PLACEHOLDERS:
        if placeholder in section("Quickstart"):
            assert shown in said.group(1), f"the text never says to replace {shown}"


def whole_program(code: str) -> bool:
    """Whether ``code`` is a script as it stands (no ``await`` outside a coroutine): a
    reader runs it with ``python``, outside any event loop, and so must the test."""
    try:
        compile(code, "README.md", "exec")
    except SyntaxError:
        return False
    return True


async def close_leftovers(namespace: dict[str, Any], keep: object) -> None:
    for value in list(namespace.values()):
        if value is keep:
            continue
        if isinstance(value, (asyncsdk.Client, aiohttp.ClientSession)) and not value.closed:
            await value.close()


def sandbox_the_readme_names() -> dict[str, Any]:
    """The options of the ``Sandbox(...)`` that the README says its snippets run against."""
    said = re.search(r"Every snippet of this page runs as written against the sandbox "
                     r"with its demo data:.*?`(Sandbox\((.*?)\))` in Python",
                     " ".join(README.split()))
    assert said is not None, "the README says what its snippets run against"
    call = ast.parse(said.group(1), mode="eval").body
    assert isinstance(call, ast.Call) and not call.args
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}


def test_the_readme_names_the_sandbox_its_snippets_need() -> None:
    # a plain Sandbox() has no invoice to list and no verified sender
    assert sandbox_the_readme_names() == {"demo_data": True}
    assert "demo_data=True" in section("The sandbox: the whole service in-process")
    assert "verified_domains=" in section("The sandbox: the whole service in-process")


@pytest.fixture(scope="module")
def server() -> Any:
    # exactly the sandbox the README tells the reader to start, nothing more
    with threaded_sandbox(**sandbox_the_readme_names()) as sb:
        yield sb


def test_the_readme_has_python_snippets() -> None:
    assert len(SNIPPETS) >= 8 and len(PYTEST_EXAMPLES) >= 2


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_python_snippet_runs_and_prints_what_it_says(
    code: str, server: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in (("API_KEY", server.api_key), ("USERNAME", server.username),
                        ("BASE_URL", server.base_url)):
        monkeypatch.setenv(f"ASYNCSDK_{name}", value)
    if "my-ca.pem" in code:
        trustme = pytest.importorskip("trustme")
        trustme.CA().cert_pem.write_to_path(str(tmp_path / "my-ca.pem"))
    saved: dict[str, Any] = {}
    namespace: dict[str, Any] = {
        "__name__": "readme", "asyncsdk": asyncsdk,
        "url": server.host_file("email,name\nann@example.com,Ann\nx@mailinator.com,X\n"),
        "load_state": lambda: saved.get("job"),
        "save_state": lambda data: saved.update(job=data),
        "clear_state": lambda: saved.clear(),
    }
    source = fill_placeholders(code, server)
    compiled = compile(source, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    printed = io.StringIO()

    async def in_a_loop() -> None:
        async with server.client() as client:
            namespace["client"] = client
            result = eval(compiled, namespace)  # noqa: S307 - the README's own code
            if inspect.iscoroutine(result):
                await result
            await close_leftovers(namespace, client)

    if whole_program(source):  # as a reader runs it: a script of its own, no loop around
        done = subprocess.run([sys.executable, "-W", "default::ResourceWarning", "-c", source],
                              capture_output=True, text=True, cwd=tmp_path, check=False,
                              timeout=120)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        printed.write(done.stdout)
    else:
        with contextlib.redirect_stdout(printed):
            asyncio.run(in_a_loop())
    commented = [line for line in code.splitlines() if re.match(r"\s*print\(.*#", line)]
    assert all("# -> " in line for line in commented), "a print's comment shows its output"
    expected = expected_output(code)
    if expected:
        assert printed.getvalue().splitlines() == expected


@pytest.mark.parametrize("code", PYTEST_EXAMPLES,
                         ids=[f"pytest{i}" for i in range(len(PYTEST_EXAMPLES))])
def test_pytest_example_passes_in_a_users_project(code: str, tmp_path: Path) -> None:
    (tmp_path / "test_readme_example.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-o", "asyncio_mode=auto", "-W", "error::ResourceWarning"],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{code.count('def test_')} passed" in done.stdout


def shell_commands() -> list[str]:
    return [line.strip() for block in blocks("sh") for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def asyncsdk_arguments(command: str) -> list[str]:
    """The arguments of the ``asyncsdk`` part of a shell line."""
    part = command.split("&&")[-1].split("#")[0]
    words = shlex.split(part)
    if words and words[-1] == "&":  # started in the background
        words = words[:-1]
    assert words[0] == "asyncsdk", command
    return words[1:]


def test_try_it_is_two_commands_one_for_the_job_one_for_the_tests() -> None:
    commands = blocks("sh", section("Try it"))
    assert len(commands) == 2
    job, tests = (c.strip() for c in commands)
    assert "\n" not in job and "\n" not in tests
    assert "pip install -e . &&" in job  # the default install: progress needs no extra
    assert asyncsdk_arguments(job)[:2] == ["--sandbox", "validate"]
    assert "pip install -e '.[test]'" in tests and tests.endswith("python -m pytest -n auto")


def test_every_asyncsdk_command_of_the_readme_parses() -> None:
    lines = [c for c in shell_commands() if re.search(r"(^|&& )asyncsdk ", c)]
    assert len(lines) >= 4
    parser = build_parser()
    for line in lines:
        parser.parse_args(asyncsdk_arguments(line))  # exits (fails the test) if malformed


def test_the_first_command_prints_what_the_readme_shows(tmp_path: Path) -> None:
    try_it = section("Try it")
    job = blocks("sh", try_it)[0].strip()
    shown = blocks("", try_it)[0].splitlines()
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "emails.csv", tmp_path / "examples" / "emails.csv")
    done = subprocess.run([sys.executable, "-m", "asyncsdk", *asyncsdk_arguments(job)],
                          capture_output=True, text=True, cwd=tmp_path, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert [*done.stderr.splitlines(), *done.stdout.splitlines()] == shown
    assert (tmp_path / "results.csv").is_file()


def test_the_supported_line_states_what_ci_proves() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    said = re.search(r"Supported: Python (3\.\d+) to (3\.\d+)\. CI \(`\.ci/run`\) proves each",
                     README)
    assert said is not None
    oldest, newest = (int(v.split(".")[1]) for v in said.groups())
    proved = set(re.findall(r"for version in ([\d. ]+); do", ci)[0].split())
    assert {f"3.{m}" for m in range(oldest, newest + 1)} <= proved
    assert "apt-get" not in ci and "readme_way python3 .venv" in ci


# --- what the page says of the public names and the errors ------------------------------
REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("module", ["asyncsdk", "asyncsdk.testing", "asyncsdk.pacing"])
def test_every_public_name_is_in_the_reference(module: str) -> None:
    exported = __import__(module, fromlist=["__all__"]).__all__
    missing = [name for name in exported
               if not re.search(rf"`{re.escape(name)}[`(]", REFERENCE)]
    assert missing == [], f"docs/reference.md does not list {module}'s {missing}"
    assert "docs/reference.md" in section("Reference")


def error_table() -> list[tuple[str, str, str | None]]:
    """(class, its row's text, the class it is shown under: None for a top row) for
    every class the Errors table names."""
    rows = [line.split("|")[1:3] for line in section("Errors").splitlines()
            if line.startswith("| ") and "`" in line.split("|")[1]]
    named: list[tuple[str, str, str | None]] = []
    parent: str | None = None
    for first, when in rows:
        row_under = first.strip().startswith("↳")  # the whole row is under the last top
        for part in first.split(", "):
            name = re.match(r"\s*(↳ )?`(\w+)`", part)
            if name is None:
                continue
            under = row_under or name.group(1) is not None
            named.append((name.group(2), first + "|" + when, parent if under else None))
            if not under:
                parent = name.group(2)
    return named


def test_the_error_table_names_every_public_exception_under_its_base() -> None:
    table = error_table()
    exceptions = {name for name in asyncsdk.__all__
                  if isinstance(getattr(asyncsdk, name), type)
                  and issubclass(getattr(asyncsdk, name), BaseException)}
    assert {name for name, _, _ in table} | {"SDKError"} == exceptions
    for name, _, parent in table:
        cls = getattr(asyncsdk, name)
        base = getattr(asyncsdk, parent) if parent else asyncsdk.SDKError
        assert cls.__mro__[1] is base, f"{name} is shown under {parent or 'SDKError'}"


#: What the Errors table quotes that is no attribute of its classes.
NOT_ATTRIBUTES = {"fail", "close", "wait", "deadline"}


def test_the_error_table_names_attributes_its_classes_have() -> None:
    """Each `attribute` a row quotes is there on an instance of each class it names
    (``field``, ``retry_after``, ``may_have_been_sent``, ``job_id``, ...), and each
    class it says a ``may_have_been_sent`` of has that value."""
    made: dict[str, BaseException] = {
        "JobFailedError": asyncsdk.JobFailedError("x", job_id=1),
        "JobTimeoutError": asyncsdk.JobTimeoutError("x", job_id=1),
    }
    for name, row, _ in error_table():
        cls = getattr(asyncsdk, name)
        exc = made.get(name) or cls("x")
        quoted = set(re.findall(r"`([a-z_]+)`", row)) - NOT_ATTRIBUTES
        for attribute in quoted - {n.lower() for n in asyncsdk.__all__}:
            if attribute == "retry_after" and name == "NotFoundError":
                continue  # quoted beside RateLimitError and ServerError, in their row
            assert hasattr(exc, attribute), f"{name} has no {attribute!r} ({row})"
    assert asyncsdk.APIError("x").may_have_been_sent is False
    assert asyncsdk.ServerError("x").may_have_been_sent is True
    assert asyncsdk.ResponseDecodeError("x").may_have_been_sent is True
    assert issubclass(asyncsdk.InvalidInputError, ValueError)
    assert issubclass(asyncsdk.UsageError, RuntimeError)


def help_of(*words: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*words, "--help"])
    return out.getvalue()


def commands_in_help(*words: str) -> set[str]:
    """The subcommands ``asyncsdk WORDS --help`` lists (none: a command of its own)."""
    listed = re.search(r"^  (COMMAND|ACTION)\n(.*?)(?:\n\n|\Z)", help_of(*words), re.S | re.M)
    if listed is None:
        return set()
    return set(re.findall(r"^    (\S+)", listed.group(2), re.M))


def test_the_command_overview_lists_every_command_and_only_those() -> None:
    overview = [line for line in blocks("", section("Command line"))[0].splitlines()
                if re.match(r"  [a-z]", line)]  # a command's line, not the global flags
    shown: set[tuple[str, str]] = set()
    for line in overview:
        words = line.split()
        actions = words[1].split("|") if len(words) > 1 and re.fullmatch(
            r"[a-z]+(\|[a-z]+)*", words[1]) and words[0] != "check-many" else [""]
        for command in words[0].split("|"):
            shown.update((command, action) for action in actions)
    real = {(command, action) for command in commands_in_help()
            for action in (commands_in_help(command) or {""})}
    assert shown == real
