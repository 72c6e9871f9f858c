"""``python -m liftlog.cli``: the same as the ``liftlog`` command."""

from __future__ import annotations

import sys

from liftlog.cli import main

sys.exit(main())
