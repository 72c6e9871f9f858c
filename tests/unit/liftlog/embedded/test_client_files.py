"""What ``liftlog standalone`` writes for the tools: a credentials file the client reads back
as written, and ``lake.env`` with the S3 lake's ``AWS_*`` variables, both owner-only."""

from __future__ import annotations

import stat
from pathlib import Path

from liftlog.embedded.client_files import ClientFiles
from liftlog.embedded.seaweedfs import S3Credentials
from liftlog.embedded.standalone_lake import kept_s3_secret
from spark_log.client.credentials import load_credentials_file
from spark_log.client.credentials_file import read_credentials_file

LAKE = S3Credentials("http://127.0.0.1:40001", "liftlog", "s3cr3t")


def test_the_credentials_file_reads_back_as_written(tmp_path: Path) -> None:
    files = ClientFiles("https://127.0.0.1:9644,https://127.0.0.1:9645", "llt_t", "ca.pem", LAKE)
    credentials, lake_env = files.write(tmp_path)
    read = read_credentials_file(str(credentials))
    assert read.server == files.server and read.token == "llt_t"
    assert read.ca_file == str(Path("ca.pem").resolve())
    assert read.lake == {
        "aws_endpoint_url": LAKE.endpoint_url,
        "aws_access_key_id": "liftlog",
        "aws_secret_access_key": "s3cr3t",
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }
    assert load_credentials_file(str(credentials)).server == files.server
    assert "export AWS_SECRET_ACCESS_KEY=s3cr3t\n" in lake_env.read_text()
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:40001\n" in lake_env.read_text()
    for path in (credentials, lake_env):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_without_a_lake_or_a_token_only_the_server_is_written(tmp_path: Path) -> None:
    [credentials] = ClientFiles("http://127.0.0.1:9644").write(tmp_path)
    assert credentials.read_text() == 'server = "http://127.0.0.1:9644"\n'
    assert not (tmp_path / "lake.env").exists()


def test_the_s3_secret_is_kept_across_restarts(tmp_path: Path) -> None:
    first = kept_s3_secret(tmp_path / "seaweedfs")
    assert first and kept_s3_secret(tmp_path / "seaweedfs") == first
    assert stat.S_IMODE((tmp_path / "seaweedfs" / "s3-secret-key").stat().st_mode) == 0o600
