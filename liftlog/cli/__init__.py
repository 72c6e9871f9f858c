# PYTHON_ARGCOMPLETE_OK
"""The ``liftlog`` command line: run the embedded stack or a node, administer and use streams.

One module per command group; this one builds the parser, parses (options may stand before,
between or after positionals: ``parsing``), answers shell completion (argcomplete) and turns
typed errors into ``liftlog: <code>: <message>`` with exit status 1, in the CLI's words
(``flags``), and ends quietly when the reader of its output leaves (``closed_pipe``). Every
command that talks to a running cluster takes ``--server URL``.
"""

from __future__ import annotations

import argparse
import sys

import argcomplete

from liftlog.cli.auth import add_acl_parser, add_auth_parser
from liftlog.cli.closed_pipe import quiet_exit, stdout_closed
from liftlog.cli.cluster import add_cluster_parser
from liftlog.cli.compact import add_compact_parser
from liftlog.cli.completion import add_completion_parser
from liftlog.cli.consume import add_consume_parser
from liftlog.cli.cursor import add_cursor_parser
from liftlog.cli.encryption import add_encryption_parser
from liftlog.cli.flags import field_flags, to_cli_words
from liftlog.cli.group import add_group_parser
from liftlog.cli.parsing import parse_command_line
from liftlog.cli.publish import add_publish_parser
from liftlog.cli.schema import add_schema_parser
from liftlog.cli.standalone import add_node_parser, add_standalone_parser
from liftlog.cli.stream import add_stream_parser
from liftlog.cli.tail import add_tail_parser
from liftlog.cli.tools import add_bench_parser, add_demo_parser
from spark_log import __version__
from spark_log.errors import LiftlogError

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    parser, flags = _parser_and_flags()
    argcomplete.autocomplete(parser)  # returns at once unless the shell asks for completions
    args = parse_command_line(parser, sys.argv[1:] if argv is None else argv)
    if not hasattr(args, "run"):
        args.command_parser.print_help()
        return EXIT_USAGE
    try:
        status = int(args.run(args) or 0)
        sys.stdout.flush()  # here, where a reader that left is handled, not at exit
        return status
    except BrokenPipeError:
        if stdout_closed():
            return quiet_exit()
        raise
    except LiftlogError as exc:
        print(f"liftlog: {exc.code}: {to_cli_words(exc.message, flags)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_flags()[0]


def _parser_and_flags() -> tuple[argparse.ArgumentParser, dict[str, str]]:
    """The parser, and the map from stream-spec field names to the ``stream create`` flags
    that set them (error messages name fields; the CLI shows its flags)."""
    parser = argparse.ArgumentParser(prog="liftlog", description="Durable streams for NATS.")
    parser.add_argument(
        "--version", action="version", version=f"liftlog {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_standalone_parser(sub)
    add_node_parser(sub)
    create = add_stream_parser(sub)
    add_cluster_parser(sub)
    add_publish_parser(sub)
    add_tail_parser(sub)
    add_consume_parser(sub)
    add_schema_parser(sub)
    add_cursor_parser(sub)
    add_group_parser(sub)
    add_compact_parser(sub)
    add_auth_parser(sub)
    add_acl_parser(sub)
    add_encryption_parser(sub)
    add_bench_parser(sub)
    add_demo_parser(sub)
    add_completion_parser(sub)
    return parser, field_flags(create)
