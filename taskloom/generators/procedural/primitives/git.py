"""git primitives (being written)."""
