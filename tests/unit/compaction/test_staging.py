"""Where compaction can write: local paths and file:// URIs; other stores are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasource.compaction.errors import UnsupportedLakeError
from datasource.compaction.staging import local_table_root, new_staging_dir, staged_files


def test_local_paths_and_file_uris_are_table_roots():
    assert local_table_root("/lake/s@1") == Path("/lake/s@1")
    assert local_table_root("file:///lake/a%20b/s@1") == Path("/lake/a b/s@1")


def test_other_stores_are_refused_with_a_typed_error():
    with pytest.raises(UnsupportedLakeError, match="s3://"):
        local_table_root("s3://bucket/lake/s@1")


def test_staging_is_not_hidden_so_a_full_vacuum_removes_leftovers(tmp_path):
    staging = new_staging_dir(tmp_path, 42)
    assert staging.parent == tmp_path and not staging.name.startswith(("_", "."))
    assert staged_files(staging) == {}  # Spark wrote nothing (every row removed)
