"""Error messages name the interface in use: JSON fields over REST, flags in the CLI."""

from __future__ import annotations

import pytest

from liftlog.cli import _parser_and_flags
from liftlog.cli.flags import to_cli_words
from spark_log.errors import InvalidRequestError
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
