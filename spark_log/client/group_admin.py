"""Consumer group administration over REST (``/v1/groups``), in one place.

``liftlog group`` calls these: list, describe (members, committed offsets, lag), reset an
empty group's offsets of one stream, delete an empty group. Committed offsets are the last
offset processed; a member resumes at the next one.
"""

from __future__ import annotations

from urllib.parse import quote

from spark_log.api_models import GroupDeleted, GroupDescription, GroupOffsetsReset, GroupSummary
from spark_log.api_models import GroupList as GroupListing
from spark_log.client.rest import RestClient

RESET_TARGETS = ("earliest", "latest", "offset", "timestamp", "shift")


def group_path(group: str) -> str:
    return f"/v1/groups/{quote(group, safe='')}"


def list_groups(rest: RestClient) -> list[GroupSummary]:
    """Every group of every coordinator, by name."""
    return list(GroupListing.from_json(rest.get_json("/v1/groups")).groups)


def describe_group(rest: RestClient, group: str) -> GroupDescription:
    """Members, assignment, committed offsets, high watermarks and lag of every partition."""
    return GroupDescription.from_json(rest.get_json(group_path(group)))


def reset_offsets(
    rest: RestClient,
    group: str,
    stream: str,
    to: str,
    value: int | None = None,
    partitions: list[int] | None = None,
    execute: bool = False,
) -> GroupOffsetsReset:
    """The plan (``execute`` False) or the new offsets of an empty group (refused with
    ``group_not_empty`` while it has members)."""
    body = {
        "stream": stream,
        "to": to,
        "value": value,
        "partitions": partitions,
        "execute": execute,
    }
    path = f"{group_path(group)}/offsets/reset"
    return GroupOffsetsReset.from_json(rest.request("POST", path, json_body=body).json())


def delete_group(rest: RestClient, group: str) -> GroupDeleted:
    """Delete an empty group and its committed offsets."""
    return GroupDeleted.from_json(rest.request("DELETE", group_path(group)).json())
