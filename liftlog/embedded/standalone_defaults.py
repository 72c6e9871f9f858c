"""The embedded stack's defaults and choices, in a module that imports nothing.

``liftlog standalone --help`` shows them, and the command line must start without loading
the stack's modules (pyarrow, deltalake, cryptography), so they live apart from the code
that uses them.
"""

from __future__ import annotations

DEFAULT_STANDALONE_DATA_DIR = "liftlog-data"
DEFAULT_STANDALONE_NODES = 1
DEFAULT_STANDALONE_NATS_PORT = 4222
DEFAULT_STANDALONE_ZK_PORT = 2181
DEFAULT_STANDALONE_API_PORT = 9644
# Liftbridge's own default: its clients find the first node where they found Liftbridge
DEFAULT_STANDALONE_LIFTBRIDGE_PORT = 9292

HA_CLUSTER_SIZE = 3
HA_DEFAULT_NODES = 3

LAKE_LOCAL = "local"
LAKE_S3 = "s3"
LAKE_CHOICES = (LAKE_LOCAL, LAKE_S3)
