"""Request bodies of the schema registry routes: Confluent's field names (camelCase), as its
clients send them; unknown fields are refused like everywhere else in the API."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SchemaBody(BaseModel):
    """``POST /subjects/{subject}/versions``, lookup and compatibility checks. ``metadata``
    and ``ruleSet`` (Confluent's data contracts) are accepted only empty."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_text: str = Field(alias="schema", min_length=1)
    schema_type: str = Field(default="AVRO", alias="schemaType")
    references: list[object] | None = None
    metadata: dict[str, object] | None = None
    rule_set: dict[str, object] | None = Field(default=None, alias="ruleSet")


class ConfigBody(BaseModel):
    """``PUT /config[/{subject}]``: ``{"compatibility": "FULL"}``."""

    model_config = ConfigDict(extra="forbid")

    compatibility: str
