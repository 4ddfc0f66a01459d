"""Pipeline: stages, runner, executors and the DuckDB run store."""
