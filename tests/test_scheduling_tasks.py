"""Scheduling tasks: a meeting slot, double bookings and a booking, from a team's calendars.

The registry-wide test validates each step alone in the sandbox; here the tasks' own
scripts run on the host, on a copy of the task's files: the reference and the alternative
reach what the generator computed, each rule-ignoring solution does not, and the checks
tell them apart. The mandatory rules (time zones, working hours, whole-day events, notice,
cancelled and tentative events, repeats, quarter hours, touching events) show on every
first slot step; one chain is validated in the sandbox.
"""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from drafts import difficulty, draft
from endings import rewards

from taskloom.config import ValidationConfig
from taskloom.generators.procedural.primitives.scheduling import MeetingBooked
from taskloom.generators.procedural.sources.calendars import ceil_quarter
from taskloom.validators.engine import validate_task

MANDATORY = {"step-1-time-zones", "step-1-hours", "step-1-whole-day", "step-1-notice",
             "step-1-cancelled", "step-1-tentative", "step-1-rrule"}
SLOT_ONLY = {"step-1-quarter", "step-1-touching"}
TRAPS = {"step-1-weekly-repeats", "step-1-daily-repeats", "step-1-folded-lines"}
CRITICAL = ("DTSTART", "DTEND", "RRULE", "STATUS")


def materialize(task, root: Path) -> str:
    """Write the task's files under `root`; return the domain folder they live in."""
    for file in task.environment:
        if file.path.startswith("files/"):
            target = root / file.path.removeprefix("files/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(file.content)
    calendars = next(f.path for f in task.environment if f.path.endswith("team.json"))
    folder = "/" + calendars.removeprefix("files/").split("/calendars/")[0].strip("/")
    (root / folder.lstrip("/") / "output").mkdir(parents=True, exist_ok=True)
    return folder


def run_script(task, name: str, root: Path, folder: str) -> subprocess.CompletedProcess:
    """Run one of the task's solution scripts on the copy under `root`."""
    script = next(f.content.decode() for f in task.solution if f.path == name)
    script = script.replace(folder + "/", f"{root}{folder}/")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)


def checks_pass(task, root: Path, folder: str) -> bool:
    """Run the task's checks (pytest) on the copy under `root`."""
    tests = next(f.content.decode() for f in task.tests if f.path.endswith(".py"))
    target = root / "test_outputs.py"
    target.write_text(tests.replace(f"'{folder}/", f"'{root}{folder}/"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(target)], capture_output=True, text=True, timeout=120,
                          cwd=root)
    return done.returncode == 0


@pytest.mark.parametrize("skill", ["schedule.find_meeting_slot", "schedule.find_conflicts",
                                   "schedule.book_meeting"])
@pytest.mark.parametrize("seed", range(3))
def test_the_scripts_reach_the_answer_and_every_mutant_misses_it(tmp_path, skill, seed):
    task = draft((skill,), seed).task
    names = [f.path for f in task.solution]
    for name in ("solve.sh", "alternatives/other-tools.sh"):
        root = tmp_path / name.replace("/", "-")
        folder = materialize(task, root)
        done = run_script(task, name, root, folder)
        assert done.returncode == 0, done.stderr
        assert checks_pass(task, root, folder), name
    mutants = [name for name in names if name.startswith("mutants/")]
    assert mutants
    for name in mutants:
        root = tmp_path / name.replace("/", "-")
        folder = materialize(task, root)
        run_script(task, name, root, folder)
        assert not checks_pass(task, root, folder), name


@pytest.mark.parametrize("seed", range(8))
def test_every_mandatory_rule_shows_on_a_first_slot_step(seed):
    for skill in ("schedule.find_meeting_slot", "schedule.book_meeting"):
        names = {f.path.removeprefix("mutants/").removesuffix(".sh")
                 for f in draft((skill,), seed).task.solution}
        assert names >= MANDATORY | SLOT_ONLY | TRAPS, (skill, sorted(names))


def test_whole_days_read_as_utc_days_change_many_slots():
    for skill in ("schedule.find_meeting_slot", "schedule.book_meeting"):
        shown = sum("mutants/step-1-local-days.sh" in {f.path for f in
                                                       draft((skill,), seed).task.solution}
                    for seed in range(12))
        assert shown >= 5, (skill, shown)


def test_lunch_breaks_change_most_first_slots():
    """A request is drawn again until ignoring lunch gives another slot. Taking the first
    request whose traps showed, lunch mattered on 12 and 13 of these 30 seeds (a solver
    ignoring it earned 1 on the rest; red team, the pinned booking); now on 18 and 19. The
    floor, half, leaves room for other random draws on either side."""
    for skill in ("schedule.find_meeting_slot", "schedule.book_meeting"):
        shown = sum("mutants/step-1-lunch.sh" in {f.path for f in
                                                  draft((skill,), seed).task.solution}
                    for seed in range(30))
        assert shown >= 15, (skill, shown)


def critical_folds(text: str) -> list[str]:
    """The DTSTART/DTEND/RRULE/STATUS lines of a calendar text cut inside their name."""
    lines = text.replace("\r\n", "\n").split("\n")
    return [line + after[1:] for line, after in pairwise(lines)
            if after.startswith(" ") and any(
                (line + after[1:]).startswith((name + ";", name + ":")) and len(line) < len(name)
                for name in CRITICAL)]


@pytest.mark.parametrize("skill", ["schedule.find_meeting_slot", "schedule.find_conflicts",
                                   "schedule.book_meeting"])
def test_every_task_folds_a_line_that_matters_and_says_so(skill):
    for seed in range(6):
        task = draft((skill,), seed).task
        texts = [f.content.decode() for f in task.environment if f.path.endswith(".ics")]
        assert any(critical_folds(text) for text in texts), (skill, seed)
        assert "A line may be folded" in task.instruction
        crlf = any("\r\n" in text for text in texts)
        assert ("Lines end in CRLF" in task.instruction) == crlf, (skill, seed)
        assert ("mutants/step-1-crlf-line-ends.sh" in {f.path for f in task.solution}) == crlf


def test_quiet_conflicts_tasks_have_crlf_files_sometimes():
    quiet = [draft(("schedule.find_conflicts",), seed).task for seed in range(0, 36, 3)
             if difficulty(seed).noise == 1]
    crlf = [any(b"\r\n" in f.content for f in task.environment if f.path.endswith(".ics"))
            for task in quiet]
    assert any(crlf) and not all(crlf), crlf


@pytest.mark.parametrize("seed", range(6))
def test_every_rule_shows_on_a_first_conflicts_step(seed):
    names = {f.path for f in draft(("schedule.find_conflicts",), seed).task.solution}
    rules = ("time-zones", "cancelled", "tentative", "whole-day", "local-days", "rrule",
             "weekly-repeats", "daily-repeats", "touching", "merge", "folded-lines")
    assert {f"mutants/step-1-{rule}.sh" for rule in rules} <= names, sorted(names)


def test_a_seed_gives_the_same_task_and_seeds_differ():
    first = draft(("schedule.find_meeting_slot",), 5).task
    again = draft(("schedule.find_meeting_slot",), 5).task
    other = draft(("schedule.find_meeting_slot",), 6).task
    assert first == again
    assert first.instruction != other.instruction


def test_the_calendars_hold_every_kind_of_event():
    texts = [f.content.decode() for seed in range(6)
             for f in draft(("schedule.find_conflicts",), seed).task.environment
             if f.path.endswith(".ics")]
    joined = "".join(texts)
    for marker in ("DTSTART;TZID=", "Z\r\n", "DTSTART;VALUE=DATE:", "RRULE:FREQ=WEEKLY",
                   "RRULE:FREQ=DAILY", "STATUS:CANCELLED", "BEGIN:VTIMEZONE", "\r\n "):
        assert marker in joined, marker


def test_a_quarter_hour_rounds_up_and_keeps_exact_quarters():
    from datetime import UTC, datetime
    assert ceil_quarter(datetime(2025, 12, 1, 9, 0, tzinfo=UTC)).minute == 0
    assert ceil_quarter(datetime(2025, 12, 1, 9, 0, 30, tzinfo=UTC)).minute == 15
    assert ceil_quarter(datetime(2025, 12, 1, 9, 46, tzinfo=UTC)).hour == 10


def test_the_booking_check_reads_events_in_any_form(tmp_path):
    calendar = tmp_path / "a.ics"
    old = ["BEGIN:VEVENT", "UID:1", "SUMMARY:Old", "DTSTART:20251201T090000Z",
           "DTEND:20251201T100000Z", "END:VEVENT"]
    new = ["BEGIN:VEVENT", "SUMMARY:Sync", "UID:2",
           "DTSTART;TZID=Europe/Berlin:20251202T", " 110000",
           "DTEND:20251202T103000Z", "END:VEVENT"]
    calendar.write_text("\r\n".join(["BEGIN:VCALENDAR", *new, *old, "END:VCALENDAR"]) + "\r\n")
    check = MeetingBooked("booked", files=((str(calendar), (tuple(sorted(old[1:-1])),),
                                            ("BEGIN:VCALENDAR", "END:VCALENDAR"), True),),
                          summary="Sync", start="2025-12-02T10:00", end="2025-12-02T10:30")
    namespace = {"Path": Path, "os": os}
    exec("def check():\n" + "".join(f"    {line}\n" for line in check.body()), namespace)
    namespace["check"]()
    calendar.write_text(calendar.read_text().replace("110000", "100000"))
    with pytest.raises(AssertionError):
        namespace["check"]()


# An ending that edits the calendars of the seed-0 booking (elif and heidi attend).
CALENDARS = r"""python3 - <<'PY'
import glob, re
files = sorted(glob.glob('/srv/src/calendars/*.ics'))
booked = [path for path in files if 'UID:booked-' in open(path, newline='').read()]
others = [path for path in files if path not in booked]
event = re.compile(r'BEGIN:VEVENT\r?\nUID:booked-.*?END:VEVENT\r?\n', re.S)
def edit(paths, change):
    for path in paths:
        text = open(path, newline='').read()
        open(path, 'w', newline='').write(change(text))
{code}
PY
"""
OTHER_EVENT = ("begin:vevent\\r\\nUID:x@example\\r\\nSUMMARY:Standup\\r\\n"
               "DTSTART:20260120T100000Z\\r\\nDTEND:20260120T103000Z\\r\\nend:vevent\\r\\n")


def booking(change: str, paths: str = "booked") -> str:
    """An ending that rewrites the calendars `paths` by `change` (text -> text)."""
    return CALENDARS.format(code=f"edit({paths}, lambda text: {change})")


@pytest.mark.bwrap
def test_a_booking_leaves_every_calendar_one_calendar_that_readers_read_alike(bwrap_runtime):
    """`book a meeting` (red team): the event put after END:VCALENDAR, a second VCALENDAR,
    a second SUMMARY, a free (TRANSP) or repeating (RDATE) meeting, a lower-case event in
    someone else's calendar, another calendar's header dropped and a calendar file added
    each earned 1: the check read upper-case VEVENT blocks only, and a property's last
    line. Line ends, the event's place in the calendar and the case of its names are the
    writer's to choose."""
    found = rewards(bwrap_runtime, ("schedule.book_meeting",), 0, {
        "reference": "",
        "line-feeds-only": booking("text.replace('\\r\\n', '\\n')"),
        "the-event-first": booking("(lambda e: event.sub('', text).replace('BEGIN:VCALENDAR"
                                   "\\r\\n', 'BEGIN:VCALENDAR\\r\\n' + e, 1))(event.search("
                                   "text).group(0))"),
        "lower-case-names": booking("event.sub(lambda m: m.group(0).replace('BEGIN:VEVENT', "
                                    "'begin:vevent').replace('END:VEVENT', 'end:vevent'), text)"),
        "after-the-calendar": booking("event.sub('', text) + event.search(text).group(0) + "
                                      "'END:VCALENDAR\\r\\n'"),
        "a-second-calendar": booking("text + 'BEGIN:VCALENDAR\\r\\nVERSION:2.0\\r\\n"
                                     "END:VCALENDAR\\r\\n'"),
        "a-second-summary": booking("text.replace('UID:booked-', 'SUMMARY:All hands\\r\\n"
                                    "UID:booked-')"),
        "free-time": booking("text.replace('UID:booked-', 'TRANSP:TRANSPARENT\\r\\n"
                             "UID:booked-')"),
        "repeating": booking("text.replace('UID:booked-', 'RDATE:20260121T100000Z\\r\\n"
                             "UID:booked-')"),
        "an-event-for-someone-else": booking(
            f"text.replace('END:VCALENDAR', '{OTHER_EVENT}END:VCALENDAR')", "others[:1]"),
        "a-header-dropped": booking("re.sub(r'VERSION:[^\\r\\n]*\\r?\\n', '', text)",
                                    "others[:1]"),
        "a-calendar-added": CALENDARS.format(
            code="open('/srv/src/calendars/zed.ics', 'w', newline='').write("
                 "open(booked[0], newline='').read())"),
    })
    assert found == {"reference": 1.0, "line-feeds-only": 1.0, "the-event-first": 1.0,
                     "lower-case-names": 1.0, "after-the-calendar": 0.0,
                     "a-second-calendar": 0.0, "a-second-summary": 0.0, "free-time": 0.0,
                     "repeating": 0.0, "an-event-for-someone-else": 0.0,
                     "a-header-dropped": 0.0, "a-calendar-added": 0.0}, found


@pytest.mark.bwrap
@pytest.mark.slow
def test_a_booking_then_a_second_slot_validates_in_the_sandbox(bwrap_runtime):
    made = draft(("schedule.book_meeting", "schedule.find_meeting_slot"), 2)
    report = validate_task(made.task, bwrap_runtime, ValidationConfig(),
                           expected_values=made.expected_values)
    assert report.accepted, [(v.check, v.reason, v.details) for v in report.verdicts
                             if not v.passed]
