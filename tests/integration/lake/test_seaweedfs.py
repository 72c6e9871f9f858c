"""The embedded S3 server: a real SeaweedFS that pyarrow and delta-rs use as S3, and that
refuses a second create of one object (what safe Delta commits on S3 rest on)."""

from __future__ import annotations

import threading
import urllib.request
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyarrow import fs

from liftlog.embedded.seaweedfs import S3Credentials, SeaweedFsServer
from tests.support.waiting import wait_for

WRITERS = 4


def storage_options(creds: S3Credentials) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": creds.endpoint_url,
        "AWS_ACCESS_KEY_ID": creds.access_key_id,
        "AWS_SECRET_ACCESS_KEY": creds.secret_access_key,
        "AWS_REGION": creds.region,
        "AWS_ALLOW_HTTP": "true",
        "conditional_put": "etag",
    }


def test_objects_written_through_pyarrow_read_back(s3_bucket: tuple[str, S3Credentials]):
    bucket, creds = s3_bucket
    s3 = fs.S3FileSystem(
        access_key=creds.access_key_id,
        secret_key=creds.secret_access_key,
        endpoint_override=creds.endpoint_url,
        region=creds.region,
    )
    with s3.open_output_stream(f"{bucket}/dir/a.bin") as out:
        out.write(b"payload")
    with s3.open_input_stream(f"{bucket}/dir/a.bin") as src:
        assert src.read() == b"payload"


def test_unsigned_requests_are_refused(s3_server: SeaweedFsServer):
    request = urllib.request.Request(f"{s3_server.endpoint_url}/")
    try:
        urllib.request.urlopen(request, timeout=5)
        status = 200
    except urllib.error.HTTPError as exc:
        status = exc.code
    assert status == 403


def test_racing_delta_commits_each_land_once(s3_bucket: tuple[str, S3Credentials]):
    """Writers on one snapshot race; every append lands at its own version, none is lost or
    overwritten (delta-rs's put-if-absent on _delta_log, enforced by the store)."""
    bucket, creds = s3_bucket
    uri = f"s3://{bucket}/race"
    options = storage_options(creds)
    write_deltalake(uri, pa.table({"x": [-1]}), storage_options=options)
    tables = [DeltaTable(uri, storage_options=options) for _ in range(WRITERS)]
    threads = [
        threading.Thread(
            target=write_deltalake, args=(t, pa.table({"x": [i]})), kwargs={"mode": "append"}
        )
        for i, t in enumerate(tables)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == WRITERS
    assert sorted(table.to_pyarrow_table().column("x").to_pylist()) == [-1, *range(WRITERS)]


def test_stop_ends_the_process_and_keeps_no_port(tmp_path: Path):
    server = SeaweedFsServer(tmp_path).start()
    pid = server.process.pid
    server.stop()
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 10, message="weed to exit")
    assert not server.is_ready()
