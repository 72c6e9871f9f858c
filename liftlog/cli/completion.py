"""``liftlog completion bash|zsh``: the shell code that makes Tab complete ``liftlog``.

Completion itself is argcomplete's: the shell runs ``liftlog`` with ``_ARGCOMPLETE=1`` and
``main`` answers from the real parser before doing anything else.
"""

from __future__ import annotations

import argparse

from argcomplete.shell_integration import shellcode

from liftlog.cli.common import Subcommands

COMPLETION_SHELLS = ("bash", "zsh")
PROGRAM = "liftlog"


def add_completion_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "completion",
        help="print the shell code enabling Tab completion",
        description=f'Enable with: eval "$({PROGRAM} completion bash)" (or zsh), e.g. in '
        "~/.bashrc or ~/.zshrc.",
    )
    p.add_argument("shell", choices=COMPLETION_SHELLS, help="the shell to complete in")
    p.set_defaults(run=_completion)


def _completion(args: argparse.Namespace) -> int:
    print(shellcode([PROGRAM], shell=args.shell))
    return 0
