"""The documentation's commands and snippets, run as written against a live standalone stack.

See tests/support/docs/blocks.py for the marking. One session per document (a document marked
``<!-- session: README.md -->`` continues README.md's): its blocks run in order, every
failure is collected, and the test fails at the end listing each failing block with what it
printed. Blocks marked ``needs`` are listed as skipped with their reason.
"""

from __future__ import annotations

import pytest

from tests.support.docs.blocks import (
    CHECKED_LANGS,
    PYTHON_LANGS,
    Block,
    Document,
    any_line_matches,
    documents,
    output_matches,
    parse,
    shell_commands,
)
from tests.support.docs.session import DocSession, SessionUnavailableError

DOCS = [parse(path) for path in documents()]


def _sessions() -> dict[str, list[Document]]:
    sessions: dict[str, list[Document]] = {}
    for doc in DOCS:
        if any(b.marker == "run" for b in doc.blocks):
            sessions.setdefault(doc.session or doc.path, []).append(doc)
    return sessions


SESSIONS = _sessions()
NEEDS = [b for doc in DOCS for b in doc.blocks if b.marker == "needs"]


def test_every_command_block_is_marked() -> None:
    unmarked = [
        b.where
        for doc in DOCS
        for b in doc.blocks
        if b.lang in CHECKED_LANGS and b.marker not in ("run", "needs")
    ]
    assert not unmarked, f"sh/python blocks without <!-- run --> or <!-- needs: ... -->: {unmarked}"
    empty = [b.where for b in NEEDS if not b.reason]
    assert not empty, f"<!-- needs: --> without saying what is needed: {empty}"
    misplaced = [
        b.where
        for doc in DOCS
        for b in doc.blocks
        if b.marker == "run" and b.lang not in CHECKED_LANGS
    ]
    assert not misplaced, f"<!-- run --> on a block that is neither sh nor python: {misplaced}"
    for doc in DOCS:
        if doc.session is not None:
            assert doc.session in SESSIONS, f"{doc.path}: no session {doc.session}"


@pytest.mark.parametrize("block", NEEDS, ids=[b.where for b in NEEDS])
def test_block_needing_more(block: Block) -> None:
    pytest.skip(f"{block.where} needs {block.reason}")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", list(SESSIONS))
def test_documented_blocks_run(name: str) -> None:
    try:
        session = DocSession()
    except SessionUnavailableError as exc:
        pytest.skip(str(exc))
    failures: list[str] = []
    try:
        for block in (b for doc in SESSIONS[name] for b in doc.blocks if b.marker == "run"):
            try:
                failures.extend(_run_block(session, block))
            except SessionBrokenError as exc:
                failures.append(f"{exc}\n(the session's remaining blocks did not run)")
                break
    finally:
        failures.extend(f"stopping the session: {p}" for p in session.close())
    assert not failures, f"{len(failures)} documented block(s) failed:\n\n" + "\n\n".join(failures)


class SessionBrokenError(Exception):
    """A long-running process the following blocks need did not start."""


def _run_block(session: DocSession, block: Block) -> list[str]:
    if block.lang in PYTHON_LANGS:
        answer = session.python(block.text, block.where)
        if not answer["ok"]:
            return [f"{block.where} (python) raised:\n{answer['error']}\n{answer['stdout']}"]
        if block.output is not None and not output_matches(block.output, str(answer["stdout"])):
            return [_mismatch(block.where, block.output, str(answer["stdout"]))]
        return []
    failures = []
    out = ""
    commands = shell_commands(block)
    for command in commands:
        where = f"{block.where} `{command.line}`"
        if command.background:
            try:
                session.start(command.line)
            except AssertionError as exc:
                raise SessionBrokenError(f"{where} did not start:\n{exc}") from None
            continue
        status, out, err = session.run(command.line)
        if status != 0:
            failures.append(f"{where} exited with {status}:\n{out}{_stderr(err)}")
        elif command.whole and command.expected is not None:
            if not output_matches(command.expected, out):
                failures.append(_mismatch(where, command.expected, out))
        elif command.expected is not None and not any_line_matches(command.expected, out):
            failures.append(_mismatch(where, command.expected, out))
    single = len(commands) == 1 and not failures
    if single and block.output is not None and not output_matches(block.output, out):
        failures.append(_mismatch(block.where, block.output, out))
    return failures


def _stderr(err: str) -> str:
    tail = "\n".join(err.splitlines()[-60:])
    return f"\n--- stderr\n{tail}" if tail else ""


def _mismatch(where: str, expected: str, actual: str) -> str:
    return f"{where}: output does not match\n--- expected\n{expected}\n--- got\n{actual}"
