"""``liftlog bench``: Liftlog beside JetStream in one run, one node or three (the line-up),
measured, reported and held against the targets by one code path."""
