"""The credentials file: one TOML file holding what the tools need to reach a cluster.

``liftlog standalone --secure`` and ``--lake s3`` write one (``<data-dir>/credentials.toml``);
``LIFTLOG_CREDENTIALS_FILE`` or an explicit path names it to the CLI, the client, Spark and
``liftlog compact``. Its keys are typed and an unknown one is an error: a misspelt key must
not leave a tool silently without its credential.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_log.storage_options import checked_storage_options
from spark_log.toml_file import read_toml
from spark_log.typed_config import from_mapping

LAKE_TABLE = "lake"
ENV_CREDENTIALS_FILE = "LIFTLOG_CREDENTIALS_FILE"


@dataclass(frozen=True)
class CredentialsFile:
    """``server`` (the nodes' REST URLs, comma-separated), ``token``, ``ca_file``,
    ``cert_file`` and ``key_file`` (``ClientCredentials``), and ``[lake]``: the lake's
    object-store options under their delta-rs names (``aws_access_key_id``, ...), as
    ``--lake-option`` and ``[lake.storage_options]`` take them."""

    server: str = ""
    token: str = field(default="", repr=False)
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    lake: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lake", checked_storage_options(self.lake, LAKE_TABLE))


def read_credentials_file(path: str) -> CredentialsFile:
    """The file at ``path``; ConfigError when it cannot be read, is not TOML or has a key
    (or a ``[lake]`` option) it should not."""
    return from_mapping(CredentialsFile, read_toml(path))


def credentials_file_lake(
    path: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The ``[lake]`` table of the credentials file (``path``, else
    ``LIFTLOG_CREDENTIALS_FILE``): the lake's store options; empty without a file."""
    found = path or (os.environ if environ is None else environ).get(ENV_CREDENTIALS_FILE, "")
    return dict(read_credentials_file(found).lake) if found else {}
