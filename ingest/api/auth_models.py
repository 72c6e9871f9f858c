"""Request bodies of ``/v1/auth`` and ``/v1/acls`` (unknown fields refused)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from spark_log.auth import Action

if TYPE_CHECKING:
    ActionName = str  # the Literal below is built from the enum at run time: mypy sees a str
else:
    ActionName = Literal[tuple(a.value for a in Action)]  # the schema lists every action


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    principal: str = Field(description="Who the token authenticates (a plain name: alice)")
    description: str = Field("", description="What the token is for (shown in listings)")


class AclCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    principal: str = Field(description="A principal, or '*' for every authenticated one")
    action: ActionName = Field(description="The action allowed or denied")
    resource: str = Field(description="'cluster' or 'stream:<name or glob>' (stream:orders-*)")
    permission: Literal["allow", "deny"] = Field("allow", description="A deny always wins")
