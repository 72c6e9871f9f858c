"""Intermixed parsing through subcommands: options may come before, between or after
positionals at every level (``liftlog publish orders --key k '{"id": 2}'``).

``argparse.parse_intermixed_args`` refuses parsers with subparsers, and plain ``parse_args``
stops collecting a ``nargs='*'`` positional at the first option. So the command path
(``stream create``) is walked first, each level parsing only its own options, and the leaf
command's parser then parses the rest intermixed.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv`` against ``parser`` and its subcommands, leaf options intermixed.

    ``command_parser`` in the result is the deepest parser reached, so that an incomplete
    command (``liftlog stream``) can print the help of the level it stopped at.
    """
    namespace = argparse.Namespace()
    current, rest = parser, list(argv)
    while (commands := _subcommands(current)) is not None:
        namespace.command_parser = current
        index = _first_positional(rest)
        if index is None:  # no command given: the level's own options (-h, --version) only
            return current.parse_args(rest, namespace)
        name = rest[index]
        if name not in commands.choices:
            current.parse_args(rest[: index + 1], namespace)  # argparse's "invalid choice"
        current.parse_args(rest[:index], namespace)
        current, rest = commands.choices[name], rest[index + 1 :]
    return current.parse_intermixed_args(rest, namespace)


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    """The parser's subcommand action, if it has one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _first_positional(argv: Sequence[str]) -> int | None:
    """Where the subcommand name stands: command levels take only flag options
    (``-h``, ``--version``), so the first token not starting with '-' is the command."""
    for index, token in enumerate(argv):
        if not token.startswith("-"):
            return index
    return None
