"""What every benchmark uses to measure and to print: CPU and memory of processes, the
machine, payloads, figures with their spread, plain-text tables, progress lines, deadlines."""
