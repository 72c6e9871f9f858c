"""Consumer-side measurements: many waiting readers woken by one publish, and stored records
read back by each side's consumers."""
