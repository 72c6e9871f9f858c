"""The Python session of one documentation run: executes blocks in one namespace, in order.

Run by the venv's interpreter in the session's working directory (as a user would run
``.venv/bin/python`` there). Reads one JSON request per line on stdin (``{"code", "name"}``)
and answers each with one JSON line on the file descriptor given as argv[1]
(``{"ok", "stdout", "error"}``). Later blocks see the names earlier ones defined, as in a
REPL or a notebook.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def main() -> None:
    replies = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    namespace: dict[str, object] = {"__name__": "__main__"}
    sys.path.insert(0, os.getcwd())  # as `python file.py` run from the working directory
    for line in sys.stdin:
        request = json.loads(line)
        out = io.StringIO()
        error = None
        try:
            code = compile(request["code"], request["name"], "exec")
            with contextlib.redirect_stdout(out):
                exec(code, namespace)  # running the docs is the point
        except BaseException:  # noqa: BLE001 - reported to the test, the session goes on
            error = traceback.format_exc()
        replies.write(json.dumps({"ok": error is None, "stdout": out.getvalue(), "error": error}))
        replies.write("\n")


if __name__ == "__main__":
    main()
