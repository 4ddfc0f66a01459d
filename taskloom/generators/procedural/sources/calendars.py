"""Calendars: a team's iCalendar files (one per person) and the team file beside them.

Each person has a time zone (an IANA name), working hours (local, Monday to Friday) and
maybe a lunch break, all in `team.json`. Their `NAME.ics` holds VEVENTs whose times are
UTC (`...Z`), local to a TZID (their own zone, or a colleague's who sent the invitation)
or whole days (`VALUE=DATE`, the end date exclusive, blocking the person's local days);
some repeat (`RRULE:FREQ=DAILY|WEEKLY;COUNT=n`, at the same local time) and some are
cancelled (`STATUS:CANCELLED`, no longer blocking). Noise adds folded lines (a long
DESCRIPTION, and DTSTART/DTEND/RRULE/STATUS lines cut inside their name), CRLF line ends
(sometimes without noise too) and VTIMEZONE blocks whose DTSTART lines are no events.

`busy` is what the calendars mean, with any of the stated rules switched off (`ignore`):
the primitives compute answers and the wrong answers of rule-ignoring solutions with it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import ClassVar
from zoneinfo import ZoneInfo

from taskloom.generators.procedural.artifacts import Artifact
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import data_dir

# Teams whose members' working hours overlap (UTC offsets in December and January).
TEAMS = (
    ("Europe/Lisbon", "Europe/Berlin", "America/New_York", "America/Sao_Paulo",
     "Europe/London", "Africa/Lagos", "America/Los_Angeles"),
    ("Europe/Berlin", "Asia/Kolkata", "Africa/Nairobi", "Europe/London", "Asia/Dubai",
     "Europe/Athens", "Australia/Sydney"),
    ("America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
     "America/Sao_Paulo", "America/Bogota"),
    ("Asia/Tokyo", "Australia/Sydney", "Asia/Singapore", "Asia/Kolkata", "Asia/Seoul",
     "Asia/Manila"),
)
ROLES = ("engineering manager", "product manager", "designer", "staff engineer",
         "recruiter", "account executive", "data scientist", "support lead", "analyst",
         "team lead", "QA engineer", "technical writer")
QUARTER = timedelta(minutes=15)
# Zones whose local days are far from UTC days within working hours (late in the
# Americas, early in Australia): there a whole-day event read as the UTC day shows.
FAR = ("America/Los_Angeles", "America/Denver", "Australia/Sydney")


@dataclass(frozen=True)
class Person:
    """One team member as team.json describes them."""

    name: str
    role: str
    zone: str  # IANA time zone name
    hours: tuple[int, int]  # working hours, minutes after local midnight
    lunch: tuple[int, int] | None = None

    def entry(self) -> dict:
        """The person's object in team.json."""
        value = {"role": self.role, "timezone": self.zone,
                 "working_hours": f"{clock(self.hours[0])}-{clock(self.hours[1])}"}
        if self.lunch:
            value["lunch"] = f"{clock(self.lunch[0])}-{clock(self.lunch[1])}"
        return value


@dataclass(frozen=True)
class Event:
    """One VEVENT: local start and end in `zone` ('' = UTC), or whole days."""

    uid: str
    summary: str
    start: datetime | date
    end: datetime | date
    zone: str = ""  # the TZID; '' writes UTC times with a Z
    status: str = ""  # '', CONFIRMED, TENTATIVE or CANCELLED
    rrule: str = ""  # FREQ=DAILY;COUNT=n or FREQ=WEEKLY;COUNT=n
    extra: tuple[str, ...] = ()  # other property lines, already folded
    fold: str = ""  # DTSTART, DTEND, RRULE or STATUS: that line is folded inside its name
    fold_at: int = 2  # where the name is cut (the continuation line starts with a space)

    @property
    def all_day(self) -> bool:
        """True for a whole-day event (VALUE=DATE)."""
        return not isinstance(self.start, datetime)

    def lines(self) -> list[str]:
        """The VEVENT's lines."""
        def stamp(name: str, value: datetime | date) -> str:
            if self.all_day:
                return f"{name};VALUE=DATE:{value:%Y%m%d}"
            if not self.zone:
                return f"{name}:{value:%Y%m%dT%H%M%S}Z"
            return f"{name};TZID={self.zone}:{value:%Y%m%dT%H%M%S}"
        lines = ["BEGIN:VEVENT", f"UID:{self.uid}", *self.extra[:1], f"SUMMARY:{self.summary}",
                 stamp("DTSTART", self.start), stamp("DTEND", self.end)]
        if self.rrule:
            lines.append(f"RRULE:{self.rrule}")
        if self.status:
            lines.append(f"STATUS:{self.status}")
        lines = [*lines, *self.extra[1:], "END:VEVENT"]
        if self.fold:
            at = next(i for i, line in enumerate(lines)
                      if re.match(self.fold + "[;:]", line))
            lines[at:at + 1] = [lines[at][:self.fold_at], " " + lines[at][self.fold_at:]]
        return lines

    def folds(self) -> tuple[str, ...]:
        """The property lines that may be folded inside their name (a parser must unfold)."""
        return ("DTSTART", "DTEND", *(("RRULE",) if self.rrule else ()),
                *(("STATUS",) if self.status == "CANCELLED" else ()))

    def folded(self, ctx: StepContext, prop: str | None = None) -> Event:
        """The event with one of its DTSTART/DTEND/RRULE/STATUS lines folded."""
        prop = prop or ctx.rng.choice(self.folds())
        return replace(self, fold=prop, fold_at=ctx.rng.randint(1, len(prop) - 1))


def clock(minutes: int) -> str:
    """Minutes after midnight as HH:MM."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def stamp(moment: datetime) -> str:
    """A UTC instant as the outputs write it: YYYY-MM-DDTHH:MMZ."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


@dataclass(frozen=True, eq=False)
class CalendarSet(Artifact):
    """A folder of per-person .ics calendars and the team file (path: the folder)."""

    team_path: str = ""
    people: tuple[Person, ...] = ()
    events: tuple[tuple[str, tuple[Event, ...]], ...] = ()  # (person, events) per person
    monday: date = date(2025, 12, 1)  # the week the task is about (Monday to Friday)
    now: datetime = datetime(2025, 12, 1, 8, 0, tzinfo=UTC)
    crlf: bool = False
    zones_block: bool = False  # VTIMEZONE blocks in the files
    booked: tuple[str, ...] = ()  # titles earlier steps booked, in order
    kind: ClassVar[str] = "calendar_set"

    @property
    def pristine(self) -> bool:
        """As the source wrote it (nothing booked yet): a step may still plant events."""
        return not self.booked

    def person(self, name: str) -> Person:
        """The named person."""
        return next(p for p in self.people if p.name == name)

    def of(self, name: str) -> tuple[Event, ...]:
        """The named person's events."""
        return dict(self.events)[name]

    @property
    def has_folds(self) -> bool:
        """True when some line of some file is folded."""
        return any(e.fold or any(x.startswith(" ") for x in e.extra)
                   for _, events in self.events for e in events)

    def file(self, name: str) -> str:
        """The path of a person's calendar."""
        return f"{self.path}/{name}.ics"

    def with_events(self, name: str, events: tuple[Event, ...]) -> CalendarSet:
        """The set with one person's events replaced."""
        return replace(self, events=tuple((n, events if n == name else e)
                                          for n, e in self.events))

    def text(self, name: str) -> str:
        """The content of a person's .ics file."""
        lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Taskloom//Team Calendar//EN",
                 f"X-WR-CALNAME:{name}"]
        person = self.person(name)
        if self.zones_block:
            zones = sorted({person.zone} | {e.zone for e in self.of(name) if e.zone})
            for zone in zones:
                lines += _vtimezone(zone)
        for event in self.of(name):
            lines += event.lines()
        lines.append("END:VCALENDAR")
        end = "\r\n" if self.crlf else "\n"
        return "".join(line + end for line in lines)

    def team_text(self) -> str:
        """The content of team.json."""
        return json.dumps({p.name: p.entry() for p in self.people}, indent=2) + "\n"

    def write(self, ctx: StepContext, *names: str) -> None:
        """Write the named people's calendars (every file and team.json without names)."""
        for name in names or [p.name for p in self.people]:
            ctx.world.add(self.file(name), self.text(name))
        if not names:
            ctx.world.add(self.team_path, self.team_text())


def _vtimezone(zone: str) -> list[str]:
    """A VTIMEZONE block for the zone's winter offset: noise for a naive DTSTART grep."""
    offset = datetime(2026, 1, 15, tzinfo=ZoneInfo(zone)).utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    text = f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"
    return ["BEGIN:VTIMEZONE", f"TZID:{zone}", "BEGIN:STANDARD", "DTSTART:19701025T030000",
            f"TZOFFSETFROM:{text}", f"TZOFFSETTO:{text}", "END:STANDARD", "END:VTIMEZONE"]


def zone_of(name: str, ignore: frozenset[str]):
    """The tzinfo of a zone name; UTC when time zones are ignored."""
    return UTC if "tz" in ignore else ZoneInfo(name)


def busy(calendars: CalendarSet, name: str,
         ignore: frozenset[str] = frozenset()) -> list[tuple[datetime, datetime]]:
    """The person's busy intervals in UTC, with the rules in `ignore` switched off.

    Rules: `tz` (TZIDs and the person's zone read as UTC), `cancelled` (cancelled events
    block time), `tentative` (tentative ones do not), `allday` (whole-day events do not),
    `localdays` (whole days are UTC days), `rrule` (only the first occurrence), `weekly`
    (weekly repeats read as daily), `daily` (daily repeats read as weekly), `unfold`
    (folded lines not joined: a folded DTSTART/DTEND loses the event, a folded RRULE
    the repeats, a folded STATUS the cancellation), `crlf` (CRLF lines not read: no
    events at all in CRLF files).
    """
    if "crlf" in ignore and calendars.crlf:
        return []
    own = zone_of(calendars.person(name).zone, ignore)
    found = []
    for event in calendars.of(name):
        if "unfold" in ignore and event.fold:
            if event.fold in ("DTSTART", "DTEND"):
                continue
            event = replace(event, **{event.fold.lower(): ""})
        if event.status == "CANCELLED" and "cancelled" not in ignore:
            continue
        if event.status == "TENTATIVE" and "tentative" in ignore:
            continue
        if event.all_day:
            days = UTC if "localdays" in ignore else own  # UTC days instead of local ones
            if "allday" not in ignore:
                found.append((datetime.combine(event.start, time(0), days).astimezone(UTC),
                              datetime.combine(event.end, time(0), days).astimezone(UTC)))
            continue
        zone = zone_of(event.zone, ignore) if event.zone else UTC
        start, end = event.start.replace(tzinfo=zone), event.end.replace(tzinfo=zone)
        count, step = 1, timedelta(days=1)
        if event.rrule and "rrule" not in ignore:
            parts = dict(part.split("=") for part in event.rrule.split(";"))
            count = int(parts["COUNT"])
            step = timedelta(days=7 if parts["FREQ"] == "WEEKLY" else 1)
            if "weekly" in ignore:
                step = timedelta(days=1)
            if "daily" in ignore:
                step = timedelta(days=7)
        for number in range(count):  # wall-clock arithmetic: the same local time
            found.append(((start + number * step).astimezone(UTC),
                          (end + number * step).astimezone(UTC)))
    return sorted(found)


SUMMARIES = ("1:1 with {other}", "{svc} sync", "Sprint planning", "Customer call",
             "Design review", "Interview: {role} candidate", "Focus time", "Retro",
             "{svc} incident review", "Budget check-in", "Roadmap review with {other}",
             "Hiring debrief", "Vendor demo", "Pairing with {other}", "All hands prep")
ALL_DAY = ("Out of office", "Public holiday", "Offsite", "Conference", "Training day",
           "Parental leave", "Travel")
LOCATIONS = ("Room Orion", "Room Vega", "Video call", "Cafeteria", "Room 4.12")


def _extra(ctx: StepContext, uid: str, domain_name: str) -> tuple[str, ...]:
    """A DTSTAMP first, then at noise 2+ a location and a long folded description."""
    lines = [f"DTSTAMP:202511{ctx.rng.randint(10, 28):02d}T{ctx.rng.randint(0, 23):02d}"
             f"{ctx.rng.randint(0, 59):02d}00Z"]
    if ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.5:
        lines.append(f"LOCATION:{ctx.rng.choice(LOCATIONS)}")
    if ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.4:
        text = (f"DESCRIPTION:Agenda for {uid.split('@')[0]}: review the open {domain_name} "
                "items\\, agree on owners and dates\\, and note follow-ups in the shared "
                "document before the next session.")
        lines += [text[:74], *(" " + text[i:i + 73] for i in range(74, len(text), 73))]
    return tuple(lines)


def timed(ctx: StepContext, name: str, person: Person, colleagues: list[Person], uid: str,
          summary: str, start_utc: datetime, minutes: int, *, status: str = "",
          rrule: str = "", form: str | None = None) -> Event:
    """An event at a UTC instant, written in UTC, in the person's zone or a colleague's."""
    if form is None:
        form = ctx.rng.choices(("own", "utc", "other"), (5, 3, 2))[0]
    zone = {"own": person.zone, "utc": "",
            "other": ctx.rng.choice(colleagues).zone if colleagues else person.zone}[form]
    local = start_utc.astimezone(ZoneInfo(zone)) if zone else start_utc.astimezone(UTC)
    start = local.replace(tzinfo=None)
    return Event(uid, summary, start, start + timedelta(minutes=minutes), zone, status, rrule,
                 _extra(ctx, uid, ctx.domain.name))


@source("calendar_set")
def calendar_set(ctx: StepContext) -> CalendarSet:
    """A team's calendars for one working week, with recurring, all-day and cancelled events."""
    domain = ctx.domain
    zones = list(ctx.rng.choice(TEAMS))
    size = ctx.count((3, 4), (4, 6), (6, 8))
    names = sorted(ctx.rng.sample(list(domain.people), size))
    people = []
    for name in names:
        start = ctx.rng.choice((8 * 60, 8 * 60 + 30, 9 * 60, 9 * 60 + 30, 10 * 60))
        lunch = None
        if ctx.rng.random() < 0.6:
            begin = ctx.rng.choice((12 * 60, 12 * 60 + 30, 13 * 60))
            lunch = (begin, begin + ctx.rng.choice((30, 60)))
        people.append(Person(name, ctx.rng.choice(ROLES), ctx.rng.choice(zones),
                             (start, start + ctx.rng.choice((8, 8, 9)) * 60), lunch))
    far = [z for z in zones if z in FAR]
    if far and ctx.rng.random() < 0.8:  # two colleagues far from UTC, in one zone
        zone = ctx.rng.choice(far)
        begin = ctx.rng.choice((8 * 60, 8 * 60 + 30) if zone == "Australia/Sydney" else
                               (9 * 60 + 30, 10 * 60))  # overlapping the other offices
        for index in ctx.rng.sample(range(len(people)), 2):
            people[index] = replace(people[index], zone=zone, hours=(begin, begin + 9 * 60))
    monday = date(2025, 12, 1) + timedelta(weeks=ctx.rng.randint(0, 8))
    counter = 0
    events = []
    cancelled_share = (0.05, 0.12, 0.2)[ctx.difficulty.noise - 1]
    for person in people:
        zone = ZoneInfo(person.zone)
        others = [p for p in people if p is not person]
        mine: list[Event] = []

        def uid() -> str:
            nonlocal counter
            counter += 1
            return f"{counter:04d}-{ctx.rng.randrange(16 ** 6):06x}@{domain.name}.example"

        def summary(others: list[Person] = others) -> str:
            return ctx.rng.choice(SUMMARIES).format(
                other=ctx.rng.choice(others).name.capitalize() if others else "Sam",
                svc=ctx.rng.choice(domain.services), role=ctx.rng.choice(ROLES))

        for offset in range(5):
            day = monday + timedelta(days=offset)
            for _ in range(ctx.count((1, 3), (2, 4), (3, 5))):
                grid = 5 if ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.3 else 15
                begin = ctx.rng.randrange(person.hours[0] - 60, person.hours[1], grid)
                local = datetime.combine(day, time(0), zone) + timedelta(minutes=begin)
                status = "CANCELLED" if ctx.rng.random() < cancelled_share else \
                    ctx.rng.choice(("", "", "CONFIRMED", "TENTATIVE"))
                mine.append(timed(ctx, person.name, person, others, uid(), summary(),
                                  local.astimezone(UTC), ctx.rng.choice((15, 30, 45, 60, 90)),
                                  status=status))
        if ctx.rng.random() < 0.6:  # a weekly meeting that began weeks ago
            weeks = ctx.rng.randint(1, 3)
            day = monday - timedelta(weeks=weeks) + timedelta(days=ctx.rng.randrange(5))
            begin = ctx.rng.randrange(person.hours[0], person.hours[1] - 60, 30)
            local = datetime.combine(day, time(0), zone) + timedelta(minutes=begin)
            mine.append(timed(ctx, person.name, person, others, uid(),
                              f"Weekly {ctx.rng.choice(domain.services)} sync",
                              local.astimezone(UTC), ctx.rng.choice((30, 60)),
                              rrule=f"FREQ=WEEKLY;COUNT={weeks + ctx.rng.randint(1, 3)}",
                              form=ctx.rng.choice(("own", "utc"))))
        if ctx.rng.random() < 0.5:  # a daily stand-up from Monday
            begin = person.hours[0] + ctx.rng.choice((0, 15, 30))
            local = datetime.combine(monday, time(0), zone) + timedelta(minutes=begin)
            mine.append(timed(ctx, person.name, person, others, uid(), "Daily standup",
                              local.astimezone(UTC), 15, rrule="FREQ=DAILY;COUNT=5",
                              form="own"))
        if ctx.rng.random() < 0.35:
            day = monday + timedelta(days=ctx.rng.randrange(5))
            mine.append(Event(uid(), ctx.rng.choice(ALL_DAY), day, day + timedelta(days=1),
                              extra=_extra(ctx, "day", domain.name)))
        if ctx.difficulty.noise >= 2:  # a few property lines folded inside their name
            mine = [e.folded(ctx) if not e.all_day and ctx.rng.random() < 0.1 else e
                    for e in mine]
        ctx.rng.shuffle(mine)
        events.append((person.name, tuple(mine)))
    folder = data_dir(ctx, "calendars")
    now = datetime.combine(monday, time(0), UTC) + timedelta(
        minutes=ctx.rng.randrange(5 * 60, 10 * 60, 5))
    calendars = CalendarSet(
        path=folder, phrase=f"the team calendars in `{folder}` (one `NAME.ics` per person, "
        f"described in `{folder}/team.json`)", team_path=f"{folder}/team.json",
        people=tuple(people), events=tuple(events), monday=monday, now=now,
        crlf=ctx.difficulty.noise >= 2 or ctx.difficulty.edge_cases == 3
        or ctx.rng.random() < 0.3,
        zones_block=ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.7)
    calendars.write(ctx)
    return calendars


def format_notes(calendars: CalendarSet) -> str:
    """What the instruction says about the files (the rules every scheduling step uses)."""
    return (f"`{calendars.team_path}` gives each person's IANA time zone, working hours "
            "(local time, Monday to Friday only) and, for some, a lunch break (local time, "
            "never available for meetings). In each iCalendar file, only VEVENT blocks are "
            "events: DTSTART/DTEND are UTC when they end in `Z`, local time in the IANA zone "
            "named by `TZID` otherwise, or whole days with `VALUE=DATE` (the DTEND date is "
            "excluded; such an event blocks the person's whole local day in their own zone). "
            "`RRULE:FREQ=DAILY;COUNT=n` / `FREQ=WEEKLY;COUNT=n` repeats an event n times in "
            "all, each day or week at the same local time. An event with `STATUS:CANCELLED` "
            "blocks no time; every other event (tentative ones too) does. "
            + ("Lines end in CRLF. " if calendars.crlf else "")
            + ("A line may be folded anywhere, even inside its name (a continuation line "
               "starts with a space and continues the line before). " if calendars.has_folds
               else "")
            + "Intervals are half-open: an event ending at 10:00 does not overlap one "
            "starting at 10:00.")


def ceil_quarter(moment: datetime) -> datetime:
    """The first quarter hour (UTC) at or after an instant."""
    base = moment.replace(second=0, microsecond=0)
    if base < moment:
        base += timedelta(minutes=1)
    return base + timedelta(minutes=-base.minute % 15)


def at_work(person: Person, zone, start: datetime, end: datetime,
            ignore: frozenset[str]) -> bool:
    """True when [start, end) is within the person's working hours and not at lunch."""
    local, local_end = start.astimezone(zone), end.astimezone(zone)
    minute = local.hour * 60 + local.minute
    minute_end = minute + int((end - start).total_seconds()) // 60
    if "hours" not in ignore and not (
            local.weekday() < 5 and local.date() == local_end.date()
            and person.hours[0] <= minute and minute_end <= person.hours[1]):
        return False
    return not (person.lunch and "lunch" not in ignore and local.date() == local_end.date()
                and minute < person.lunch[1] and person.lunch[0] < minute_end)


def earliest_slot(calendars: CalendarSet, attendees: tuple[str, ...], minutes: int,
                  notice_hours: int, ignore: frozenset[str] = frozenset()) -> datetime | None:
    """The earliest quarter-hour start of a meeting everyone can attend, in the week.

    Someone can attend [start, end) when at work, not at lunch and not busy. Beside
    `busy`'s and `at_work`'s rules: `notice` (from now), `quarter` (any minute), `touching`
    (closed intervals: back to back counts as overlapping).

    A start that overlaps a busy interval moves on past the interval's end at once: every
    start before it overlaps the interval too (a week of minutes, tried one by one, made
    meeting tasks the slowest to plan).
    """
    first = calendars.now if "notice" in ignore else \
        calendars.now + timedelta(hours=notice_hours)
    last = datetime.combine(calendars.monday + timedelta(days=5), time(0), UTC)
    people = []
    for name in attendees:
        person = calendars.person(name)
        people.append((person, zone_of(person.zone, ignore), busy(calendars, name, ignore)))
    start, step = ceil_quarter(first), QUARTER
    if "quarter" in ignore:
        start, step = ceil_quarter(first) - QUARTER, timedelta(minutes=1)
        while start < first:
            start += step
    length = timedelta(minutes=minutes)
    touching = "touching" in ignore
    while start + length <= last:
        end, until = start + length, None
        for person, zone, intervals in people:
            if not at_work(person, zone, start, end, ignore):
                break
            until = max((e for s, e in intervals
                         if (s <= end and start <= e if touching else s < end and start < e)),
                        default=None)
            if until is not None:
                break
        else:
            return start
        if until is None:
            start += step
        else:  # the first start after the interval (at its end, when touching is allowed)
            start += step * ((until - start) // step + 1 if touching
                             else -((start - until) // step))
    return None


def window_words(calendars: CalendarSet) -> tuple[str, str]:
    """(first day, the instant the week ends) as the instructions write them."""
    end = datetime.combine(calendars.monday + timedelta(days=5), time(0), UTC)
    return f"{calendars.monday:%A %Y-%m-%d}", stamp(end)
