"""SQLite tasks: a table edited in place is judged as its readers read it.

The registry-wide test validates these tasks (nop, oracle, alternative, mutants, probes);
this replays, in the bwrap sandbox, what a red team did to earn the reward while leaving a
table its readers would misread, and honest variants that must still earn it.
"""

from __future__ import annotations

import pytest
from endings import rewards

# An ending that runs Python's sqlite3 on the task's database (seed 0 of the IoT
# scenario: `readings`, whose last column, `day`, is TEXT).
EDIT = """python3 - <<'PY'
import sqlite3
db = sqlite3.connect('/srv/telemetry/db/iot.db')
columns = [(row[1], row[2]) for row in db.execute('PRAGMA table_info("readings")')]
{code}
db.commit()
PY
"""
SCENARIO = "iot-telemetry-pipeline"
REBUILT = ("db.executescript('CREATE TABLE \"copy\" (%s); INSERT INTO \"copy\" SELECT * FROM "
           "\"readings\"; DROP TABLE \"readings\"; ALTER TABLE \"copy\" RENAME TO "
           "\"readings\";' % ', '.join('\"%s\" %s' % (name, {kind}) for name, kind in columns))")


@pytest.mark.bwrap
def test_a_table_edited_in_place_keeps_its_kind_its_types_and_its_values(bwrap_runtime):
    """`delete rows` (red team): the kept rows shown through a view over the whole table,
    the table rebuilt with every column TEXT, and blanks added to the end of a kept row's
    last value each earned 1 (the rows were read as text lines, blanks at their ends
    dropped)."""
    found = rewards(bwrap_runtime, ("sqlite.delete_rows",), 0, scenario=SCENARIO, endings={
        "reference": "",
        "vacuumed": EDIT.format(code="db.execute('VACUUM')"),
        "rebuilt-with-its-types": EDIT.format(code=REBUILT.format(kind="kind")),
        "a-view-of-the-kept-rows": EDIT.format(
            code="db.executescript('ALTER TABLE \"readings\" RENAME TO \"everything\"; "
                 "CREATE VIEW \"readings\" AS SELECT * FROM \"everything\";')"),
        "every-column-text": EDIT.format(code=REBUILT.format(kind="'TEXT'")),
        "trailing-blanks": EDIT.format(
            code="last = columns[-1][0]\n"
                 "db.execute('UPDATE \"readings\" SET \"%s\" = \"%s\" || ?' % (last, last), "
                 "(' \\t',))"),
    })
    assert found == {"reference": 1.0, "vacuumed": 1.0, "rebuilt-with-its-types": 1.0,
                     "a-view-of-the-kept-rows": 0.0, "every-column-text": 0.0,
                     "trailing-blanks": 0.0}, found
