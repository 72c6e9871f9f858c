"""Why a reader Avro schema cannot read a writer's data, one readable message per problem.

Apache Avro's ``ReaderWriterCompatibilityChecker`` decides (Avro's resolution rules:
promotions int→long→float→double, string↔bytes, reader fields without a writer field need a
default, enum symbols, union branches, names and aliases), but it merges the locations and
messages of several problems into unordered sets. So when it says "incompatible", this walk
follows the same rules down the two schemas and reports each problem at its location
("/fields/2/type: reader type 'int' cannot read writer type 'long'").
"""

from __future__ import annotations

from typing import Any

from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityType,
    lookup_writer_field,
    schema_name_equals,
)

# avro.schema.Schema: Apache Avro ships no type information
AvroSchemaObject = Any


def resolution_problems(reader: AvroSchemaObject, writer: AvroSchemaObject) -> list[str]:
    """Problems reading ``writer``'s data with ``reader`` (parsed by ``avro.schema.parse``)."""
    explainer = _Explainer()
    if explainer.compatible(reader, writer):
        return []
    found = explainer.explain(reader, writer, "")
    if found:
        return found
    result = explainer.checker.get_compatibility(reader, writer)
    return [f"{', '.join(sorted(result.locations))}: {'; '.join(sorted(result.messages))}"]


def _describe(schema: AvroSchemaObject) -> str:
    fullname = getattr(schema, "fullname", None)
    if schema.type in ("record", "enum", "fixed", "error") and fullname:
        return f"{schema.type} {fullname}"
    logical = schema.props.get("logicalType") if hasattr(schema, "props") else None
    return f"{schema.type} ({logical})" if logical else str(schema.type)


class _Explainer:
    def __init__(self) -> None:
        # Apache Avro leaves the checker's constructor unannotated
        self.checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
        self._visited: set[tuple[int, int]] = set()

    def compatible(self, reader: AvroSchemaObject, writer: AvroSchemaObject) -> bool:
        result = self.checker.get_compatibility(reader, writer)
        return bool(result.compatibility is not SchemaCompatibilityType.incompatible)

    def explain(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        pair = (id(reader), id(writer))
        if pair in self._visited or self.compatible(reader, writer):
            return []
        self._visited.add(pair)
        if reader.type == writer.type:
            return self._same_type(reader, writer, at)
        if writer.type == "union":
            return [
                problem for branch in writer.schemas for problem in self.explain(reader, branch, at)
            ]
        if reader.type == "union":
            return [
                f"{at or '/'}: reader union [{', '.join(_describe(b) for b in reader.schemas)}]"
                f" has no branch that reads writer type '{_describe(writer)}'"
            ]
        return [
            f"{at or '/'}: reader type '{_describe(reader)}' cannot read writer type"
            f" '{_describe(writer)}'"
        ]

    def _same_type(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        kind = reader.type
        if kind == "array":
            return self.explain(reader.items, writer.items, f"{at}/items")
        if kind == "map":
            return self.explain(reader.values, writer.values, f"{at}/values")
        if kind == "union":
            return self._union(reader, writer, at)
        problems = self._names(reader, writer, at)
        if kind == "record":
            problems += self._fields(reader, writer, at)
        elif kind == "enum":
            problems += self._symbols(reader, writer, at)
        elif kind == "fixed" and reader.size != writer.size:
            problems.append(
                f"{at}/size: reader fixed size {reader.size} differs from writer size {writer.size}"
            )
        return problems

    def _names(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        if schema_name_equals(reader, writer):
            return []
        return [
            f"{at}/name: reader name '{reader.fullname}' does not match writer name"
            f" '{writer.fullname}' (nor do the reader's aliases)"
        ]

    def _fields(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        problems: list[str] = []
        for index, field in enumerate(reader.fields):
            where = f"{at}/fields/{index}"
            written = lookup_writer_field(writer_schema=writer, reader_field=field)
            if written is None:
                if not field.has_default:
                    problems.append(
                        f"{where}: reader field has no default and the writer has no such"
                        f" field (field '{field.name}')"
                    )
                continue
            problems += [
                problem if "(field '" in problem else f"{problem} (field '{field.name}')"
                for problem in self.explain(field.type, written.type, f"{where}/type")
            ]
        return problems

    def _symbols(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        missing = [symbol for symbol in writer.symbols if symbol not in reader.symbols]
        default = reader.props.get("default")
        if not missing or (default and default in reader.symbols):
            return []
        return [
            f"{at}/symbols: reader enum {reader.fullname} lacks writer symbols"
            f" {', '.join(missing)} and has no default"
        ]

    def _union(self, reader: AvroSchemaObject, writer: AvroSchemaObject, at: str) -> list[str]:
        problems: list[str] = []
        for index, branch in enumerate(writer.schemas):
            if self.compatible(reader, branch):
                continue
            same = [b for b in reader.schemas if b.type == branch.type]
            if len(same) == 1:
                problems += self.explain(same[0], branch, at)
            else:
                problems.append(
                    f"{at}/{index}: reader union has no branch that reads writer branch"
                    f" '{_describe(branch)}'"
                )
        return problems
