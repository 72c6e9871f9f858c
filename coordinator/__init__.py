"""Everything ZooKeeper: znodes, the kazoo adapter, brokers, streams, the controller.

Depends on ``spark_log`` and kazoo only; kazoo's exceptions are converted in
``coordinator.zk`` and never leave this package.
"""
