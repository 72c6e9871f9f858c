"""Publishing measured the same way on every side: acked throughput through a fixed window,
producer batches, paced ack latency, fire-and-forget recording, and what each side stored of
what it acknowledged."""
