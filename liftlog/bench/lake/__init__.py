"""What the lake and Spark benchmarks share: a local lake beside an S3 one, a stream filled and
flushed for Spark to read, Spark's CPU per query, the compaction benchmark's table and plain
Spark baselines, and the figures they print and save."""
