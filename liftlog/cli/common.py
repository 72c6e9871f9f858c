"""What every command group shares: the ``--server`` option, the REST client, the output
of tables and acks."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import TypeAlias

from spark_log.api_models import Ack
from spark_log.client.credentials import (
    ENV_CREDENTIALS_FILE,
    ENV_NAMES,
    ENV_SERVER,
    ClientCredentials,
)
from spark_log.client.rest import DEFAULT_SERVER, RestClient

SERVER_ENV = ENV_SERVER

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``add_subparsers`` returns, where each command group adds its commands."""


def add_server_arg(parser: argparse.ArgumentParser) -> None:
    """``--server``: the REST base URLs of any nodes (the client fails over between them);
    unset, ``RestClient`` takes ``$LIFTLOG_SERVER``, then the credentials file's ``server``."""
    from_env = os.environ.get(SERVER_ENV)
    source = (
        f"{from_env}, from ${SERVER_ENV}"
        if from_env
        else f"${SERVER_ENV}, then server in the credentials file, then {DEFAULT_SERVER}"
    )
    parser.add_argument(
        "--server",
        default=None,
        help=f"REST base URL(s) of any node, comma-separated (default: {source})",
    )
    add_credential_args(parser)


def add_credential_args(parser: argparse.ArgumentParser) -> None:
    """What to present to the nodes; each flag falls back to its ``LIFTLOG_*`` variable,
    then to the credentials file (see docs/security.md)."""
    group = parser.add_argument_group("credentials")
    group.add_argument(
        "--token", default=None, help=f"bearer token (default: ${ENV_NAMES['token']})"
    )
    group.add_argument(
        "--ca-file",
        default=None,
        help=f"CA to verify https:// nodes (default: ${ENV_NAMES['ca_file']})",
    )
    group.add_argument(
        "--cert-file",
        default=None,
        help=f"client certificate for mTLS (default: ${ENV_NAMES['cert_file']})",
    )
    group.add_argument(
        "--key-file", default=None, help=f"its private key (default: ${ENV_NAMES['key_file']})"
    )
    group.add_argument(
        "--credentials-file",
        default=None,
        help="TOML file with server, token, ca_file, cert_file, key_file and [lake] "
        f"(default: ${ENV_CREDENTIALS_FILE})",
    )


def credentials(args: argparse.Namespace) -> ClientCredentials:
    """The flags first, then the environment, then the credentials file."""
    given = {
        name: getattr(args, name, None) for name in ("token", "ca_file", "cert_file", "key_file")
    }
    return ClientCredentials.resolve(
        given, credentials_file=getattr(args, "credentials_file", None)
    )


def add_json_arg(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument(
        "--json", action="store_true", help=f"print {what} as JSON (default: a table)"
    )


def rest(args: argparse.Namespace, timeout_s: float | None = None) -> RestClient:
    """A REST client for ``--server`` (with a longer timeout for slow admin calls)."""
    if timeout_s is None:
        return RestClient(args.server, credentials=credentials(args))
    return RestClient(args.server, timeout_s, credentials(args))


def num(value: object) -> str:
    """An offset or count for a table cell; '-' when unknown."""
    return "-" if value is None else str(value)


def print_result(args: argparse.Namespace, document: object, line: str) -> int:
    """A command's answer: the JSON document with ``--json``, else one line for people."""
    print(json.dumps(document, indent=2) if args.json else line)
    return 0


def print_table(headers: list[str], rows: Sequence[Sequence[object]]) -> None:
    """Left-aligned columns two spaces apart, like ``kafka-topics --describe``."""
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def ack_line(ack: Ack | None) -> str:
    """``orders/0 offset=3``, with ``count=N`` for batches and ``duplicate`` when the node
    recognised the Nats-Msg-Id and stored nothing new."""
    if ack is None:
        return "published (no ack requested)"
    extra = f" count={ack.count}" if ack.count != 1 else ""
    duplicate = " duplicate" if ack.duplicate else ""
    return f"{ack.stream}/{ack.partition} offset={ack.offset}{extra}{duplicate}"
