"""Error messages in the CLI's words: field names become the flags that set them.

The server names the JSON field in its messages (``use "load_balance": true``), which is what a
REST user types. A CLI user typed ``--load-balance``, so the CLI rewrites field references into
its own flags here, once, from the map its parser defines (no per-message string hacks).
"""

from __future__ import annotations

import argparse
import re

# A JSON field reference in a message: "field": value  or a bare "field".
_FIELD_WITH_VALUE = re.compile(r'"([a-z][a-z0-9_]*)": (true|false|[^\s,;)]+)')
_BARE_FIELD = re.compile(r'"([a-z][a-z0-9_]*)"')


def field_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest → long option string of every option of ``parser`` (``load_balance`` →
    ``--load-balance``)."""
    flags: dict[str, str] = {}
    for action in parser._actions:
        long_options = [s for s in action.option_strings if s.startswith("--")]
        if long_options and action.dest not in (argparse.SUPPRESS, "help"):
            flags.setdefault(action.dest, long_options[0])  # several flags: the first names it
    return flags


def to_cli_words(message: str, flags: dict[str, str]) -> str:
    """``message`` with every JSON field reference the CLI has a flag for replaced by it:
    ``"load_balance": true`` → ``--load-balance``, ``"min_isr": 2`` → ``--min-isr 2``,
    ``"replication_factor"`` → ``--replication-factor``; other text is left alone."""

    def with_value(match: re.Match[str]) -> str:
        field, value = match.group(1), match.group(2)
        flag = flags.get(field)
        if flag is None:
            return match.group(0)
        if value == "true":
            return flag
        return f"{flag} {value}" if value != "false" else f"no {flag}"

    def bare(match: re.Match[str]) -> str:
        return flags.get(match.group(1), match.group(0))

    return _BARE_FIELD.sub(bare, _FIELD_WITH_VALUE.sub(with_value, message))
