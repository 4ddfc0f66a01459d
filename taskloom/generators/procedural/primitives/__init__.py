"""The registry of procedural primitives (one module per area) and input sources.

Importing this package registers every primitive in `PRIMITIVES` (skill id -> function)
and every source in `SOURCES` (artifact type -> function). `base` is the contract every
primitive follows; `_tables`, `_trees` and `_history` are not families but what several
families share (columns and conditions for CSV, JSON and SQLite; file-tree tests and checks
for files, archives and integrity; git's hash model for git and security). A family
imports shared helpers from those, never from another family.
"""

from taskloom.generators.procedural import sources  # noqa: F401 - registers the sources
from taskloom.generators.procedural.primitives import (  # noqa: F401 - each registers its skills
    archives,
    code,
    config_files,
    cron,
    csvdata,
    debugging,
    files,
    git,
    integrity,
    jsondata,
    logs,
    perms,
    scheduling,
    scripting,
    security,
    services,
    sqlite,
    statistics,
    text,
)
from taskloom.generators.procedural.primitives.base import PRIMITIVES, SOURCES

__all__ = ["PRIMITIVES", "SOURCES"]
