"""Typed errors of the typed value layout: a schema that has no Arrow columns, a schema
change the table cannot follow, a value that does not fit its columns."""

from __future__ import annotations

from spark_log.errors import LiftlogError


class UnsupportedSchemaError(LiftlogError):
    """A registered schema has no typed layout (a record that contains itself, whose depth
    no column type can bound): the stream's values stay readable as bytes, never typed."""

    code = "unsupported_schema"


class IncompatibleLayoutError(LiftlogError):
    """A schema change would change a column's type in a way Delta cannot follow (a
    narrowing, or a change of kind such as string to long): the table keeps its layout."""

    code = "incompatible_layout"


class ValueLayoutError(LiftlogError):
    """A decoded value does not fit the columns of its schema (a date-time string that does
    not parse, a number out of its column's range): named with its column, never dropped."""

    code = "value_layout"
