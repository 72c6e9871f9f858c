from __future__ import annotations

import pytest

from spark_log.subjects import subject_matches


@pytest.mark.parametrize(
    ("pattern", "subject", "matches"),
    [
        ("orders", "orders", True),
        ("orders", "orders.1", False),
        ("orders.1", "orders", False),
        ("orders.*", "orders.1", True),
        ("orders.*", "orders.1.x", False),
        ("orders.*", "orders", False),
        ("orders.>", "orders.1.x", True),
        ("orders.>", "orders", False),
        ("*.eu", "orders.eu", True),
        (">", "anything.at.all", True),
    ],
)
def test_nats_subject_matching(pattern: str, subject: str, matches: bool):
    assert subject_matches(pattern, subject) is matches
