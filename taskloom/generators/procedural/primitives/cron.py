"""cron primitives (being written)."""
