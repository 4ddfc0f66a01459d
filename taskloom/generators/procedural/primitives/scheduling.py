"""Scheduling primitives: a meeting slot, double bookings, a booking, from team calendars.

The input is a `calendar_set` (`sources.calendars`): one iCalendar file per person and a
team file with time zones, working hours and lunch breaks. Answers are computed from the
generated events (`busy`, `earliest_slot`); the reference solution parses the files with
python3's datetime and zoneinfo and checks each quarter hour against the busy intervals
(double bookings: a sweep over start and end times); the alternative parses them with
regular expressions and marks busy minutes one by one.

Every rule the instruction states is one a careless solution breaks, and each has a
rule-ignoring solution (`IGNORING`, one change to the reference): time zones, working
hours, whole-day events (and that they cover local days), the minimum notice, cancelled
and tentative events, repeats, lunch breaks, quarter-hour starts, half-open intervals,
one line per maximal double-booked stretch. On a fresh input a step plants what makes each
of them change the answer: a whole-day event on the day the answer would be, a weekly
meeting and a tentative one over the next answers, an event ending ten minutes past a
quarter, one starting as the meeting ends, a cancelled one over the final answer (for
double bookings: a cancelled, tentative, foreign-zone, repeating, back-to-back and split
meeting, a late meeting on a day off). Then traps that keep the answer (`_traps`): a weekly
event that began days before the answer (read daily, it would cover it), a daily one that
began a week before (read weekly, it would), a day off of a colleague far from UTC whose
UTC day would cover the answer, and a DTSTART/DTEND/RRULE/STATUS line folded inside its
name where not unfolding changes the answer (`folded-lines`; CRLF files add
`crlf-line-ends`). A later step (after a booking) plants nothing and keeps the rules its
data shows.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Report
from taskloom.generators.procedural.checks import Assertion, FileText
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    primitive,
)
from taskloom.generators.procedural.sources.calendars import (
    FAR,
    QUARTER,
    CalendarSet,
    Event,
    busy,
    earliest_slot,
    format_notes,
    stamp,
    timed,
)
from taskloom.generators.procedural.world import lines_text, q

NOTICE = (2, 3, 4, 6, 8, 12, 24, 36, 48)  # hours of minimum notice the requests ask for
MINUTES = (30, 45, 60, 90)
SLOT_RULES = ("tz", "hours", "allday", "notice", "cancelled", "tentative", "rrule", "lunch",
              "quarter", "touching", "localdays", "weekly", "daily", "unfold", "crlf")
MANDATORY = ("tz", "hours", "allday", "notice", "cancelled", "tentative", "rrule", "quarter",
             "touching")
CONFLICT_RULES = ("tz", "cancelled", "tentative", "allday", "localdays", "rrule", "weekly",
                  "daily", "touching", "merge", "unfold", "crlf")

# The reference parser: unfolded lines, VEVENT blocks only, busy intervals in UTC. The
# rule-ignoring solutions replace one marked piece of it (`_ignoring`).
PY_CALENDAR = r'''
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

UTC = timezone.utc


def zone_of(name):
    return ZoneInfo(name)


def unfold(text):
    lines = []
    for raw in text.replace('\r\n', '\n').split('\n'):
        if raw[:1] in (' ', '\t') and lines:
            lines[-1] += raw[1:]
        elif raw:
            lines.append(raw)
    return lines


def vevents(path):
    found, current = [], None
    for line in unfold(Path(path).read_bytes().decode('utf-8')):
        if line == 'BEGIN:VEVENT':
            current = {}
        elif line == 'END:VEVENT':
            found.append(current)
            current = None
        elif current is not None and ':' in line:
            head, value = line.split(':', 1)
            name, *params = head.split(';')
            current[name.upper()] = (dict(p.split('=', 1) for p in params if '=' in p), value)
    return found


def when(prop, own):
    params, value = prop
    if params.get('VALUE') == 'DATE':
        return datetime.strptime(value, '%Y%m%d').replace(tzinfo=own)
    if value.endswith('Z'):
        return datetime.strptime(value, '%Y%m%dT%H%M%SZ').replace(tzinfo=UTC)
    return datetime.strptime(value, '%Y%m%dT%H%M%S').replace(tzinfo=zone_of(params['TZID']))


def busy(path, own):
    spans = []
    for event in vevents(path):
        if event.get('STATUS', ({}, ''))[1].strip().upper() == 'CANCELLED':
            continue
        count, step = 1, timedelta(days=1)
        if 'RRULE' in event:
            rule = dict(part.split('=', 1) for part in event['RRULE'][1].split(';'))
            count = int(rule['COUNT'])
            step = timedelta(days=7 if rule['FREQ'] == 'WEEKLY' else 1)
        if 'DTSTART' not in event or 'DTEND' not in event:
            continue
        start, end = when(event['DTSTART'], own), when(event['DTEND'], own)
        for k in range(count):
            spans.append(((start + k * step).astimezone(UTC),
                          (end + k * step).astimezone(UTC)))
    return spans


def minutes_of(text):
    hours, minutes = text.strip().split(':')
    return int(hours) * 60 + int(minutes)
'''

PY_SEARCH = r'''
folder, team_path, names, length, now, notice, last, out = sys.argv[1:9]
team = json.loads(Path(team_path).read_text(encoding='utf-8'))
names = names.split(',')
length = timedelta(minutes=int(length))
first = datetime.strptime(now, '%Y-%m-%dT%H:%MZ').replace(tzinfo=UTC) + timedelta(hours=int(notice))
last = datetime.strptime(last, '%Y-%m-%dT%H:%MZ').replace(tzinfo=UTC)
people = {}
for name in names:
    info = team[name]
    own = zone_of(info['timezone'])
    hours = [minutes_of(x) for x in info['working_hours'].split('-')]
    lunch = [minutes_of(x) for x in info['lunch'].split('-')] if info.get('lunch') else None
    people[name] = (own, hours, lunch, busy(f'{folder}/{name}.ics', own))


def free(name, start, end):
    own, hours, lunch, spans = people[name]
    local, local_end = start.astimezone(own), end.astimezone(own)
    begin = local.hour * 60 + local.minute
    finish = begin + (end - start) // timedelta(minutes=1)
    same_day = local.date() == local_end.date()
    if not (local.weekday() < 5 and same_day and hours[0] <= begin and finish <= hours[1]):
        return False
    if lunch and same_day and begin < lunch[1] and lunch[0] < finish:
        return False
    return not any(s < end and start < e for s, e in spans)


start = first.replace(second=0, microsecond=0)
while start < first or start.minute % 15:
    start += timedelta(minutes=1)
while start + length <= last:
    if all(free(name, start, start + length) for name in names):
        break
    start += timedelta(minutes=15)
else:
    sys.exit('no slot')
'''
PY_SLOT = PY_SEARCH + r'''
Path(out).write_text(f'{start:%Y-%m-%dT%H:%MZ}/{start + length:%Y-%m-%dT%H:%MZ}\n',
                     encoding='utf-8')
'''
# The booking: a VEVENT in UTC before each attendee's END:VCALENDAR, line ends kept.
PY_BOOK = PY_SEARCH + r'''
title, uid = sys.argv[9:11]
for name in names:
    path = Path(f'{folder}/{name}.ics')
    text = path.read_bytes().decode('utf-8')
    eol = '\r\n' if '\r\n' in text else '\n'
    event = eol.join(['BEGIN:VEVENT', f'UID:{uid}-{name}', f'SUMMARY:{title}',
                      f'DTSTART:{start:%Y%m%dT%H%M%S}Z', f'DTEND:{start + length:%Y%m%dT%H%M%S}Z',
                      'END:VEVENT']) + eol
    at = text.rindex('END:VCALENDAR')
    path.write_bytes((text[:at] + event + text[at:]).encode('utf-8'))
'''

PY_CONFLICTS = r'''
folder, team_path, out = sys.argv[1:4]
team = json.loads(Path(team_path).read_text(encoding='utf-8'))
lines = []
for name in sorted(team, key=str.encode):
    spans = busy(f'{folder}/{name}.ics', zone_of(team[name]['timezone']))
    changes = {}
    for start, end in spans:
        changes[start] = changes.get(start, 0) + 1
        changes[end] = changes.get(end, 0) - 1
    points = sorted(changes.items())
    depth, opened = 0, None
    for moment, change in points:
        after = depth + change
        if depth < 2 <= after:
            opened = moment
        elif after < 2 <= depth:
            lines.append(f'{name} {opened:%Y-%m-%dT%H:%MZ} {moment:%Y-%m-%dT%H:%MZ}')
        depth = after
Path(out).write_text(''.join(line + '\n' for line in lines), encoding='utf-8')
'''

# The alternative's parser: regular expressions over the whole text, busy minutes as sets.
PY_MINUTES = r'''
import json
import re
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

MINUTE = timedelta(minutes=1)


def busy_minutes(path, zone_name):
    text = re.sub(r'\r?\n[ \t]', '', open(path, encoding='utf-8').read())
    own = ZoneInfo(zone_name)
    found = []
    for block in re.findall(r'^BEGIN:VEVENT\s*$(.*?)^END:VEVENT', text, re.S | re.M):
        props = {}
        for line in block.splitlines():
            match = re.match(r'([A-Za-z-]+)([^:]*):(.*)', line.rstrip('\r'))
            if match:
                props[match.group(1).upper()] = (match.group(2), match.group(3))
        if props.get('STATUS', ('', ''))[1].strip().upper() == 'CANCELLED':
            continue

        def moment(key):
            params, value = props[key]
            tz = re.search(r'TZID=([^;]+)', params)
            if 'VALUE=DATE' in params and 'VALUE=DATE-TIME' not in params:
                return datetime(int(value[:4]), int(value[4:6]), int(value[6:8]), tzinfo=own)
            naive = datetime(*(int(value[i:i + 2 + 2 * (i == 0)]) for i in (0, 4, 6, 9, 11, 13)))
            if value.endswith('Z'):
                return naive.replace(tzinfo=timezone.utc)
            return naive.replace(tzinfo=ZoneInfo(tz.group(1)))

        start, end = moment('DTSTART'), moment('DTEND')
        rule = props.get('RRULE', ('', ''))[1]
        count = int(re.search(r'COUNT=(\d+)', rule).group(1)) if rule else 1
        days = 7 if 'FREQ=WEEKLY' in rule else 1
        for k in range(count):
            first = (start + timedelta(days=days * k)).astimezone(timezone.utc)
            last = (end + timedelta(days=days * k)).astimezone(timezone.utc)
            minutes = []
            while first < last:
                minutes.append(int(first.timestamp()) // 60)
                first += MINUTE
            found.append(minutes)
    return found
'''

ALT_SEARCH = r'''
folder, team_path, names, length, now, notice, last, out = sys.argv[1:9]
team = json.load(open(team_path, encoding='utf-8'))
length = int(length)
begin = int(datetime.strptime(now, '%Y-%m-%dT%H:%MZ').replace(
    tzinfo=timezone.utc).timestamp()) // 60 + 60 * int(notice)
end = int(datetime.strptime(last, '%Y-%m-%dT%H:%MZ').replace(
    tzinfo=timezone.utc).timestamp()) // 60


def hhmm(text):
    return int(text[:2]) * 60 + int(text[3:5])


allowed = {}
for name in names.split(','):
    info = team[name]
    zone = ZoneInfo(info['timezone'])
    work = [hhmm(part) for part in info['working_hours'].split('-')]
    lunch = [hhmm(part) for part in info['lunch'].split('-')] if info.get('lunch') else [0, 0]
    taken = set()
    for minutes in busy_minutes(f'{folder}/{name}.ics', info['timezone']):
        taken.update(minutes)
    ok = set()
    for minute in range(begin, end):
        local = datetime.fromtimestamp(minute * 60, zone)
        clock = local.hour * 60 + local.minute
        if (local.weekday() < 5 and work[0] <= clock < work[1]
                and not lunch[0] <= clock < lunch[1] and minute not in taken):
            ok.add(minute)
    allowed[name] = ok
start = begin + (-begin) % 15
while start + length <= end:
    if all(all(m in ok for m in range(start, start + length)) for ok in allowed.values()):
        break
    start += 15
else:
    sys.exit('no slot found')
'''
ALT_SLOT = ALT_SEARCH + r'''


def iso(minute):
    return datetime.fromtimestamp(minute * 60, timezone.utc).strftime('%Y-%m-%dT%H:%MZ')


with open(out, 'w', encoding='utf-8') as handle:
    handle.write(iso(start) + '/' + iso(start + length) + END)
'''
# The alternative booking: local time with the attendee's TZID, the file rebuilt by lines.
ALT_BOOK = ALT_SEARCH + r'''
title, uid = sys.argv[9:11]
for name in names.split(','):
    zone = ZoneInfo(team[name]['timezone'])
    path = f'{folder}/{name}.ics'
    with open(path, encoding='utf-8', newline='') as handle:
        lines = handle.read().splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip() == 'END:VCALENDAR')

    def local(minute):
        return datetime.fromtimestamp(minute * 60, zone).strftime('%Y%m%dT%H%M%S')

    lines[last:last] = ['BEGIN:VEVENT', f'UID:{name}.{uid}', f'SUMMARY:{title}',
                        f'DTSTART;TZID={zone.key}:{local(start)}',
                        f'DTEND;TZID={zone.key}:{local(start + length)}', 'END:VEVENT']
    with open(path, 'w', encoding='utf-8', newline='') as handle:
        handle.write('\r\n'.join(lines) + '\r\n')
'''

ALT_CONFLICTS = r'''
from collections import Counter

folder, team_path, out = sys.argv[1:]
team = json.load(open(team_path, encoding='utf-8'))
rows = []


def iso(minute):
    return datetime.fromtimestamp(minute * 60, timezone.utc).strftime('%Y-%m-%dT%H:%MZ')


for name in sorted(team, key=lambda n: n.encode()):
    counts = Counter()
    for minutes in busy_minutes(f'{folder}/{name}.ics', team[name]['timezone']):
        counts.update(minutes)
    double = sorted(m for m, n in counts.items() if n >= 2)
    runs = []
    for minute in double:
        if runs and runs[-1][1] == minute:
            runs[-1][1] = minute + 1
        else:
            runs.append([minute, minute + 1])
    rows += [f'{name} {iso(a)} {iso(b)}' for a, b in runs]
with open(out, 'w', encoding='utf-8') as handle:
    handle.write('\n'.join(rows) + (END if rows else ''))
'''

# What each rule-ignoring solution changes in the reference (old, new).
IGNORING = {
    "tz": ("    return ZoneInfo(name)\n", "    return UTC\n"),
    "cancelled": ("== 'CANCELLED':\n            continue\n", "== 'CANCELLED':\n            pass\n"),
    "tentative": (".upper() == 'CANCELLED':", ".upper() in ('CANCELLED', 'TENTATIVE'):"),
    "allday": ("        count, step = 1, timedelta(days=1)\n",
               "        if event['DTSTART'][0].get('VALUE') == 'DATE':\n            continue\n"
               "        count, step = 1, timedelta(days=1)\n"),
    "rrule": ("            count = int(rule['COUNT'])\n", "            count = 1\n"),
    "weekly": ("step = timedelta(days=7 if rule['FREQ'] == 'WEEKLY' else 1)\n",
               "step = timedelta(days=1)\n"),
    "daily": ("step = timedelta(days=7 if rule['FREQ'] == 'WEEKLY' else 1)\n",
              "step = timedelta(days=7)\n"),
    "unfold": ("            lines[-1] += raw[1:]\n", "            pass\n"),
    "crlf": (r"    for raw in text.replace('\r\n', '\n').split('\n'):",
             r"    for raw in text.split('\n'):"),
    "hours": ("    if not (local.weekday() < 5 and",
              "    if False and not (local.weekday() < 5 and"),
    "lunch": ("    if lunch and same_day", "    if False and lunch and same_day"),
    "notice": ("+ timedelta(hours=int(notice))", "+ timedelta(hours=0)"),
    "localdays": ("strptime(value, '%Y%m%d').replace(tzinfo=own)",
                  "strptime(value, '%Y%m%d').replace(tzinfo=UTC)"),
    "merge": ("    points = sorted(changes.items())\n",
              "    points = sorted([(s, 1) for s, e in spans] + [(e, -1) for s, e in spans])\n"),
    "closed": ("    for start, end in spans:\n        changes[start]",
               "    spans = [(s, e + timedelta(seconds=1)) for s, e in spans]\n"
               "    for start, end in spans:\n        changes[start]"),
    "quarter": ("while start < first or start.minute % 15:\n    start += timedelta(minutes=1)\n"
                "while start + length <= last:\n    if all(free(name, start, start + length) "
                "for name in names):\n        break\n    start += timedelta(minutes=15)\n",
                "while start < first:\n    start += timedelta(minutes=1)\n"
                "while start + length <= last:\n    if all(free(name, start, start + length) "
                "for name in names):\n        break\n    start += timedelta(minutes=1)\n"),
    "touching": ("not any(s < end and start < e for", "not any(s <= end and start <= e for"),
    "attendees": ("for name in names:\n    path = Path(",
                  "for name in names[:1]:\n    path = Path("),
}


def _program(task: str, *ignored: str) -> str:
    """The reference program for `task` (PY_SLOT or PY_CONFLICTS), maybe with rules off."""
    text = PY_CALENDAR + task
    for name in ignored:
        old, new = IGNORING[name]
        if text.count(old) != 1:
            raise ValueError(f"the reference program has no single place for rule {name}")
        text = text.replace(old, new)
    return text


def _run(program: str, args: list[str]) -> str:
    """A bash fragment running a python3 program from a heredoc."""
    words = " ".join(q(a) for a in args)
    return f"python3 - {words} <<'TASKLOOM_PY'\n{program.strip()}\nTASKLOOM_PY"


def _where(calendars: CalendarSet) -> str:
    """How the instruction names the calendars (a previous step's phrase would say "file").

    After a booking it says the booked meeting is in them: a blind solver of red-team round
    7 could not tell whether "using the team calendars" meant before or after step 1.
    """
    booked = ", ".join(f'"{title}"' for title in calendars.booked)
    after = f"; they include {booked} as booked above" if booked else ""
    return (f"the team calendars in `{calendars.path}` (one `NAME.ics` per person, described "
            f"in `{calendars.team_path}`{after})")


def _calendars(source) -> CalendarSet:
    if not isinstance(source, CalendarSet) or len(source.people) < 2:
        raise NotApplicable("needs a team's calendars")
    return source


def _local_date(calendars: CalendarSet, name: str, moment: datetime):
    return moment.astimezone(ZoneInfo(calendars.person(name).zone)).date()


def _uid(ctx: StepContext) -> str:
    """A new event's UID, alike for every kind of event (`cancelled-...` named the trap)."""
    return f"event-{ctx.rng.randrange(16 ** 8):08x}@{ctx.domain.name}.example"


def _over(ctx: StepContext, calendars: CalendarSet, name: str, start: datetime,
          minutes: int, status: str, shift: int | None = None) -> CalendarSet:
    """The set with a meeting of `name` (of this status) over [start, +minutes)."""
    person = calendars.person(name)
    colleagues = [p for p in calendars.people if p.name != name]
    if shift is None:
        shift = ctx.rng.choice((0, 15, 30)) if minutes > 30 else 0
    title = ctx.rng.choice(("Quarterly review", "Vendor call", "Team lunch", "Coffee chat"))
    event = timed(ctx, name, person, colleagues, _uid(ctx),
                  {"CANCELLED": f"{title} (moved)", "TENTATIVE": f"{title}?"}.get(
                      status, title),
                  start + timedelta(minutes=shift), minutes, status=status)
    return calendars.with_events(name, _shuffled(ctx, (*calendars.of(name), event)))


def _weekly_over(ctx: StepContext, calendars: CalendarSet, name: str, start: datetime,
                 minutes: int) -> CalendarSet:
    """The set with a weekly meeting of `name` that began before and recurs at `start`."""
    person = calendars.person(name)
    weeks = ctx.rng.randint(1, 2)
    event = timed(ctx, name, person, [person], _uid(ctx),
                  f"Weekly {ctx.rng.choice(ctx.domain.services)} review",
                  start - timedelta(weeks=weeks), minutes,
                  rrule=f"FREQ=WEEKLY;COUNT={weeks + 1}", form=ctx.rng.choice(("own", "utc")))
    return calendars.with_events(name, _shuffled(ctx, (*calendars.of(name), event)))


def _daily_over(ctx: StepContext, calendars: CalendarSet, name: str, start: datetime,
                minutes: int) -> CalendarSet:
    """The set with a daily meeting of `name` that began days before and recurs at `start`.

    Read as weekly, it would miss `start`.
    """
    person = calendars.person(name)
    days = ctx.rng.randint(1, 4)
    event = timed(ctx, name, person, [person], _uid(ctx),
                  ctx.rng.choice(("Daily check-in", "Daily triage", "On-call handover")),
                  start - timedelta(days=days), minutes,
                  rrule=f"FREQ=DAILY;COUNT={days + ctx.rng.randint(1, 3)}",
                  form=ctx.rng.choice(("own", "utc")))
    return calendars.with_events(name, _shuffled(ctx, (*calendars.of(name), event)))


def _utc_day_covers(calendars: CalendarSet, name: str, day, start: datetime,
                    length: timedelta) -> bool:
    """True when the UTC day `day` overlaps [start, start + length)."""
    begin = datetime.combine(day, time(0), UTC)
    return begin < start + length and start < begin + timedelta(days=1)


# The traps `_traps` plants after the answer is settled (they keep the right answer).
TRAPS = ("weekly", "daily", "localdays", "unfold")


def _traps(ctx: StepContext, calendars: CalendarSet, names, start: datetime,
           length: timedelta, answer) -> CalendarSet:
    """Plant what makes weekly repeats, local days and folded lines matter.

    `answer(calendars, ignore)` is the step's answer with rules ignored; `start` and
    `length` are the span the right answer covers (a slot, or a double-booked meeting). A
    weekly event that began days before `start` (read daily, it would cover it), a day off
    on a neighbouring local day whose UTC day covers `start`, and a folded line of an event
    that matters: none of them changes the right answer.
    """
    right = answer(calendars, frozenset())

    def same(found: CalendarSet) -> bool:
        return answer(found, frozenset()) == right

    found = calendars
    if answer(found, frozenset({"weekly"})) == right:
        name = ctx.rng.choice(names)
        person = found.person(name)
        days = ctx.rng.randint(1, 3)
        event = timed(ctx, name, person, [person], _uid(ctx),
                      f"Weekly {ctx.rng.choice(ctx.domain.services)} check-in",
                      start - timedelta(days=days), 30,
                      rrule=f"FREQ=WEEKLY;COUNT={days + ctx.rng.randint(1, 2)}",
                      form=ctx.rng.choice(("own", "utc")))
        planted = found.with_events(name, _shuffled(ctx, (*found.of(name), event)))
        if same(planted):
            found = planted
    if answer(found, frozenset({"daily"})) == right:  # read weekly, it recurs at `start`
        name = ctx.rng.choice(names)
        person = found.person(name)
        event = timed(ctx, name, person, [person], _uid(ctx),
                      ctx.rng.choice(("Daily check-in", "Daily triage", "On-call handover")),
                      start - timedelta(weeks=1), 30,
                      rrule=f"FREQ=DAILY;COUNT={ctx.rng.randint(2, 6)}",
                      form=ctx.rng.choice(("own", "utc")))
        planted = found.with_events(name, _shuffled(ctx, (*found.of(name), event)))
        if same(planted):
            found = planted
    if answer(found, frozenset({"localdays"})) == right:
        options = [(name, _local_date(found, name, start) + timedelta(days=shift))
                   for name in names for shift in (-1, 1)]
        ctx.rng.shuffle(options)
        for name, day in options:
            if _utc_day_covers(found, name, day, start, length):
                planted = _whole_day(ctx, found, name, day)
                if same(planted) and answer(planted, frozenset({"localdays"})) != right:
                    found = planted
                    break
    return _fold_trap(ctx, found, names, answer)


def _fold_trap(ctx: StepContext, calendars: CalendarSet, names, answer) -> CalendarSet:
    """Fold a DTSTART/DTEND/RRULE/STATUS line whose misreading changes the answer."""
    right = answer(calendars, frozenset())
    if answer(calendars, frozenset({"unfold"})) != right:
        return calendars
    options = [(name, index, prop) for name in names
               for index, event in enumerate(calendars.of(name)) for prop in event.folds()
               if not event.fold]
    ctx.rng.shuffle(options)
    for name, index, prop in options[:40]:
        events = list(calendars.of(name))
        events[index] = events[index].folded(ctx, prop)
        planted = calendars.with_events(name, tuple(events))
        if answer(planted, frozenset({"unfold"})) != right:
            return planted
    return calendars


def _shuffled(ctx: StepContext, events: tuple[Event, ...]) -> tuple[Event, ...]:
    order = list(events)
    ctx.rng.shuffle(order)
    return tuple(order)


def _whole_day(ctx: StepContext, calendars: CalendarSet, name: str, day) -> CalendarSet:
    event = Event(_uid(ctx), ctx.rng.choice(("Out of office", "Offsite",
                                                                "Sick leave", "Conference")),
                  day, day + timedelta(days=1))
    return calendars.with_events(name, _shuffled(ctx, (*calendars.of(name), event)))


def _answers(calendars: CalendarSet, attendees: tuple[str, ...], minutes: int,
             notice: int) -> tuple[datetime | None, dict[str, datetime | None]]:
    right = earliest_slot(calendars, attendees, minutes, notice)
    return right, {rule: earliest_slot(calendars, attendees, minutes, notice,
                                       frozenset({rule})) for rule in SLOT_RULES}


def _attendees(ctx: StepContext, calendars: CalendarSet, tries: int) -> tuple[str, ...]:
    """Who meets: random, or (often) someone far from UTC and those near their offset.

    A whole-day event read as the UTC day frees or blocks the working hours of someone
    six or more hours from UTC; it changes the slot when the others work then too.
    """
    names = [p.name for p in calendars.people]
    offsets = {p.name: _offset(p.zone, calendars.monday) / timedelta(hours=1)
               for p in calendars.people}
    far = [name for name in names if calendars.person(name).zone in FAR]
    if far and tries % 3 != 2:
        first = ctx.rng.choice(far)
        near = [n for n in names if n != first and offsets[n] == offsets[first]]
        if near:
            others = ctx.rng.sample(near, min(len(near), ctx.rng.randint(1, 2)))
            return tuple(sorted([first, *others]))
    return tuple(sorted(ctx.rng.sample(names, ctx.rng.randint(2, min(4, len(names))))))


def _slot_answer(calendars: CalendarSet, ignore: frozenset[str], *, attendees, minutes: int,
                 notice: int) -> datetime | None:
    return earliest_slot(calendars, attendees, minutes, notice, ignore)


def _plan_slot(ctx: StepContext, calendars: CalendarSet):
    """(calendars, attendees, minutes, notice, answer, mutant answers) where rules show."""
    # a length the request named (quarter hours up to two hours), else one of MINUTES
    asked = next((n for n in ctx.numbers if 15 <= n <= 120 and n % 15 == 0), None)
    best = None
    for tries in range(40):
        attendees = _attendees(ctx, calendars, tries)
        minutes = asked or ctx.rng.choice(MINUTES)
        found = calendars
        unnoticed = earliest_slot(found, attendees, minutes, 0, frozenset({"notice"}))
        if unnoticed is None:
            continue
        gap = (unnoticed - found.now) / timedelta(hours=1)
        options = [hours for hours in NOTICE if hours > gap]
        if not options:
            continue
        notice = ctx.rng.choice(options[:2])
        answer = earliest_slot(found, attendees, minutes, notice)
        if answer is None:
            continue
        if found.pristine:
            length = timedelta(minutes=minutes)
            # a day off over the answer, preferably of someone whose UTC day would not be
            # a day off over the answer; where it can, one that read as the UTC day would
            # free or block other working hours (the answer then differs)
            days_off = []
            for who in attendees:
                day = _local_date(found, who, answer)
                if _local_date(found, who, unnoticed) == day:
                    continue  # the whole-day event would hide the slot before the notice too
                planted = _whole_day(ctx, found, who, day)
                moved = earliest_slot(planted, attendees, minutes, notice)
                if moved is not None:
                    days_off.append((earliest_slot(planted, attendees, minutes, notice,
                                                   frozenset({"localdays"})) == moved, planted))
            if not days_off:
                continue
            ctx.rng.shuffle(days_off)
            found = min(days_off, key=lambda option: option[0])[1]
            answer = earliest_slot(found, attendees, minutes, notice)
            if answer is None:
                continue
            if ctx.rng.random() < 0.5:  # a daily repeat from some days ago (not weekly)
                found = _daily_over(ctx, found, ctx.rng.choice(attendees), answer, minutes)
            else:
                found = _weekly_over(ctx, found, ctx.rng.choice(attendees), answer, minutes)
            answer = earliest_slot(found, attendees, minutes, notice)
            if answer is None:
                continue
            found = _over(ctx, found, ctx.rng.choice(attendees), answer, minutes, "TENTATIVE")
            answer = earliest_slot(found, attendees, minutes, notice)
            if answer is None:
                continue
            # an event ending 10 minutes past a quarter: the next start is a quarter later
            found = _over(ctx, found, ctx.rng.choice(attendees),
                          answer - QUARTER, 25, "CONFIRMED", shift=0)
            answer = earliest_slot(found, attendees, minutes, notice)
            if answer is None:
                continue
            found = _over(ctx, found, ctx.rng.choice(attendees),  # starts as the meeting ends
                          answer + timedelta(minutes=minutes), 30, "CONFIRMED", shift=0)
            across = [name for name in attendees
                      if _local_date(found, name, answer) != answer.date()]
            if across:  # a day off on the answer's UTC date, which is not its local date
                found = _whole_day(ctx, found, ctx.rng.choice(across), answer.date())
            found = _over(ctx, found, ctx.rng.choice(attendees), answer, minutes, "CANCELLED")
            answer = earliest_slot(found, attendees, minutes, notice)
            if answer is None:
                continue
            found = _traps(ctx, found, attendees, answer, length, partial(
                _slot_answer, attendees=attendees, minutes=minutes, notice=notice))
        right, wrong = _answers(found, attendees, minutes, notice)
        shown = [rule for rule in SLOT_RULES if wrong[rule] != right]
        if right is None:
            continue
        if found.pristine and not set(MANDATORY) <= set(shown):
            continue
        if not found.pristine and len(shown) < 3:
            continue
        # Preferred: every trap shows (whole days read as UTC days are rarer), and lunch
        # (no plant can make it matter without moving the answer: a request is drawn again
        # until the lunch-ignoring answer falls in someone's lunch; 60% did not before).
        score = (set(TRAPS) <= set(shown), "lunch" in shown)
        if best is None or score > best[0]:
            best = (score, (found, attendees, minutes, notice, right, wrong))
        if all(score) or tries > 20:
            return best[1]
    if best:
        return best[1]
    raise NotApplicable("no meeting request whose rules all show on these calendars")


RULE_NAMES = {"tz": "time-zones", "allday": "whole-day", "localdays": "local-days",
              "weekly": "weekly-repeats", "daily": "daily-repeats", "unfold": "folded-lines",
              "crlf": "crlf-line-ends"}
RULE_WORDS = {
    "tz": "that times are read in their time zones (TZID, UTC `Z`, each person's own zone)",
    "hours": "that the meeting lies within every attendee's working hours on a weekday",
    "allday": "that a whole-day event blocks the person's whole local day",
    "notice": "that the meeting starts no earlier than the minimum notice allows",
    "cancelled": "that cancelled events block no time",
    "tentative": "that tentative events block time too",
    "rrule": "that a repeating event blocks every one of its occurrences",
    "lunch": "that nobody meets during their lunch break",
    "quarter": "that the meeting starts on a quarter hour",
    "touching": "that an event starting as the meeting ends (touching) does not overlap it",
    "merge": "that each maximal stretch of double-booked time is one line",
    "localdays": "that a whole-day event covers the person's local day, not the UTC day",
    "weekly": "that a FREQ=WEEKLY event repeats once a week, not every day",
    "daily": "that a FREQ=DAILY event repeats every day, not once a week",
    "unfold": "that a folded line (a continuation starting with a space) joins the line "
              "before",
    "crlf": "that lines ending in CRLF are read like lines ending in LF",
}


def _names(attendees: tuple[str, ...]) -> str:
    return ", ".join(attendees[:-1]) + f" and {attendees[-1]}"


@primitive("schedule.find_meeting_slot")
def find_meeting_slot(ctx: StepContext, source) -> StepResult:
    """The earliest slot where every attendee is free, at work and given enough notice."""
    calendars, attendees, minutes, notice, answer, wrong = _plan_slot(ctx, _calendars(source))
    if calendars is not source:
        calendars.write(ctx, *sorted(p.name for p in calendars.people))
    end = answer + timedelta(minutes=minutes)
    line = f"{stamp(answer)}/{stamp(end)}"
    out = ctx.output_path("meeting-slot", "txt")
    week_end = datetime.combine(calendars.monday + timedelta(days=5), time(0), UTC)
    now = stamp(calendars.now)
    organizer = calendars.person(attendees[0])
    who = _names(attendees)
    rules_text = (f"It is now {now} (UTC). The meeting must start at least {notice} hours "
                  f"after now and on a quarter hour of UTC (minute 00, 15, 30 or 45), end by "
                  f"{stamp(week_end)}, lie within every attendee's working hours on one of "
                  "their weekdays, outside their lunch break, and overlap none of their "
                  "events (touching is fine).")
    fmt = ("one line `START/END`, both in UTC as `YYYY-MM-DDTHH:MMZ` (for example "
           "`2025-01-07T09:15Z/2025-01-07T10:00Z`)")
    sentence = ctx.phrase([
        f"{organizer.name.capitalize()} ({organizer.role}) wants a {minutes}-minute meeting "
        f"with {who} in the week of {calendars.monday:%A %Y-%m-%d}. Using {_where(calendars)}, "
        f"find the earliest slot that works and write it to `{out}` as {fmt}.",
        f"Find the earliest {minutes}-minute slot in {_where(calendars)} when {who} can "
        f"all meet during the week starting {calendars.monday:%Y-%m-%d}, and save it in `{out}` "
        f"as {fmt}.",
        f"Schedule a {minutes}-minute meeting for {who} as early as possible in the week of "
        f"{calendars.monday:%Y-%m-%d}: read {_where(calendars)} and write the chosen slot to "
        f"`{out}` as {fmt}.",
    ]) + " " + rules_text + ctx.hint("python3 with zoneinfo")
    args = [calendars.path, calendars.team_path, ",".join(attendees), str(minutes), now,
            str(notice), stamp(week_end), out]
    rules = tuple(Rule(RULE_NAMES.get(name, name),
                       RULE_WORDS[name], _run(_program(PY_SLOT, name), args))
                  for name in SLOT_RULES
                  if differs([f"{stamp(wrong[name])}/{stamp(wrong[name] + (end - answer))}"]
                             if wrong[name] else [], [line], "lines"))
    return StepResult(
        output=Report(path=out, phrase=f"the meeting slot for {who} (a `START/END` line in "
                      "UTC)", lines=(line,)),
        instruction=sentence, solution=_run(_program(PY_SLOT), args),
        alternative=ctx.python(args, PY_MINUTES + ALT_SLOT),
        checks=[FileText(f"`{out}` holds the earliest slot", path=out,
                         expected=lines_text([line]), compare=ctx.compare(order_matters=True))],
        tools=("python3",), notes=(format_notes(calendars),), rules=rules)


def conflicts(calendars: CalendarSet, ignore: frozenset[str] = frozenset()) -> list[str]:
    """`NAME START END` for each stretch of time where two of a person's events overlap."""
    lines = []
    for person in sorted(calendars.people, key=lambda p: p.name.encode()):
        changes: dict[datetime, int] = {}
        spans = busy(calendars, person.name, ignore)
        if "touching" in ignore:  # closed intervals: back-to-back events overlap
            spans = [(start, end + timedelta(seconds=1)) for start, end in spans]
        for start, end in spans:
            changes[start] = changes.get(start, 0) + 1
            changes[end] = changes.get(end, 0) - 1
        points = sorted(changes.items())
        if "merge" in ignore:  # one event at a time, ends first: touching stretches split
            points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
        depth, opened = 0, None
        for moment, change in points:
            after = depth + change
            if depth < 2 <= after:
                opened = moment
            elif after < 2 <= depth:
                lines.append(f"{person.name} {stamp(opened)} {stamp(moment)}")
            depth = after
    return lines


def _planted(ctx: StepContext, calendars: CalendarSet, name: str, colleagues: list,
             summary: str, begin: datetime, minutes: int, **options) -> Event:
    """A planted timed event of `name` (its zone form random unless given)."""
    return timed(ctx, name, calendars.person(name), colleagues,
                 _uid(ctx), summary, begin, minutes, **options)


def _late_meeting_on_day_off(ctx: StepContext, calendars: CalendarSet) -> CalendarSet:
    """A whole-day event and, that local day, a meeting that falls on another UTC day."""
    day = calendars.monday + timedelta(days=ctx.rng.randrange(5))
    far = [p for p in calendars.people
           if abs(_offset(p.zone, day) // timedelta(minutes=1)) >= 60]
    if not far:
        return calendars
    person = ctx.rng.choice(far)
    offset = _offset(person.zone, day)
    local = time(23, 0) if offset < timedelta(0) else time(0, 0)  # UTC: next / previous day
    start = datetime.combine(day, local, ZoneInfo(person.zone)).astimezone(UTC)
    title = "Late call with the other office" if offset < timedelta(0) else "Night deploy window"
    event = timed(ctx, person.name, person, [person], _uid(ctx), title,
                  start, 30, form="own")
    found = _whole_day(ctx, calendars, person.name, day)
    return found.with_events(person.name, _shuffled(ctx, (*found.of(person.name), event)))


def _offset(zone: str, day) -> timedelta:
    return datetime.combine(day, time(12), ZoneInfo(zone)).utcoffset() or timedelta(0)


def _plant_conflicts(ctx: StepContext, calendars: CalendarSet) -> CalendarSet:
    """Events that make each rule change the double bookings (a fresh input only)."""
    found = calendars
    for rule in CONFLICT_RULES:
        if differs(conflicts(found, frozenset({rule})), conflicts(found), "lines"):
            continue
        person = ctx.rng.choice(found.people)
        colleagues = [p for p in found.people if p is not person] or [person]
        if rule == "localdays":  # a day off, and a meeting that day outside its UTC day
            found = _late_meeting_on_day_off(ctx, found)
            continue
        if rule == "unfold":  # a folded line whose misreading changes the lines
            found = _fold_trap(ctx, found, [p.name for p in found.people],
                               lambda cal, ignore: conflicts(cal, ignore))
            continue
        if rule == "crlf":  # shown by CRLF files, or not at all
            continue
        meetings = [e for e in found.of(person.name) if not e.all_day and not e.rrule
                    and e.status != "CANCELLED" and e.end - e.start >= timedelta(minutes=30)]
        if not meetings:
            continue
        target = ctx.rng.choice(meetings)
        start, end = busy(found.with_events(person.name, (target,)), person.name)[0]
        added: list[Event] = []
        event = partial(_planted, ctx, found, person.name, colleagues)
        if rule in ("cancelled", "tentative"):
            found = _over(ctx, found, person.name, start, 30, rule.upper())
        elif rule == "allday":
            found = _whole_day(ctx, found, person.name, _local_date(found, person.name, start))
        elif rule == "tz":
            added.append(event("Call with a partner", start, 30, form="other"))
        elif rule == "rrule":
            weeks = ctx.rng.randint(1, 2)
            added.append(event("Weekly sync", start - timedelta(weeks=weeks), 30,
                               rrule=f"FREQ=WEEKLY;COUNT={weeks + 1}"))
        elif rule == "weekly":  # weekly from days ago: read daily, it hits the meeting
            days = ctx.rng.randint(1, 3)
            added.append(event(f"Weekly {ctx.rng.choice(ctx.domain.services)} check-in",
                               start - timedelta(days=days), 30,
                               rrule=f"FREQ=WEEKLY;COUNT={days + ctx.rng.randint(1, 2)}"))
        elif rule == "daily":  # daily from days ago: read weekly, it misses the meeting
            days = ctx.rng.randint(1, 4)
            added.append(event(ctx.rng.choice(("Daily check-in", "Daily triage")),
                               start - timedelta(days=days), 30,
                               rrule=f"FREQ=DAILY;COUNT={days + ctx.rng.randint(1, 2)}"))
        elif rule == "touching":  # back to back after the meeting
            added.append(event("Follow-up", end, 30))
        else:  # merge: two events that split the meeting's time between them
            added += [event("Prep", start, 15), event("Debrief", start + QUARTER,
                                                       (end - start) // timedelta(minutes=1)
                                                       - 15)]
        if added:
            found = found.with_events(person.name, _shuffled(
                ctx, (*found.of(person.name), *added)))
    return found


@primitive("schedule.find_conflicts")
def find_conflicts(ctx: StepContext, source) -> StepResult:
    """Every person's double-booked stretches of time, as sorted lines."""
    calendars = _calendars(source)
    if calendars.pristine:
        for _ in range(6):
            planted = _plant_conflicts(ctx, calendars)
            if all(differs(conflicts(planted, frozenset({r})), conflicts(planted), "lines")
                   for r in CONFLICT_RULES if r != "crlf" or planted.crlf):
                break
        else:
            raise NotApplicable("the calendars do not show every rule")
        calendars = planted
        calendars.write(ctx, *sorted(p.name for p in calendars.people))
    lines = conflicts(calendars)
    if not lines:
        raise NotApplicable("nobody is double-booked")
    out = ctx.output_path("double-bookings", "txt")
    compare = ctx.compare(order_matters=True)
    order = ctx.order("sorted by name (byte order), then by start")
    fmt = (f"one line `NAME START END` per stretch, START and END in UTC as "
           f"`YYYY-MM-DDTHH:MMZ`, {order}")
    definition = ("A person is double-booked while two or more of their events overlap; "
                  "each maximal stretch of such time is one line (recurring occurrences "
                  "count, wherever they fall).")
    sentence = ctx.phrase([
        f"Find every double booking in {_where(calendars)} and write them to `{out}`: {fmt}.",
        f"List, for each person of {_where(calendars)}, the stretches of time when they are "
        f"double-booked, into `{out}` as {fmt}.",
        f"Audit {_where(calendars)} for overlapping commitments: write to `{out}` {fmt}.",
    ]) + " " + definition + ctx.hint("python3 with zoneinfo, a sweep over start and end times")
    args = [calendars.path, calendars.team_path, out]
    words = {**RULE_WORDS, "touching": "that back-to-back events (one ending as the next "
             "starts) do not overlap"}
    rules = tuple(Rule(RULE_NAMES.get(name, name),
                       words[name], _run(_program(PY_CONFLICTS, {"touching": "closed"}.get(
                           name, name)), args))
                  for name in CONFLICT_RULES
                  if differs(conflicts(calendars, frozenset({name})), lines, compare))
    return StepResult(
        output=Report(path=out, phrase=f"the double bookings in {_where(calendars)} "
                      "(`NAME START END` lines, UTC)", lines=tuple(lines)),
        instruction=sentence, solution=_run(_program(PY_CONFLICTS), args),
        alternative=ctx.python(args, PY_MINUTES + ALT_CONFLICTS),
        checks=[FileText(f"`{out}` lists the double bookings", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("python3",), notes=(format_notes(calendars),), rules=rules)


# Test-side helpers (inlined in the test function), which the generator runs too: a
# calendar's VEVENT blocks as sorted unfolded lines, and its other lines. Component names
# are read in any case, as readers read them; the file is one VCALENDAR holding every event.
_BOOKED_HELPERS = r"""
import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo


def parse(text, path):
    text = text.replace('\r\n', '\n')
    lines = [line.rstrip() for line in re.sub(r'\n[ \t]', '', text).split('\n') if line.strip()]
    found, outside, stack, current, calendars = [], [], [], None, 0
    for line in lines:
        head, _, component = line.upper().partition(':')
        if head == 'BEGIN':
            if component == 'VCALENDAR':
                assert not stack and not calendars, (path, 'a second VCALENDAR')
                calendars += 1
            else:
                assert stack, (path, line, 'outside the VCALENDAR')
            if component == 'VEVENT':
                assert stack == ['VCALENDAR'], (path, 'a VEVENT inside', stack)
                current = []
            stack.append(component)
            if component == 'VEVENT':
                continue
        elif head == 'END':
            assert stack and stack[-1] == component, (path, line, stack)
            stack.pop()
            if component == 'VEVENT':
                found.append(sorted(current))
                current = None
                continue
        (outside if current is None else current).append(line)
    assert calendars == 1 and not stack, (path, 'not one whole VCALENDAR')
    return found, sorted(outside)


def blocks(path):
    return parse(Path(path).read_text(encoding='utf-8'), path)


def instant(lines, key):
    found = [line for line in lines if re.match(key + r'[;:]', line, re.I)]
    assert len(found) == 1, (key, lines)
    head, value = found[0].split(':', 1)
    if value.endswith('Z'):
        return datetime.strptime(value, '%Y%m%dT%H%M%SZ').replace(tzinfo=timezone.utc)
    zone = re.search(r';TZID=([^;:]+)', head, re.I)
    assert zone, found[0]
    local = datetime.strptime(value, '%Y%m%dT%H%M%S')
    return local.replace(tzinfo=ZoneInfo(zone.group(1).strip('"')))
"""
_HELPERS: dict = {"Path": Path}
exec(_BOOKED_HELPERS, _HELPERS)  # our own constant: the generator reads as the test reads
# Properties that make one event into several, or free its time, or cancel it.
NOT_ONE_BUSY_EVENT = ("RRULE", "RDATE", "EXDATE", "EXRULE", "DURATION", "RECURRENCE-ID")


@dataclass(frozen=True)
class MeetingBooked(Assertion):
    """Each attendee's calendar keeps its events and gains the meeting; no one else's.

    Events compare as their unfolded property lines, in any order.
    """

    # path, events, the other lines (sorted), booked
    files: tuple[tuple[str, tuple[tuple[str, ...], ...], tuple[str, ...], bool], ...] = ()
    summary: str = ""
    start: str = ""  # UTC, YYYY-MM-DDTHH:MM
    end: str = ""

    def body(self) -> list[str]:
        """Each calendar: its old events, its other lines, then the one new event.

        No calendar file may be added.
        """
        files = [(path, [list(event) for event in events], list(other), booked)
                 for path, events, other, booked in self.files]
        folder = posixpath.dirname(self.files[0][0])
        return [
            *(line for line in _BOOKED_HELPERS.strip("\n").split("\n") if line.strip()),
            f"expected = [datetime.strptime(x, '%Y-%m-%dT%H:%M').replace(tzinfo=timezone.utc) "
            f"for x in {[self.start, self.end]!r}]",
            f"known = {sorted(posixpath.basename(path) for path, *_ in self.files)!r}",
            f"added = [name for name in os.listdir({folder!r}) "
            "if name.lower().endswith('.ics') and name not in known]",
            "assert not added, ('calendars added', added)",
            f"for path, events, other, booked in {files!r}:",
            "    rest, outside = blocks(path)",
            "    assert outside == other, (path, 'lines outside the events changed')",
            "    for event in events:",
            "        assert event in rest, (path, event)",
            "        rest.remove(event)",
            "    if not booked:",
            "        assert rest == [], (path, rest)",
            "        continue",
            "    assert len(rest) == 1, (path, rest)",
            "    heads = [line.partition(':')[0].split(';')[0].upper() for line in rest[0]]",
            "    for key in ('UID', 'SUMMARY', 'DTSTART', 'DTEND'):",
            "        assert heads.count(key) == 1, (path, key, rest[0])",
            "    assert heads.count('STATUS') <= 1 and heads.count('TRANSP') <= 1, rest[0]",
            f"    assert not set(heads).intersection({NOT_ONE_BUSY_EVENT!r}), rest[0]",
            "    props = {}",
            "    for line in rest[0]:",
            "        head, _, value = line.partition(':')",
            "        props[head.split(';')[0].upper()] = value.strip()",
            f"    assert props.get('SUMMARY') == {self.summary!r}, props",
            "    uids = {line.partition(':')[2].strip() for event in events for line in event "
            "if line.upper().startswith('UID:')}",
            "    assert props.get('UID') and props['UID'] not in uids, props",
            "    assert props.get('STATUS', '').upper() != 'CANCELLED', props",
            "    assert props.get('TRANSP', 'OPAQUE').upper() == 'OPAQUE', props",
            "    assert [instant(rest[0], 'DTSTART'), instant(rest[0], 'DTEND')] == expected",
        ]

    def reads(self) -> tuple[str, ...]:
        """The calendar files."""
        return tuple(path for path, *_ in self.files)


TITLES = ("Quarterly planning", "Interview loop debrief", "Incident review", "Roadmap sync",
          "Budget review", "Launch readiness", "Design critique", "Customer escalation")


@primitive("schedule.book_meeting")
def book_meeting(ctx: StepContext, source) -> StepResult:
    """Book the earliest workable slot into every attendee's calendar."""
    calendars, attendees, minutes, notice, answer, wrong = _plan_slot(ctx, _calendars(source))
    if calendars is not source:
        calendars.write(ctx, *sorted(p.name for p in calendars.people))
    title = ctx.rng.choice(TITLES)
    uid = f"booked-{ctx.rng.randrange(16 ** 6):06x}"
    end = answer + timedelta(minutes=minutes)
    week_end = datetime.combine(calendars.monday + timedelta(days=5), time(0), UTC)
    now = stamp(calendars.now)
    who = _names(attendees)
    rules_text = (f"It is now {now} (UTC). The meeting must start at least {notice} hours "
                  f"after now and on a quarter hour of UTC (minute 00, 15, 30 or 45), end by "
                  f"{stamp(week_end)}, lie within every attendee's working hours on one of "
                  "their weekdays, outside their lunch break, and overlap none of their "
                  "events (touching is fine); take the earliest such slot.")
    event = (f"add one VEVENT to each attendee's own calendar file, inside its VCALENDAR, with "
             f"`SUMMARY:{title}`, a UID no other event in that file has, and DTSTART/DTEND "
             "of the slot (in UTC ending in `Z`, or local time with a `TZID`); leave every "
             "existing event as it is and add nothing to anyone else's calendar")
    sentence = ctx.phrase([
        f"Book a {minutes}-minute \"{title}\" for {who} in {_where(calendars)} during the week "
        f"of {calendars.monday:%A %Y-%m-%d}: {event}.",
        f"Put a {minutes}-minute meeting \"{title}\" with {who} into {_where(calendars)} at the "
        f"earliest time that works in the week starting {calendars.monday:%Y-%m-%d}: {event}.",
        f"Schedule \"{title}\" ({minutes} minutes; attendees {who}) as early as possible in "
        f"the week of {calendars.monday:%Y-%m-%d} and record it in {_where(calendars)}: {event}.",
    ]) + " " + rules_text + ctx.hint("python3 with zoneinfo")
    args = [calendars.path, calendars.team_path, ",".join(attendees), str(minutes), now,
            str(notice), stamp(week_end), "-", title, uid]
    booked = {}
    for name in attendees:
        new = Event(f"{uid}-{name}", title, answer.astimezone(UTC).replace(tzinfo=None),
                    end.astimezone(UTC).replace(tzinfo=None))
        booked[name] = (*calendars.of(name), new)
    output = calendars
    for name, events in booked.items():
        output = output.with_events(name, events)
    output = replace(output, booked=(*calendars.booked, title))
    output = replace(output, phrase=_where(output))
    rules = [Rule(RULE_NAMES.get(name, name),
                  RULE_WORDS[name], _run(_program(PY_BOOK, name), args))
             for name in SLOT_RULES if wrong[name] != answer]
    rules.append(Rule("every-attendee", "that every attendee's calendar gets the meeting",
                      _run(_program(PY_BOOK, "attendees"), args)))
    files = []
    for person in calendars.people:
        path = calendars.file(person.name)
        events, other = _HELPERS["parse"](calendars.text(person.name), path)
        files.append((path, tuple(tuple(event) for event in events), tuple(other),
                      person.name in attendees))
    return StepResult(
        output=output, instruction=sentence, solution=_run(_program(PY_BOOK), args),
        alternative=ctx.python(args, PY_MINUTES + ALT_BOOK),
        checks=[MeetingBooked(f"\"{title}\" is booked for {who}", files=tuple(files),
                              summary=title,
                              start=answer.strftime("%Y-%m-%dT%H:%M"),
                              end=end.strftime("%Y-%m-%dT%H:%M"))],
        tools=("python3",), notes=(format_notes(calendars),), rules=tuple(rules),
        side_effect=True)
