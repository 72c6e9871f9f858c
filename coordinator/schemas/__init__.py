"""The schema registry's state in ZooKeeper: subjects, versions, schema ids and the
compatibility config (see docs/znodes.md), the cache every node answers from, and the
registry's rules (Confluent's REST semantics) over both."""
