"""Consumer-side measurements: many waiting readers woken by one publish."""
