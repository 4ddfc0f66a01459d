"""Sources: realistic input data for every source type, themed by the scenario's domain.

Volume follows the data-volume level, distractors and malformed records the noise level,
odd names (spaces, non-ASCII, empty files) the edge-case level. Every value is drawn from
`ctx.rng`; times derive from the fixed EPOCH_NOW, never the clock. One module per kind of
data (`logs`, `tables`, `trees`, `texts`, `git`), with what they all use in `common`;
importing this package registers every source.
"""

from taskloom.generators.procedural.sources import (  # noqa: F401 - each registers its sources
    calendars,
    common,
    git,
    logs,
    programs,
    tables,
    texts,
    trees,
)
