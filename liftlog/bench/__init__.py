"""The benchmark library: ``liftlog bench`` and every script under ``bench/`` measure with it.

Both sides of a comparison use the same nats-server binary and the same publisher library
(nats-py), so the numbers differ only by what sits behind the subject. ``runner.run_bench`` is
the entry point of ``liftlog bench``; the rooms below it, bottom to top: ``toolkit`` (measuring
and printing), ``jetstream`` (the peer), ``publish`` (the publishing measurements), ``compare``
(the line-ups of ``liftlog bench``) and ``lake`` (what the lake and Spark benchmarks share).
"""
