"""Everything ZooKeeper: znode layout, the kazoo adapter, brokers, assignment, streams.

Depends on ``spark_log`` and kazoo only; kazoo's exceptions are converted in
``coordinator.zk`` and never leave this package.
"""
