"""``liftlog bench``: Liftlog beside NATS JetStream, in one run, on one machine.

Both sides use the same nats-server binary and the same publisher library (nats-py), so the
numbers differ only by what sits behind the subject: a Liftlog ingest node or JetStream.
``runner.run_bench`` is the entry point; every other module holds one measurement or one tool.
"""
