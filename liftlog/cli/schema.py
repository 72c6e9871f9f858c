"""``liftlog schema ...``: the schema registry every node serves (Confluent's API) from the
command line: register, list, show, check and delete, over the same server and credentials
as every other command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, print_result, rest
from spark_log.errors import InvalidRequestError

if TYPE_CHECKING:  # the registry client loads the schema libraries: only when a command runs
    from spark_log.client.schema_registry import RegisteredSchema, RegistryClient

EXIT_INCOMPATIBLE = 1
LATEST = "latest"
AVRO = "AVRO"
JSON = "JSON"
SCHEMA_TYPES = ("avro", "json")
_JSON_SCHEMA_KEYS = ("$schema", "properties")


def add_schema_parser(sub: Subcommands) -> None:
    p = sub.add_parser("schema", help="register, list, show, check, delete schemas in the registry")
    ssub = p.add_subparsers(title="schema commands", metavar="COMMAND")
    _register_parser(ssub)
    _list_parser(ssub)
    _show_parser(ssub)
    _check_parser(ssub)
    _delete_parser(ssub)


def _type_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--type",
        choices=SCHEMA_TYPES,
        help="the schema's format (default: json for a JSON Schema, with $schema, properties "
        'or "type": "object" and no "fields"; else avro)',
    )


def _register_parser(ssub: Subcommands) -> None:
    p = ssub.add_parser("register", help="register a schema file as the subject's next version")
    p.add_argument("subject", help="the subject (a stream's default: <stream>-value)")
    p.add_argument("file", help="the schema: an Avro schema (.avsc) or a JSON Schema")
    _type_arg(p)
    add_json_arg(p, "the registered version")
    add_server_arg(p)
    p.set_defaults(run=_register)


def _list_parser(ssub: Subcommands) -> None:
    p = ssub.add_parser("list", help="list subjects")
    p.add_argument(
        "--deleted", action="store_true", help="soft-deleted subjects too (default: off)"
    )
    add_json_arg(p, "the subjects")
    add_server_arg(p)
    p.set_defaults(run=_list)


def _show_parser(ssub: Subcommands) -> None:
    p = ssub.add_parser("show", help="a subject's version (or a schema by id) and its versions")
    p.add_argument("subject", nargs="?", help="the subject (not needed with --id)")
    p.add_argument("--version", default=LATEST, help="a version number or latest (default: latest)")
    p.add_argument(
        "--id", type=int, help="show the schema with this global id instead (default: by subject)"
    )
    add_json_arg(p, "the version")
    add_server_arg(p)
    p.set_defaults(run=_show)


def _check_parser(ssub: Subcommands) -> None:
    p = ssub.add_parser(
        "check",
        help="could this schema be registered under the subject? (exit 1 when incompatible)",
    )
    p.add_argument("subject", help="the subject")
    p.add_argument("file", help="the schema file")
    _type_arg(p)
    p.add_argument(
        "--version",
        help="check against this version alone (default: as a registration would)",
    )
    add_json_arg(p, "the verdict")
    add_server_arg(p)
    p.set_defaults(run=_check)


def _delete_parser(ssub: Subcommands) -> None:
    p = ssub.add_parser("delete", help="delete a subject or one version (soft, then permanent)")
    p.add_argument("subject", help="the subject")
    p.add_argument("--version", help="only this version (number or latest; default: all)")
    p.add_argument(
        "--permanent",
        action="store_true",
        help="remove what a soft delete left (soft-delete first; default: soft delete)",
    )
    add_json_arg(p, "the versions deleted")
    add_server_arg(p)
    p.set_defaults(run=_delete)


def _registry(args: argparse.Namespace) -> RegistryClient:
    from spark_log.client.schema_registry import RegistryClient

    return RegistryClient(rest(args))


def read_schema(path: str, given_type: str | None) -> tuple[str, str]:
    """The file's text and its format: ``given_type``, else guessed (``guess_type``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"cannot read schema file {path}: {exc}") from None
    if given_type is not None:
        return text, given_type.upper()
    return text, guess_type(text)


def guess_type(text: str) -> str:
    """JSON for a JSON Schema (an object with ``$schema`` or ``properties``, or ``"type":
    "object"``, and no Avro ``fields``); Avro for anything else, which the registry checks."""
    try:
        document = json.loads(text)
    except ValueError:
        return AVRO
    if not isinstance(document, dict) or "fields" in document:
        return AVRO
    if any(key in document for key in _JSON_SCHEMA_KEYS) or document.get("type") == "object":
        return JSON
    return AVRO


def _register(args: argparse.Namespace) -> int:
    text, kind = read_schema(args.file, args.type)
    found = _registry(args).register(args.subject, text, kind)
    line = f"subject {found.subject} version {found.version} id {found.schema_id} ({kind})"
    return print_result(args, found.to_json(), line)


def _list(args: argparse.Namespace) -> int:
    subjects = _registry(args).subjects(deleted=args.deleted)
    if args.json:
        print(json.dumps(subjects, indent=2))
    else:
        for subject in subjects:
            print(subject)
    return 0


def _show(args: argparse.Namespace) -> int:
    registry = _registry(args)
    if args.id is not None:
        found = registry.schema_by_id(args.id)
        versions: list[int] = []
    elif args.subject:
        found = registry.version(args.subject, args.version)
        versions = registry.versions(args.subject)
    else:
        raise InvalidRequestError("schema show needs a subject or --id")
    if args.json:
        print(json.dumps({**found.to_json(), "versions": versions}, indent=2))
    else:
        _print_version(found, versions)
    return 0


def _print_version(found: RegisteredSchema, versions: list[int]) -> None:
    """A header line, then the schema pretty-printed."""
    where = f"subject {found.subject} version {found.version} " if found.subject else ""
    print(f"{where}id {found.schema_id} type {found.schema_type}")
    if versions:
        print(f"versions: {', '.join(map(str, versions))}")
    try:
        print(json.dumps(json.loads(found.schema), indent=2))
    except ValueError:
        print(found.schema)


def _check(args: argparse.Namespace) -> int:
    text, kind = read_schema(args.file, args.type)
    compatible, messages = _registry(args).check(args.subject, text, kind, args.version)
    if args.json:
        print(json.dumps({"is_compatible": compatible, "messages": messages}, indent=2))
    elif compatible:
        print(f"compatible: {args.subject} would accept this {kind} schema")
    else:
        print(f"incompatible: {args.subject} would refuse this {kind} schema")
        for message in messages:
            print(f"  {message}")
    return 0 if compatible else EXIT_INCOMPATIBLE


def _delete(args: argparse.Namespace) -> int:
    deleted = _registry(args).delete(args.subject, args.version, permanent=args.permanent)
    how = "permanently deleted" if args.permanent else "deleted"
    what = f"version {args.version} of" if args.version is not None else "subject"
    line = f"{how} {what} {args.subject} (versions {', '.join(map(str, deleted))})"
    return print_result(args, deleted, line)
