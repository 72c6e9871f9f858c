"""Jepsen-style fault suite: real clusters, proxied links, process and disk faults."""
