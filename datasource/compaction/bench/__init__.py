"""The compaction benchmark: ``liftlog compact``'s job beside plain Spark latest-per-key
aggregations of the same files, in the same run (``make bench-compact``)."""
