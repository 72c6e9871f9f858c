"""Error messages name the interface in use: JSON fields over REST, flags in the CLI."""

from __future__ import annotations

import argparse

import pytest

from liftlog.cli import _parser_and_flags
from liftlog.cli.flags import to_cli_words
from liftlog.cli.stream import create_body
from spark_log.errors import InvalidRequestError
from spark_log.spec_field import declared_fields
from spark_log.stream_spec import StreamSpec

FLAGS = _parser_and_flags()[1]


def spec_error(**fields: object) -> str:
    with pytest.raises(InvalidRequestError) as raised:
        StreamSpec(name="s", **fields)  # type: ignore[arg-type]
    return raised.value.message


def test_rest_messages_name_json_fields_and_the_cli_names_its_flags():
    message = spec_error(subject="orders.>", partitions=2)
    assert '"load_balance": true' in message and "load_balance=true" not in message
    assert to_cli_words(message, FLAGS).endswith("use --load-balance or a subject without '>'")


def test_field_values_and_bare_fields_become_flags():
    message = spec_error(subject="x", compaction_interval_s=5.0)
    assert (
        to_cli_words(message, FLAGS) == "--compaction-interval-s needs compaction: set --compaction"
    )
    message = spec_error(subject="x", replication_factor=2, min_isr=3)
    assert to_cli_words(message, FLAGS) == "--min-isr must be between 1 and --replication-factor"
    assert to_cli_words('set "min_isr": 2', FLAGS) == "set --min-isr 2"


def test_text_without_known_fields_is_left_alone():
    text = 'record "abc" is too large; "no_such_field": 3'
    assert to_cli_words(text, FLAGS) == text


def test_every_spec_field_a_request_may_set_has_a_create_flag():
    """A field declared in the spec reaches ``stream create`` by its own flag; a new field
    without one fails here."""
    create = _stream_create_parser()
    flags = {a.dest for a in create._actions}
    requested = {f.name for f, declared in declared_fields(StreamSpec) if declared.requested}
    assert requested <= flags


def test_the_create_body_holds_the_flags_given_and_leaves_the_rest_to_the_server():
    args = _stream_create_parser().parse_args(
        ["orders", "--subject", "orders", "--compaction", "--retention-ms", "5"]
    )
    assert create_body(args) == {
        "name": "orders",
        "subject": "orders",
        "partitions": 1,
        "replication_factor": 1,
        "compaction": True,
        "retention_ms": 5,
    }


def _stream_create_parser() -> argparse.ArgumentParser:
    parser = _parser_and_flags()[0]
    stream = next(a for a in parser._subparsers._actions if a.choices).choices["stream"]
    return next(a for a in stream._subparsers._actions if a.choices).choices["create"]
