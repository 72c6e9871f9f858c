"""The lake: each stream's committed history as a Delta table (layout shared by the exporter,
the ``liftlog`` data source and the compaction job)."""
