"""Helpers the tests share: waiting for conditions, test stacks, lake stores, the import graph."""
