"""The cursor and group services of a node and its lake read tier, made once and shared by
every API it serves.

A group's coordinator keeps its members in memory: REST and the Liftbridge gRPC API must reach
the same coordinator, or a member that joined through one would be unknown to the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.admin.node_view import NodeView
from ingest.groups.cursors import CursorService
from ingest.groups.service import GroupService
from ingest.lake.tier import LakeTier


@dataclass(frozen=True)
class ConsumerServices:
    cursors: CursorService
    groups: GroupService
    lake: LakeTier
    """Reads below a log's start (REST fetches and Liftbridge subscriptions): one snapshot
    cache per table for the whole node."""

    @classmethod
    def for_node(cls, node: NodeView) -> ConsumerServices:
        cursors = CursorService(node)
        return cls(cursors, GroupService(node, cursors), LakeTier())
