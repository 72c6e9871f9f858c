"""Reading a whole partition back over REST, for the fault tests' "nothing acked was lost"."""

from __future__ import annotations

from typing import Any

import httpx


def read_all_records(
    api: httpx.Client, stream: str, *, max_records: int = 10000
) -> list[dict[str, Any]]:
    """Every record of partition 0 from offset 0, in offset order (utf-8: the data is text).

    Page by page until an empty page: a test compares the whole log with what was acked, so
    it must not stop at the first page.
    """
    records: list[dict[str, Any]] = []
    offset = 0
    while True:
        body = api.get(
            f"/v1/streams/{stream}/partitions/0/records",
            params={"offset": offset, "max_records": max_records, "encoding": "utf-8"},
        ).json()
        if not body["records"]:
            return records
        records.extend(body["records"])
        offset = body["next_offset"]
