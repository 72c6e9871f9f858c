"""The peer the benchmarks compare Liftlog with: JetStream on a nats-server of the same binary,
a second server that fsyncs every message, and a three-server cluster for R3."""
