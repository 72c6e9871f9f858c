"""A plain-text table: left-aligned labels, right-aligned figures, widths from the content."""

from __future__ import annotations

from collections.abc import Sequence

GAP = "  "


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    width = len(headers)
    cells = [list(headers), *[list(r) + [""] * (width - len(r)) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(width)]
    lines = []
    for n, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append(GAP.join(parts).rstrip())
        if n == 0:
            lines.append(GAP.join("-" * w for w in widths))
    return "\n".join(lines)


def num(value: float, decimals: int = 0) -> str:
    """``12,345`` or ``1.23``: thousands separators so rates read at a glance."""
    return f"{value:,.{decimals}f}"
