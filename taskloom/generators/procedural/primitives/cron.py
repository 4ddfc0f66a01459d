"""Scheduled job primitives: installing a crontab entry, auditing collected crontabs.

cron's daemon does not run in the sandbox: installing the entry with `crontab` is what
counts. A schedule has many spellings (`*/15` or `0,15,30,45`, `1` or `mon`, `@daily`),
so the check expands each field to the set of times it matches instead of comparing text.

The stated rules (`Rule`): existing entries kept, the user whose crontab it is, minute 0
of an "on the hour" schedule; for an audit, commented-out entries are no entries and an
hour field's ranges, lists and steps count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import (
    CronJob,
    Report,
    Script,
    TextFile,
    ToolScript,
)
from taskloom.generators.procedural.checks import Assertion, FileText
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    primitive,
    source,
)
from taskloom.generators.procedural.sources.common import data_dir, noisy, spaced
from taskloom.generators.procedural.world import lines_text, q

DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
SYSTEM_USERS = ("root", "www-data", "backup", "nobody")
CRONTABS = "/var/spool/cron/crontabs"  # where `crontab` keeps every user's table
SHELLS = ("/bin/sh", "/usr/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/dash", "/usr/bin/dash")

# Test-side helpers (inlined in the test function): a crontab as the cron daemon loads it,
# a line as the sets of minutes, hours, days of month, months and weekdays it matches, or
# as the variable it sets.
_CRON_HELPERS = r'''
import re
import shlex
NAMES = dict(zip("jan feb mar apr may jun jul aug sep oct nov dec".split(), range(1, 13)))
NAMES.update(zip("sun mon tue wed thu fri sat".split(), range(7)))
MACROS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
          "@annually": "0 0 1 1 *"}
LIMITS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
# A part of a field as cron reads it: ASCII digits only (Python's int() also takes `1_0`
# and other scripts' digits, where cron stops reading), names only in their own field, a
# step only after `*` or a range (cron refuses `10/1`).
PART = r"(\*(/[0-9]+)?|{number}(-{number}(/[0-9]+)?)?)"


def expand(field, low, high, names=""):
    values = set()
    for part in field.lower().split(","):
        assert re.fullmatch(PART.format(number=f"([0-9]+|{names or '[0-9]+'})"), part), field
        step = 1
        if "/" in part:
            part, step = part.split("/")
            step = int(step)
        if part == "*":
            first, last = low, high
        elif "-" in part:
            first, last = (int(NAMES.get(x, x)) for x in part.split("-"))
        else:
            first = last = int(NAMES.get(part, part))
        values.update(range(first, last + 1, step))
    assert values and min(values) >= low and max(values) <= high, field
    return values


def times(fields):
    """The sets of minutes, hours, days, months and weekdays a schedule matches, and how
    cron joins the two day fields: unless one of them starts with `*` (so `1-31`, the same
    set as `*`, is not), a day matching either one runs the job."""
    names = ("", "", "", "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec",
             "sun|mon|tue|wed|thu|fri|sat")
    sets = [expand(f, lo, hi, n) for f, (lo, hi), n in zip(fields, LIMITS, names)]
    sets[4] = {0 if d == 7 else d for d in sets[4]}
    either = "*" not in (fields[2][:1], fields[4][:1])
    if either and (sets[2] == set(range(1, 32)) or sets[4] == set(range(7))):
        sets[2], sets[4], either = set(range(1, 32)), set(range(7)), False  # every day
    return [*sets, either]


def setting(line):
    """(name, value) of a crontab line that sets a variable, as cron's load_env reads it,
    or None: cron then reads the line as an entry. A name or a value may be quoted; after
    a closing quote only blanks may follow, and a value may not be empty (`X='a'b'` and
    `MAILTO=` are no settings, so cron refuses the file; a forger's `X='a'b'` passed)."""
    NAMEI, NAME, EQ1, EQ2, VALUEI, VALUE, FINI, ERROR = range(8)
    text, state, quote, parts, at = line.lstrip(" \t"), NAMEI, "", ["", ""], 0
    while state != ERROR and at < len(text):
        c = text[at]
        if state in (NAMEI, VALUEI):
            quote = c if c in "'\"" else ""
            at, state = at + bool(quote), state + 1
        elif state in (NAME, VALUE):
            if quote and c == quote:
                at, state = at + 1, state + 1
            elif quote and state == NAME and c == "=":
                state = ERROR
            elif not quote and state == NAME and c in " \t=":
                at, state = at + (c != "="), EQ1
            else:
                parts[state == VALUE] += c
                at += 1
        elif state == EQ1:
            state = EQ2 if c == "=" else EQ1 if c in " \t" else ERROR
            at += 1
        elif c in " \t":  # EQ2, FINI: blanks
            at += 1
        else:
            state += 1
    if state != FINI and not (state == VALUE and not quote):
        return None
    return parts[0], parts[1] if quote else parts[1].rstrip(" \t")


def entries(text):
    """The entries of a crontab; a line cron refuses fails (cron then skips the whole file)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert len(line) < 1000, "a line cron refuses as too long"
        if setting(line):
            continue
        if line.startswith("@"):
            macro, _, command = line.partition(" ")
            assert (macro in MACROS or macro == "@reboot") and command.strip(), line
            found.append((MACROS[macro].split() if macro in MACROS else None,
                          command.strip(), line))
        else:
            parts = line.split(None, 5)
            assert len(parts) == 6, line
            times(parts[:5])
            found.append((parts[:5], parts[5], line))
    return found


def words(command):
    """A crontab command's words as the shell cron runs it reads them: a # that starts a
    word outside quotes begins a comment (shlex's comments=True also cut `job.sh#;other`,
    a word sh runs as it is), and an operator outside quotes (`( ) ; & | < >`) is a word
    of its own (so `access' '(old).log` is not one word: sh refuses it)."""
    for cut in [found.start() for found in re.finditer(r"[ \t]#", command)]:
        try:
            return split(command[:cut])
        except ValueError:  # the # is inside quotes
            continue
    return split(command)


def split(command):
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, ""  # words() cuts the comment
    return list(lexer)


# Variables that change how bash, sh or the dynamic loader run any program: above an
# entry, a job that runs nothing (`SHELLOPTS=noexec`, a BASH_ENV that exits) looks right.
# Debian's bash sources ~/.bashrc under `bash -c` when SSH_CLIENT or SSH2_CLIENT is set.
# An interpreter's start-up variables do the same for a tool written in it
# (`PYTHONHOME=/nonexistent` above the entry of a Python tool passed).
UNSAFE = (r"SHELLOPTS|BASHOPTS|BASH_ENV|ENV|BASH_FUNC_.*|IFS|GLOBIGNORE|CDPATH|"
          r"POSIXLY_CORRECT|SSH_CLIENT|SSH2_CLIENT|SHLVL|"
          r"LD_.*|GCONV_PATH|LOCPATH|NLSPATH|GLIBC_TUNABLES|MALLOC_.*|"
          r"PYTHON.*|PERL5?LIB|PERL5OPT|PERL_.*|RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH|"
          r"AWKPATH|AWKLIBPATH")


def safe(settings, where):
    """Settings an entry may run with: no UNSAFE variable, a shell that runs commands,
    and a PATH of absolute folders holding /usr/bin and /bin, where no folder before them
    holds a program of theirs (a `sed` that did nothing, in a folder put first, passed)."""
    assert not [name for name in settings if re.fullmatch(UNSAFE, name)], (where, settings)
    assert settings.get("SHELL", "/bin/sh") in SHELLS, (where, settings["SHELL"])
    folders = settings.get("PATH", "/usr/bin:/bin").split(":")
    assert {"/usr/bin", "/bin"} <= set(folders), (where, settings["PATH"])
    assert all(f.startswith("/") for f in folders), (where, settings["PATH"])
    before = folders[:min(folders.index("/usr/bin"), folders.index("/bin"))]
    system = set(os.listdir("/usr/bin")) | set(os.listdir("/bin")) if before else set()
    for folder in before:
        if os.path.realpath(folder) not in ("/usr/bin", "/bin") and os.path.isdir(folder):
            shadows = sorted(system & set(os.listdir(folder)))
            assert not shadows, (where, f"{folder} on its PATH shadows {shadows[:5]}")


def environment(text, command):
    """What the crontab sets above the entry running these words: cron gives an entry the
    variables set before it."""
    found = {}
    for line in text.split("\n"):
        if variable := setting(line):
            found.update([variable])
        elif [words(e[1]) for e in entries(line)] == [command]:
            break
    return found


def loaded(user):
    """The user's crontab as the cron daemon loads it: its own regular file, mode 0600,
    one link, ending in a newline (cron ignores a file that is not), read as bytes."""
    path = os.path.join(CRONTABS, user)
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1, f"{path} is not a plain file"
    assert info.st_uid == int(_account(user)[2]), f"{path} does not belong to {user}"
    assert stat.S_IMODE(info.st_mode) == 0o600, f"{path} has mode {oct(info.st_mode)}"
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), f"{path} does not end with a newline"
    text = data.decode("utf-8", "replace")
    # cron ends a line at a newline only and splits words at spaces and tabs only: a carriage
    # return or a no-break space that Python splits at would hide a line from one reader.
    odd = sorted({repr(c) for c in text if c not in " \t\n" and
                  (c.isspace() or not c.isprintable())})
    assert not odd, f"{path} holds characters cron reads otherwise: {', '.join(odd)}"
    return text
'''
CRON_HELPERS = tuple(line for line in _CRON_HELPERS.strip("\n").split("\n") if line.strip())


@dataclass(frozen=True)
class CrontabEntry(Assertion):
    """A user's crontab runs a command on a schedule, once, and kept its earlier lines.

    The command is compared as shell words (a comment after it is none, as for the shell
    cron runs it with), the schedule as the sets of times it matches. What the crontab sets
    above the entry is `safe`: a shell to run it with, /usr/bin and /bin on its PATH and no
    program shadowing theirs before them, no variable that changes how a shell, the loader
    or an interpreter starts (a `SHELL=/usr/bin/false` above it passed while variables were
    skipped). The kept entries keep every variable set above them, and what is set above
    them is safe too; the account is not expired, and may run the command's program and
    read the files it names.
    """

    user: str = ""
    command: tuple[str, ...] = ()
    schedule: str = ""
    kept: tuple[str, ...] = ()  # lines that were there before
    kept_entries: int = 0

    def body(self) -> list[str]:
        """Read the crontab as cron loads it, find the entry by its command, compare times."""
        return [
            *CRON_HELPERS,
            f"CRONTABS = {CRONTABS!r}",
            f"text = loaded({self.user!r})",
            "found = entries(text)",
            f"command = {list(self.command)!r}",
            "matching = [e for e in found if words(e[1]) == command]",
            "assert len(matching) == 1, [e[2] for e in found]",
            "# cron runs the entry with SHELL -c and the PATH set above it",
            f"SHELLS = {SHELLS!r}",
            "safe(environment(text, command), 'the new entry')",
            "assert matching[0][0] is not None, matching[0][2]",
            f"assert times(matching[0][0]) == times({self.schedule.split()!r}), matching[0][2]",
            "lines = [line.strip() for line in text.splitlines()]",
            f"kept = {list(self.kept)!r}",
            "for line in kept:",
            "    assert line in lines, line",
            f"assert len(found) == {self.kept_entries + 1}, [e[2] for e in found]",
            "# the kept entries run as they did: every variable set above one still is, and",
            "# what is set above it now is safe (a MAILTO moved below them, or a SHELL that",
            "# runs nothing put above them, passed while only their lines were looked for)",
            "for _, kept_command, line in entries('\\n'.join(kept)):",
            "    before = environment('\\n'.join(kept), words(kept_command))",
            "    now = environment(text, words(kept_command))",
            "    assert before.items() <= now.items(), (line, before, now)",
            "    safe(now, line)",
            "# the account may run the program and read each file the command names, as",
            "# cron runs it (a tool only root could run passed while the line alone was read)",
            f"_, uid, gid, groups = _as_account({self.user!r})",
            "for number, word in enumerate(command):",
            "    if not word.startswith('/'):",
            "        continue",
            "    done = subprocess.run([sys.executable, '-c', 'import os, sys; sys.exit(not '",
            "                           'os.access(sys.argv[1], int(sys.argv[2])))', word,",
            "                           str(os.R_OK | (os.X_OK if number == 0 else 0))],",
            "                          user=uid, group=gid, extra_groups=groups, timeout=60)",
            f"    assert done.returncode == 0, f'{self.user} may not ' + "
            "('run ' if number == 0 else 'read ') + word",
            "# cron runs no job of an expired account (a forger's `usermod -e 1` passed)",
            f"expiry = [row[7] for row in _entries('/etc/shadow') if row[0] == {self.user!r}",
            "          and len(row) > 7]",
            "assert not expiry or not expiry[0] or int(expiry[0]) * 86400 > time.time(), expiry",
        ]

    def reads(self) -> tuple[str, ...]:
        """The crontabs the cron daemon and `crontab -l` read."""
        return (CRONTABS,)

    @property
    def portable(self) -> bool:
        """No separate verifier: it asks whether the account may run the command's files."""
        return False


def _schedule(ctx: StepContext) -> tuple[str, str]:
    """(words, crontab fields) of a realistic schedule."""
    hour, minute = ctx.rng.randint(0, 23), ctx.rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50))
    at = f"{hour:02d}:{minute:02d}"
    day = ctx.rng.randint(0, 6)
    step = ctx.rng.choice((5, 10, 15, 20, 30))
    hours = ctx.rng.choice((2, 3, 4, 6, 8, 12))
    options = [
        (f"every day at {at}", f"{minute} {hour} * * *"),
        (f"every {step} minutes (at minutes {', '.join(map(str, range(0, 60, step)))} of "
         "every hour)", f"*/{step} * * * *"),
        (f"every hour at minute {minute} (HH:{minute:02d})", f"{minute} * * * *"),
        (f"every {DAYS[day]} at {at}", f"{minute} {hour} * * {day}"),
        (f"on weekdays (Monday to Friday) at {at}", f"{minute} {hour} * * 1-5"),
        (f"at {at} on the first day of every month", f"{minute} {hour} 1 * *"),
        (f"every {hours} hours on the hour, starting at midnight (00:00, {hours:02d}:00, ...)",
         f"0 */{hours} * * *"),
    ]
    return ctx.rng.choice(options)


def _respell(schedule: str) -> str:
    """Another spelling of the same schedule, as the instruction's words also give it.

    Steps become the lists of minutes or hours they stand for, weekdays their names or
    lists, and on-the-hour or midnight schedules the `@hourly`/`@daily` macros.
    """
    minute, hour, dom, month, dow = schedule.split()
    if (minute, hour, dom, month, dow) == ("0", "*", "*", "*", "*"):
        return "@hourly"
    if (minute, hour, dom, month, dow) == ("0", "0", "*", "*", "*"):
        return "@daily"
    if minute.startswith("*/"):
        minute = ",".join(str(m) for m in range(0, 60, int(minute[2:])))
    if hour.startswith("*/"):
        hour = ",".join(str(h) for h in range(0, 24, int(hour[2:])))
    if dow == "1-5":
        dow = "1,2,3,4,5"
    elif dow.isdigit():
        dow = DAYS[int(dow)][:3].lower()
    return " ".join((minute, hour, dom, month, dow))


PY_APPEND = r'''
import sys

path, line = sys.argv[1:]
with open(path, encoding="utf-8") as handle:
    text = handle.read()
if text and not text.endswith("\n"):
    text += "\n"
with open(path, "w", encoding="utf-8") as handle:
    handle.write(text + line + "\n")
'''


@primitive("cron.schedule_script")
def schedule_script(ctx: StepContext, source) -> StepResult:
    """Install a crontab entry that runs a script."""
    if not isinstance(source, Script):
        raise NotApplicable("needs a script")
    script = source
    args = tuple(getattr(script, "sample", ()))
    command = (script.path, *args)
    text = " ".join(q(word) for word in command)
    words, schedule = _schedule(ctx)
    kept: list[str] = []
    kept_entries = 0
    # A maintenance script does root's work on the system's files (17 of 40 first steps
    # scheduled one, only root could even run, for a service account); a tool that prints
    # may run as a service account, unless only a group may run it. The crontab already
    # has work in it (at most one per task: the staging folder goes once it is installed).
    service = f"{ctx.domain.name}-jobs"
    runs = isinstance(script, ToolScript) and not script.group
    user = ctx.rng.choice([service, "root"] if runs else ["root"])
    if user == service:
        ctx.world.add_user(service)
    if not ctx.world.exists("/tmp/taskloom-cron") and ctx.rng.random() < 0.85:
        kept = [f"MAILTO={ctx.domain.name}-alerts@example.com",
                f"# {ctx.domain.org}: existing jobs, keep them",
                f"{ctx.rng.randint(0, 59)} {ctx.rng.randint(0, 23)} * * * /usr/bin/find /tmp "
                f"-maxdepth 1 -name '{ctx.domain.name}-*' -mtime +3 -delete"]
        if ctx.rng.random() < 0.5:
            kept.append(f"@reboot /usr/bin/logger {ctx.domain.name} host up")
        kept_entries = len(kept) - 2
        staging = f"/tmp/taskloom-cron/{user}"
        ctx.world.add(staging, lines_text(kept))
        ctx.world.commands.append(f"crontab -u {q(user)} {q(staging)} && rm -rf /tmp/taskloom-cron")
    owner = "root's crontab" if user == "root" else f"the crontab of the user `{user}`"
    keep = (" Keep the entries that crontab already has, and the settings they run with."
            if kept else "")
    sentence = ctx.phrase([
        f"Schedule {script.phrase} to run {words}: install an entry in {owner} whose command "
        f"is `{text}` (nothing else on the command part).{keep}",
        f"Add a cron job to {owner} that runs `{text}` {words}; the command must be exactly "
        f"that, and the entry must be installed with `crontab` (the cron daemon itself is not "
        f"running).{keep}",
        f"Automate {script.phrase}: {owner} must get one entry running `{text}` {words}, "
        f"installed via the crontab command.{keep}",
    ]) + ctx.hint("crontab -l -u USER, add the line, pipe it to crontab -u USER -")
    line = f"{schedule} {text}"
    solution = (f"{{ crontab -l -u {q(user)} 2>/dev/null || true; printf '%s\\n' {q(line)}; }} "
                f"| crontab -u {q(user)} -")
    wrong = []
    if kept:
        wrong.append(Rule("keep", "that the entries already in the crontab are kept",
                          f"printf '%s\\n' {q(line)} | crontab -u {q(user)} -"))
    if user != "root":
        wrong.append(Rule("user", f"that the entry goes in the crontab of `{user}`",
                          f"{{ crontab -l 2>/dev/null || true; printf '%s\\n' {q(line)}; }} "
                          "| crontab -"))
    minute, hour, *_ = schedule.split()
    if minute == "0" and hour.startswith("*/"):
        every_minute = f"* {schedule.split(' ', 1)[1]} {text}"
        wrong.append(Rule("on-the-hour", "that the job runs only at minute 0 of those hours",
                          solution.replace(q(line), q(every_minute))))
    # the table copied to a file, the entry (the schedule spelled another way) appended by
    # python, the file installed with `crontab -u USER FILE`
    alternative = (f"table=$(mktemp)\ncrontab -l -u {q(user)} > \"$table\" 2>/dev/null || true\n"
                   + ctx.python([f'{_respell(schedule)} {text}'], PY_APPEND,
                                shell_words=['"$table"']) + "\n"
                   f"crontab -u {q(user)} \"$table\"\nrm -f \"$table\"")
    return StepResult(
        output=CronJob(path=f"/var/spool/cron/crontabs/{user}",
                       phrase=f"the cron job of {user} that runs {script.phrase} {words}",
                       user=user, schedule=schedule, command=text),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[CrontabEntry(f"{user}'s crontab runs the script {words}", user=user,
                             command=command, schedule=schedule, kept=tuple(kept),
                             kept_entries=kept_entries)],
        tools=("crontab",), side_effect=True, rules=tuple(wrong))


@dataclass(frozen=True)
class CronLine:
    """One entry of a system-style crontab (`m h dom mon dow user command`)."""

    fields: tuple[str, str, str, str, str]
    user: str
    command: str

    def line(self) -> str:
        """The entry as written in the file."""
        return " ".join((*self.fields, self.user, self.command))


@dataclass(frozen=True, eq=False)
class CrontabFile(TextFile):
    """Crontab lines collected from several hosts, with comments and variables."""

    entries: tuple[CronLine, ...] = ()
    kind: ClassVar[str] = "crontab_file"


def _awk_number(text: str) -> int:
    """The value awk gives a string in arithmetic: its leading integer, else 0."""
    match = re.match(r"[ \t]*([-+]?[0-9]+)", text)
    return int(match.group(1)) if match else 0


def _awk_hit(field: str, hour: int) -> bool:
    """AWK_HOUR's `hit(field, hour)` on any string, as awk computes it."""
    for part in field.split(","):
        step = 1
        if part.count("/") == 1:
            part, number = part.split("/")
            step = _awk_number(number)
        if part == "*":
            low, high = 0, 23
        elif part.count("-") == 1:
            low, high = (_awk_number(x) for x in part.split("-"))
        else:
            low = high = _awk_number(part)
        if step and low <= hour <= high and (hour - low) % step == 0:
            return True
    return False


def _hour_matches(field: str, hour: int) -> bool:
    """True when a crontab hour field includes `hour` (numbers, ranges, lists, steps)."""
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, number = part.split("/")
            step = int(number)
        if part == "*":
            low, high = 0, 23
        elif "-" in part:
            low, high = (int(x) for x in part.split("-"))
        else:
            low = high = int(part)
        if low <= hour <= high and (hour - low) % step == 0:
            return True
    return False


MINUTES = ("0", "5", "15", "30", "45", "*/10", "*/15", "0,30", "10")
HOURS = ("*", "*/6", "*/4", "1-5", "2,14", "3", "4", "9-17", "0-23/2", "22", "6,18", "12")
COMMANDS = ("/usr/local/bin/{svc}-backup.sh", "/usr/sbin/logrotate /etc/logrotate.d/{svc}",
            "/usr/bin/find /var/log/{svc} -name '*.gz' -mtime +30 -delete",
            "/usr/local/bin/rotate-logs --service {svc}", "/usr/bin/rsync -a /srv/{svc}/ "
            "/backup/{svc}/", "/usr/local/bin/healthcheck {svc} > /dev/null 2>&1",
            "/usr/bin/flock -n /run/{svc}.lock /usr/local/bin/{svc}-sync")


@source("crontab_file")
def crontab_file(ctx: StepContext) -> CrontabFile:
    """The crontabs of several hosts in one file, each under a `# host NAME` comment."""
    domain = ctx.domain
    hosts = sorted({f"{ctx.rng.choice(domain.services)}-{ctx.rng.randint(1, 12):02d}"
                    for _ in range(ctx.count((2, 3), (4, 6), (8, 14)))})
    lines: list[str] = []
    entries: list[CronLine] = []
    disabled_at = ctx.rng.choice(hosts)  # one commented-out entry even at noise level 1
    for host in hosts:
        lines.append(f"# host {host}")
        if ctx.rng.random() < 0.5:
            lines.append(ctx.rng.choice(("SHELL=/bin/bash", f"MAILTO=ops@{domain.name}.example",
                                         "PATH=/usr/local/bin:/usr/bin:/bin")))
        for _ in range(ctx.count((2, 4), (4, 8), (6, 12))):
            entry = CronLine((ctx.rng.choice(MINUTES), ctx.rng.choice(HOURS),
                              ctx.rng.choice(("*", "*", "*", "1", "15")), "*",
                              ctx.rng.choice(("*", "*", "*", "1-5", "0"))),
                             ctx.rng.choice(SYSTEM_USERS),
                             ctx.rng.choice(COMMANDS).format(svc=ctx.rng.choice(domain.services)))
            lines.append(entry.line())
            entries.append(entry)
        for number in range(max(noisy(ctx) // 2, host == disabled_at)):
            # disabled entries and boot jobs are no hour's jobs
            disabled = CronLine((ctx.rng.choice(MINUTES), ctx.rng.choice(HOURS), "*", "*", "*"),
                                "root", ctx.rng.choice(COMMANDS).format(svc=host.split("-")[0]))
            forms = [f"#{disabled.line()}", f"# {disabled.line()}"]
            if number or host != disabled_at:
                forms.append(f"@reboot root /usr/local/bin/{host}-init")
            lines.append(ctx.rng.choice(forms))
        lines.append("")
    path = f"{data_dir(ctx, 'inventory')}/{spaced(ctx, 'crontabs.txt')}"
    ctx.world.add(path, lines_text(lines))
    return CrontabFile(path=path, phrase=f"the collected crontabs in {path}",
                       lines=tuple(lines), entries=tuple(entries))


AWK_HOUR = r'''function hit(f, h,   n, parts, i, p, r, lo, hi, step) {
  n = split(f, parts, ",")
  for (i = 1; i <= n; i++) {
    p = parts[i]; step = 1
    if (split(p, r, "/") == 2) { p = r[1]; step = r[2] }
    if (p == "*") { lo = 0; hi = 23 }
    else if (split(p, r, "-") == 2) { lo = r[1]; hi = r[2] }
    else { lo = p; hi = p }
    if (h >= lo + 0 && h <= hi + 0 && (h - lo) % step == 0) return 1
  }
  return 0
}'''


PY_AUDIT = r'''
import re
import sys

source, out, hour, layout = sys.argv[1:]
hour = int(hour)


def includes(field):
    for part in field.split(","):
        span, slash, step = part.partition("/")
        step = int(step) if slash else 1
        if span == "*":
            low, high = 0, 23
        elif "-" in span:
            low, high = (int(x) for x in span.split("-"))
        else:
            low = int(span)
            high = 23 if slash else low
        if low <= hour <= high and (hour - low) % step == 0:
            return True
    return False


found = []
with open(source, encoding="utf-8") as handle:
    for line in handle.read().splitlines():
        text = line.strip()
        if (not text or text.startswith(("#", "@"))
                or re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*=", text)):
            continue
        fields = text.split(None, 6)
        if len(fields) == 7 and includes(fields[1]):
            found.append(line if layout == "line" else f"{fields[5]} {fields[6]}")
with open(out, "w", encoding="utf-8") as handle:
    handle.write("\n".join(found) + END)
'''


@primitive("cron.audit_jobs")
def audit_jobs(ctx: StepContext, source) -> StepResult:
    """The cron entries that run during a given hour."""
    if not isinstance(source, CrontabFile) or not source.entries:
        raise NotApplicable("needs collected crontab entries")
    crontab = source
    hours = [h for h in range(24)
             if 0 < sum(_hour_matches(e.fields[1], h) for e in crontab.entries) <
             len(crontab.entries)]
    if not hours:
        raise NotApplicable("every hour has the same jobs")
    full = ctx.rng.random() < 0.5
    compare = ctx.compare(order_matters=True)

    def shape(line: str) -> str:
        return line if full else re.sub(r"^([^ ]+ +){5}", "", line, count=1)

    def audit(hour: int) -> tuple[str, ...]:
        return tuple(shape(e.line()) for e in crontab.entries if _hour_matches(e.fields[1], hour))

    def unguarded(hour: int) -> list[str]:
        """An awk without the `/^[0-9*]/` guard: commented-out entries count too."""
        return [shape(line) for line in crontab.lines
                if len(line.split()) >= 7 and _awk_hit(line.split()[1], hour)]

    def literal(hour: int) -> list[str]:
        """An hour field taken as `*` or one number: ranges, lists and steps never match."""
        return [shape(e.line()) for e in crontab.entries if e.fields[1] in ("*", str(hour))]

    # an hour for which a disabled entry would count, where that rule shows
    telling = [h for h in hours if differs(unguarded(h), audit(h), compare)]
    hour = ctx.rng.choice(telling or hours)
    lines = audit(hour)
    out = ctx.output_path(f"jobs-{hour:02d}h", "txt")
    layout = ("each matching entry line exactly as it appears in the file" if full else
              "`USER COMMAND` for each matching entry (the user field, one space, then the "
              "command exactly as written)")
    definition = (f"An entry runs during hour {hour} when its hour field (the second field) "
                  f"includes {hour}: `*`, a number, a range `a-b`, a list `a,b` or a step `*/n` "
                  "or `a-b/n`. Only lines of the form `MIN HOUR DOM MON DOW USER COMMAND` are "
                  "entries: comments (also commented-out entries), blank lines, variable "
                  "assignments and `@reboot` lines are not.")
    sentence = ctx.phrase([
        f"List the cron entries in {crontab.phrase} that run at some minute of hour "
        f"{hour:02d} (between {hour:02d}:00 and {hour:02d}:59), in file order, into {out}: "
        f"{layout}.",
        f"Which jobs of {crontab.phrase} fire during the {hour:02d}:00-{hour:02d}:59 hour? "
        f"Write {layout} to {out}, one per line, keeping the order of the file.",
        f"Audit {crontab.phrase}: write to {out} {layout}, one line per entry that runs "
        f"during hour {hour:02d}, in the order they appear.",
    ]) + ctx.hint("awk with split() on the hour field")
    program = (f"{AWK_HOUR}\n/^[0-9*]/ && NF >= 7 && hit($2, h) "
               + ("{ print }" if full else
                  '{ line = $0; sub(/^([^ ]+ +){5}/, "", line); print line }'))
    solution = f"awk -v h={hour} '{program}' {q(crontab.path)} > {q(out)}"
    wrong = tuple(rule for seen, rule in (
        (differs(unguarded(hour), lines, compare),
         Rule("disabled", "that commented-out entries are not entries",
              solution.replace("/^[0-9*]/ && NF", "NF", 1))),
        (differs(literal(hour), lines, compare),
         Rule("expand", "that ranges, lists and steps in the hour field count",
              solution.replace(f"{AWK_HOUR}\n", "", 1).replace(
                  "hit($2, h)", '($2 == h || $2 == "*")', 1)))) if seen)
    # python: the lines parsed and the hour field expanded in python; the final newline
    # only where the instruction states it (strictness 3)
    alternative = ctx.python([crontab.path, out, hour, "line" if full else "user"], PY_AUDIT)
    return StepResult(
        output=Report(path=out, phrase=f"the cron entries of {crontab.phrase} that run "
                      f"during hour {hour:02d}", lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"{out} lists the jobs of hour {hour}", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("awk",), notes=(definition,), rules=wrong)
