"""The code blocks of README.md and docs/*.md, and how each is marked.

The marking (an HTML comment on the line right before a fence; invisible once rendered):

- ``<!-- run -->``: the docs test runs the block (``sh``: each command line; ``python``: the
  whole block in the document's Python session).
- ``<!-- needs: WHAT -->``: the block cannot run on a fresh machine (or in a few seconds); the
  docs test lists it as skipped with WHAT as the reason.
- ``<!-- output -->``: the fence holds the output the ``run`` block just before it prints;
  it is checked.
- ``<!-- session: README.md -->`` anywhere in a document: its blocks run after README.md's,
  against the same stack, working directory and Python session (the document says so in
  its text).

Every shell (``sh``, ``bash``, ...) and ``python`` fence carries ``run`` or ``needs``;
synopses and sample output use other fences (``text``, ``toml``, ``json``, or none).

Inside a ``sh`` block each logical line (``\\`` continues it) is one command, run by bash in
the session's working directory. A command whose comment says ``Ctrl-C stops everything``
is a long-running process: it runs in the background until it prints a line starting with
``ready``, and is stopped with SIGINT after the session's last block. A trailing comment
``# prints TEXT`` is checked against the command's output: some line must match TEXT. A
block whose lines start with ``$ `` shows each command's whole output under it. In expected
output ``<anything>`` matches any text within a line and a line ``...`` any run of lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import REPO

SHELL_LANGS = ("sh", "bash", "shell", "console")
PYTHON_LANGS = ("python", "py", "python3")
CHECKED_LANGS = SHELL_LANGS + PYTHON_LANGS  # every such block carries run or needs
BACKGROUND_COMMENT = "Ctrl-C stops everything"

_MARKER = re.compile(r"^<!--\s*(run|output|needs:(?P<reason>.*?))\s*-->\s*$")
_SESSION = re.compile(r"^<!--\s*session:\s*(?P<doc>\S+)\s*-->\s*$", re.MULTILINE)
_FENCE = re.compile(r"^(?P<fence>```+)(?P<lang>[\w-]*)\s*$")


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass
class Block:
    doc: str  # path relative to the repository
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  # "run", "needs", "output" or None
    reason: str = ""
    output: str | None = None  # the expected output shown right after a run block

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Command:
    line: str  # the command exactly as written (continuations joined by bash itself)
    expected: str | None = None  # whole output ($ blocks) or one line (# prints)
    whole: bool = False
    background: bool = False


@dataclass
class Document:
    path: str
    blocks: list[Block] = field(default_factory=list)
    session: str | None = None  # the document whose session this one continues


def parse(path: Path) -> Document:
    rel = str(path.relative_to(REPO))
    text = path.read_text()
    lines = text.splitlines()
    session = _SESSION.search(text)
    doc = Document(rel, session=session.group("doc") if session else None)
    i = 0
    previous = ""
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, start = opening.group("fence"), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        marker = _MARKER.match(previous)
        kind = reason = None
        if marker:
            kind = "needs" if marker.group(1).startswith("needs:") else marker.group(1)
            reason = (marker.group("reason") or "").strip()
        block = Block(rel, start + 1, opening.group("lang"), "\n".join(body) + "\n", kind)
        block.reason = reason or ""
        if kind == "output" and doc.blocks and doc.blocks[-1].marker == "run":
            doc.blocks[-1].output = block.text
        doc.blocks.append(block)
        previous = ""
    return doc


def shell_commands(block: Block) -> list[Command]:
    """The commands of a ``sh`` block, with what each is expected to print."""
    logical: list[str] = []
    for raw in block.text.splitlines():
        if logical and logical[-1].endswith("\\"):
            logical[-1] += "\n" + raw
        else:
            logical.append(raw)
    if any(line.startswith("$ ") for line in logical):
        commands: list[Command] = []
        for line in logical:
            if line.startswith("$ "):
                commands.append(Command(line[2:], expected="", whole=True))
            elif commands:
                commands[-1].expected = (commands[-1].expected or "") + line + "\n"
        return [_with_comment(c) for c in commands]
    return [
        _with_comment(Command(line))
        for line in logical
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _with_comment(command: Command) -> Command:
    comment = trailing_comment(command.line)
    if comment is not None:
        command.background = BACKGROUND_COMMENT in comment
        if comment.startswith("prints ") and not command.whole:
            command.expected = comment[len("prints ") :].strip()
    return command


def trailing_comment(line: str) -> str | None:
    """The text after an unquoted `` #`` of a shell line (bash's comment rule, simplified)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i + 1 :].strip()
    return None


def _line_pattern(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(<[^<>\s][^<>]*>)", pattern.rstrip())
    regex = "".join(".+?" if p.startswith("<") and p.endswith(">") else re.escape(p) for p in parts)
    return re.compile(regex + r"\s*")


def line_matches(pattern: str, line: str) -> bool:
    return _line_pattern(pattern).fullmatch(line.rstrip()) is not None


def output_matches(expected: str, actual: str) -> bool:
    """Whole-output match: every expected line in order, ``...`` standing for any lines."""
    want = [line.rstrip() for line in expected.strip("\n").splitlines()]
    got = [line.rstrip() for line in actual.strip("\n").splitlines()]
    return _match(want, got)


def _match(want: list[str], got: list[str]) -> bool:
    if not want:
        return not got
    if want[0] == "...":
        return any(_match(want[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and line_matches(want[0], got[0]) and _match(want[1:], got[1:])


def any_line_matches(pattern: str, actual: str) -> bool:
    return any(line_matches(pattern, line) for line in actual.splitlines())
