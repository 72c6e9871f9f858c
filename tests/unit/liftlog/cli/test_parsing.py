"""The command line as a user types it: options anywhere, help that states defaults,
``--version``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest

from liftlog.cli import build_parser
from liftlog.cli.parsing import parse_command_line
from spark_log import __version__


def parse(*argv: str) -> argparse.Namespace:
    return parse_command_line(build_parser(), list(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ["publish", "--key", "customer-7", "orders", '{"id": 2}', "v2"],  # options before
        ["publish", "orders", "--key", "customer-7", '{"id": 2}', "v2"],  # between
        ["publish", "orders", '{"id": 2}', "--key", "customer-7", "v2"],  # between values
        ["publish", "orders", '{"id": 2}', "v2", "--key", "customer-7"],  # after
    ],
)
def test_publish_options_may_stand_anywhere(argv: list[str]):
    args = parse(*argv)
    assert (args.stream, args.values, args.key) == ("orders", ['{"id": 2}', "v2"], "customer-7")


def test_nested_commands_take_intermixed_options_too():
    args = parse("stream", "create", "--partitions", "3", "orders", "--subject", "orders.in")
    assert (args.name, args.subject, args.partitions) == ("orders", "orders.in", 3)
    args = parse("tail", "--partition", "1", "orders", "-n", "5", "--partition", "0")
    assert (args.stream, args.partition, args.lines) == ("orders", [1, 0], 5)


def test_unknown_command_and_missing_positional_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as raised:
        parse("strem", "list")
    assert raised.value.code == 2
    assert "invalid choice: 'strem'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("publish", "--key", "k")
    assert "stream" in capsys.readouterr().err


def test_an_incomplete_command_stops_at_its_level():
    assert not hasattr(parse(), "run")
    args = parse("stream")
    assert not hasattr(args, "run") and args.command_parser.prog == "liftlog stream"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def _options() -> Iterator[tuple[str, argparse.Action]]:
    for parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.option_strings and not isinstance(
                action, (argparse._HelpAction, argparse._VersionAction)
            ):
                yield f"{parser.prog} {action.option_strings[-1]}", action


def test_every_option_says_what_it_does_and_its_default():
    checked = 0
    for name, action in _options():
        assert action.help and len(action.help) > 10, f"{name} has no help"
        assert "default" in action.help or action.required, f"{name}: no default stated"
        if action.default not in (None, False, argparse.SUPPRESS):
            assert str(action.default) in action.help, f"{name}: help lacks {action.default!r}"
        checked += 1
    assert checked > 50


def test_version_prints_the_package_version():
    result = subprocess.run(
        [sys.executable, "-m", "liftlog.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"liftlog {__version__}"
