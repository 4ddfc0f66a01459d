"""scripting primitives (being written)."""
