"""The files ``liftlog standalone`` writes for the tools that call the stack.

``credentials.toml`` (``spark_log.client.credentials_file``): the first node's URL as
``server``, with ``--secure`` the admin token and the CA, with an S3 lake its object-store
options as ``[lake]``; one ``LIFTLOG_CREDENTIALS_FILE`` then serves the CLI, the client,
Spark and ``liftlog compact``. ``lake.env``: the same S3 lake as the ``AWS_*`` variables
delta-rs, Polars, DuckDB and the AWS tools read, to be sourced. Both are readable by their
owner only and rewritten at every start (the S3 port is picked anew).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from liftlog.embedded.seaweedfs import S3Credentials
from liftlog.embedded.standalone_secure import write_secret
from spark_log.storage_options import (
    AWS_ACCESS_KEY_ID,
    AWS_ALLOW_HTTP,
    AWS_ENDPOINT_URL,
    AWS_REGION,
    AWS_SECRET_ACCESS_KEY,
)

CREDENTIALS_FILE_NAME = "credentials.toml"
LAKE_ENV_FILE_NAME = "lake.env"


@dataclass(frozen=True)
class ClientFiles:
    """What goes into the files: the server URL, the admin token and CA (``--secure``), and
    the S3 lake's endpoint and keys (``--lake s3``)."""

    server: str
    token: str = field(default="", repr=False)
    ca_file: str = ""
    lake: S3Credentials | None = field(default=None, repr=False)

    def write(self, data_dir: Path) -> list[Path]:
        """Write ``credentials.toml`` and, with an S3 lake, ``lake.env``; the paths written."""
        written = [data_dir / CREDENTIALS_FILE_NAME]
        write_secret(written[0], credentials_toml(self))
        if self.lake is not None:
            written.append(data_dir / LAKE_ENV_FILE_NAME)
            write_secret(written[1], lake_env(self.lake))
        return written


def lake_storage_options(lake: S3Credentials) -> dict[str, str]:
    """The embedded store's options under delta-rs's names (``[lake]``, ``--lake-option``)."""
    return {
        AWS_ENDPOINT_URL: lake.endpoint_url,
        AWS_ACCESS_KEY_ID: lake.access_key_id,
        AWS_SECRET_ACCESS_KEY: lake.secret_access_key,
        AWS_REGION: lake.region,
        AWS_ALLOW_HTTP: "true",
    }


def credentials_toml(files: ClientFiles) -> str:
    """The credentials file's text (JSON strings are TOML basic strings)."""
    top = {"server": files.server, "token": files.token, "ca_file": files.ca_file}
    lines = [
        f"{key} = {json.dumps(os.path.abspath(value) if key == 'ca_file' else value)}"
        for key, value in top.items()
        if value
    ]
    if files.lake is not None:
        lines += ["", "[lake]"]
        options = lake_storage_options(files.lake)
        lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def lake_env(lake: S3Credentials) -> str:
    """``export AWS_...=...`` lines for a shell to source."""
    options = lake_storage_options(lake)
    return "".join(f"export {key.upper()}={value}\n" for key, value in options.items())
