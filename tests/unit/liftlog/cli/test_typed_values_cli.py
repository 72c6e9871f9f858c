"""The CLI's typed-value pieces: the ``value_schema`` flags of ``stream create`` and
``alter``, and decoded values printed as JSON."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid

from liftlog.cli.decoded_values import decoded_json, decoded_text
from liftlog.cli.stream import create_body
from liftlog.cli.value_schema_flags import merged_binding
from tests.unit.liftlog.cli.test_flags import _stream_create_parser


def test_the_flags_fill_one_value_schema_object() -> None:
    args = _stream_create_parser().parse_args(
        ["orders", "--subject", "orders", "--value-schema-format", "json",
         "--on-invalid", "dead_letter", "--dead-letter-stream", "orders-dlq"]
    )  # fmt: skip
    assert create_body(args)["value_schema"] == {
        "format": "json",
        "on_invalid": "dead_letter",
        "dead_letter_stream": "orders-dlq",
    }


def test_without_the_flags_the_stream_is_unbound() -> None:
    args = _stream_create_parser().parse_args(["orders", "--subject", "orders"])
    assert "value_schema" not in create_body(args)


def test_an_alter_keeps_the_members_not_given() -> None:
    current = {"subject": "o-value", "format": "json", "on_invalid": "refuse"}
    merged = merged_binding(current, {"on_invalid": "dead_letter", "dead_letter_stream": "dlq"})
    assert merged == {**current, "on_invalid": "dead_letter", "dead_letter_stream": "dlq"}
    back = merged_binding(merged, {"on_invalid": "refuse"})
    assert back == current  # refusing again drops the dead-letter stream
    assert merged_binding(None, {"format": "avro"}) == {"format": "avro"}


def test_decoded_values_print_as_one_json_value() -> None:
    value = {
        "id": "o-1",
        "at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "day": dt.date(2026, 1, 2),
        "price": decimal.Decimal("1.50"),
        "ref": uuid.UUID(int=1),
        "raw": b"\xff\x00",
        "text": b"abc",
        "name": "café",
    }
    line = decoded_text(value)
    assert "\n" not in line and "café" in line
    assert (
        json.loads(line)
        == decoded_json(value)
        == {
            "id": "o-1",
            "at": "2026-01-02T03:04:05+00:00",
            "day": "2026-01-02",
            "price": "1.50",
            "ref": "00000000-0000-0000-0000-000000000001",
            "raw": "ff00",
            "text": "abc",
            "name": "café",
        }
    )
