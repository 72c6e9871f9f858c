"""The cursor and group services of a node, made once and shared by every API it serves.

A group's coordinator keeps its members in memory: REST and the Liftbridge gRPC API must reach
the same coordinator, or a member that joined through one would be unknown to the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.admin.node_view import NodeView
from ingest.groups.cursors import CursorService
from ingest.groups.service import GroupService


@dataclass(frozen=True)
class ConsumerServices:
    cursors: CursorService
    groups: GroupService

    @classmethod
    def for_node(cls, node: NodeView) -> ConsumerServices:
        cursors = CursorService(node)
        return cls(cursors, GroupService(node, cursors))
