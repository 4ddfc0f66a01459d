"""sqlite primitives (being written)."""
