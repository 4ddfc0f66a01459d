"""files primitives (being written)."""
