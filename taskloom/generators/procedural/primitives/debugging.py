"""Debugging primitives: a scheduled job that fails for one injected cause, to diagnose and fix.

The job is a bash script run from a user's crontab. It reads its settings from an env file
(input, watch list, report folder) and writes, for each word of its watch list, the number
of input lines that contain it. One `Cause` breaks it: a permission, a path that moved, an
environment variable, an encoding, or a file that was deleted (a copy is in a backup or in
git). The instruction says how the job is run and what it must write, never the cause
(except as a hint at specification level 1).

The checks prove the job itself is fixed: `JobRuns` runs the job as its user with cron's
environment twice, first with a changed watch list, then also with new input content (in
the form the input arrives in, with a non-ASCII watch word), each written as a new file
renamed over the old path, compares the reports, then puts everything back. A report
written by hand, a job that prints a saved copy, one that reads a stale copy or link of
the input, or counts raw bytes, fails it. `NotWorldWritable` holds the job's files, what
they link to and every folder above them to the stated rule; at step 1 the input's bytes
must be as delivered.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import tarfile
from dataclasses import dataclass, field
from typing import ClassVar

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Report, TextFile
from taskloom.generators.procedural.checks import KERNEL_VIEWS, Assertion, FileDigests, FileText
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
    stored_input,
)
from taskloom.generators.procedural.primitives.cron import CRON_HELPERS, CRONTABS, CrontabEntry
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, World, lines_text, q

TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
CRON_PATH = "/usr/bin:/bin"  # the PATH cron gives a job
FAMILIES = ("permissions", "path", "environment", "encoding", "missing-file")


@dataclass(frozen=True)
class Cause:
    """The one reason the job fails, as injected."""

    family: str  # one of FAMILIES
    name: str  # the variant: "not-executable", "env-moved", "utf16-input"...
    hint: str  # the cause in words (shown only at specification level 1)


@dataclass
class Job:
    """Where the job's parts are, and what it reads."""

    name: str
    user: str
    home: str
    script: str
    env: str
    watchlist: str
    report_dir: str
    output: str
    input: str
    words: tuple[str, ...]
    settings: dict[str, str] = field(default_factory=dict)  # variable -> value

    def env_text(self, names: dict[str, str] | None = None) -> str:
        """The env file, the variables named as in `names` (variable -> name written)."""
        names = names or {}
        lines = [f"# Settings of the nightly report job {self.script}."]
        lines += [f"{names.get(key, key)}={q(value)}" for key, value in self.settings.items()]
        return lines_text(lines)

    def script_text(self, env: str | None = None) -> str:
        """The job's script, sourcing the env file at `env` (default: where it belongs)."""
        report = q(posixpath.basename(self.output))
        return lines_text([
            "#!/bin/bash",
            "# Nightly watch-list report: for each word of the watch list, the number of",
            "# lines of the input that contain it (plain text, case-sensitive), written as",
            "# `WORD COUNT` lines in the order of the watch list.",
            "set -euo pipefail",
            "export LC_ALL=C",
            f". {q(env or self.env)}  # sets INPUT, WATCHLIST and REPORT_DIR",
            '[ -r "$INPUT" ] || { echo "$0: cannot read $INPUT" >&2; exit 66; }',
            "# The export must be UTF-8 text: refuse anything else rather than count wrong.",
            'if ! iconv -f UTF-8 -t UTF-8 "$INPUT" > /dev/null; then',
            '  echo "$0: $INPUT is not UTF-8 text" >&2',
            "  exit 65",
            "fi",
            f'out="$REPORT_DIR"/{report}',
            'while IFS= read -r word || [ -n "$word" ]; do',
            '  [ -n "$word" ] || continue',
            '  printf \'%s %s\\n\' "$word" "$(grep -cF -- "$word" "$INPUT" || true)"',
            'done < "$WATCHLIST" > "$out"',
        ])


def report(words: tuple[str, ...], lines: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """What the job writes for input lines: `WORD COUNT` per watched word."""
    return tuple(f"{word} {sum(word in line for line in lines)}" for word in words)


@dataclass(frozen=True)
class JobRuns(Assertion):
    """The job, run as its user the way cron runs it, reports on a new watch list and input.

    The watch list (the file its path resolves to) gets new words, and the job runs on
    today's input; then the input gets new content and the job runs again. Each file is
    written as a new file renamed over the path (same owner, group and mode), so a job that
    reads another inode sees old content; the job runs from the user's home with cron's
    environment, what the crontab sets before the job's entry included, its SHELL running
    the command (a crontab whose SHELL or PATH kept cron from ever running the job passed
    while the check ran the job without them); afterwards watch list, input and report get
    their bytes back.
    """

    script: str = ""
    user: str = ""
    input: str = ""
    output: str = ""
    watchlist: str = ""
    words: bytes = b""  # the new watch list
    today: str = ""  # the report on the new watch list and today's input
    content: bytes = b""  # the new input, in the form the input arrives in
    expected: str = ""  # the report on the new watch list and the new input
    compare: str = "lines"
    # A check the job's runs must leave true too, checked after them: a job that opened
    # its report folder to everyone on every run, or moved its report to /tmp behind a
    # link, passed while the world-writable check ran only before the job (forger).
    after: Assertion | None = None
    executes: ClassVar[bool] = True  # the job

    def body(self) -> list[str]:
        """Swap watch list and input by rename, run the job as the user, compare, restore."""
        return [
            f"user, script = {self.user!r}, {self.script!r}",
            "entry, uid, gid, groups = _as_account(user)",
            *CRON_HELPERS,
            f"CRONTABS = {CRONTABS!r}",
            "env = {'PATH': " + repr(CRON_PATH) + ", 'SHELL': '/bin/sh', "
            "'HOME': entry[5] if os.path.isdir(entry[5]) else '/'}",
            "# cron's environment: what the crontab sets (SHELL, PATH, HOME...) before the "
            "job's entry, then LOGNAME",
            "env.update(environment(loaded(user), [script]))",
            "env.update(LOGNAME=user, USER=user)",
            "home = env['HOME'] if os.path.isdir(env['HOME']) else '/'",
            f"source, report = Path({self.input!r}), Path({self.output!r})",
            "assert source.is_file() and not source.is_symlink(), f'{source} is gone'",
            f"listing = Path(os.path.realpath({self.watchlist!r}))",
            f"assert listing.is_file(), f'the watch list {self.watchlist} is gone'",
            "kept, listed = _stamp(source), _stamp(listing)",
            "before = report.read_bytes() if report.is_file() else None",
            "actual, swapped = [], []",
            "try:",
            f"    for path, data in ((listing, {self.words!r}), (source, {self.content!r})):",
            "        _swap(path, data)",
            "        swapped.append(path)",
            "        done = subprocess.run([env['SHELL'], '-c', shlex.quote(script)], "
            "capture_output=True, timeout=30, env=env, "
            "cwd=home, user=uid, group=gid, extra_groups=groups, "
            "preexec_fn=_no_new_privileges, start_new_session=True)",
            "        stderr = done.stderr.decode('utf-8', 'replace')[-1500:]",
            "        assert done.returncode == 0, "
            "f'the job exits with {done.returncode}: {stderr}'",
            "        assert report.is_file(), f'the job wrote no {report}'",
            "        actual.append(report.read_bytes().decode('utf-8', 'replace'))",
            "finally:",
            "    for path, (data, times) in ((listing, listed), (source, kept)):",
            "        if path in swapped:",
            "            _swap(path, data, times)",
            "    if before is not None and report.is_file() and not report.is_symlink():",
            "        with open(report, 'r+b') as handle:",
            "            handle.write(before)",
            "            handle.truncate()",
            f"_same(actual[0], {self.today!r}, {self.compare!r})",
            f"_same(actual[1], {self.expected!r}, {self.compare!r})",
            *(self.after.body() if self.after else []),
        ]

    def reads(self) -> tuple[str, ...]:
        """The script, its input, its watch list and its report (the instruction names them)."""
        return (self.script, self.input, self.watchlist, self.output,
                *(self.after.reads() if self.after else ()))

    @property
    def portable(self) -> bool:
        """It runs the job with the system's accounts and files: no separate verifier."""
        return False


# Not walked for world-writable paths: the kernel's views of itself; and neither read nor
# walked below, the harness's and the sandbox's folders (Harbor's environments make /logs
# and its folders 0777, an installed agent /installed-agent).
UNWALKED = (*KERNEL_VIEWS, "/logs", "/tests", "/solution", "/installed-agent", "/.taskloom")
# The folders the image opens to anyone, sticky (1777): not a finding while they stay
# sticky, and walked below, like /dev and /run (a job that ran its code from a 0777 folder
# in /var/tmp, in /run or in /dev passed while they were not walked).
OPEN_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock")


@dataclass(frozen=True)
class NotWorldWritable(Assertion):
    """None of these paths, nor any folder above them, is world-writable.

    Each path that exists is resolved as the kernel does, link by link: the file it
    resolves to and every folder the resolution reads a name in must lack the other-write
    bit (a link between, in a folder open to anyone, passed while only the path's and the
    target's folders were read). A sticky folder (like /tmp) counts too: anyone may create
    a name in it, so a job file moved there behind a link, or a report folder made 1777, is
    open to every account (red-team round 7 passed both while sticky folders were exempt).
    A file among them has one name: a hard link in /tmp kept the job's script and report
    in a world-writable folder (forger).

    Nor is anything else made world-writable: a walk of the file system (but `UNWALKED`)
    finds no world-writable file or folder that the task's `world` did not make so, but
    `OPEN_FOLDERS` while they stay sticky (a home folder made 777 passed red-team round 8).
    Devices, sockets and pipes are no files the job could run or read its settings from:
    /dev holds devices every account may write. A folder the walk (`_walk`) cannot enter
    fails it, by design: one skipped would hide what is below (the old walk's `scandir`
    failed below a path longer than PATH_MAX only by an uncaught error).
    """

    paths: tuple[str, ...] = ()
    world: World | None = field(default=None, compare=False, repr=False)
    top: str = "/"  # where the walk starts
    costly: ClassVar[bool] = True  # the walk

    def body(self) -> list[str]:
        """Walk each existing path's real path and folders up to /, then the whole tree."""
        made = sorted({path for path, spec in self.world.files.items() if spec.mode & 0o002} |
                      {path for path, (mode, _, _) in self.world.dirs.items() if mode & 0o002}
                      ) if self.world else []
        return ["def through(path):",
                "    here, names, seen, hops = '/', path.split('/'), [], 0",
                "    while names:",
                "        name = names.pop(0)",
                "        if name in ('', '.'):",
                "            continue",
                "        if name == '..':",
                "            here = os.path.dirname(here)",
                "            continue",
                "        seen.append(here)",
                "        step = os.path.join(here, name)",
                "        if os.path.islink(step):",
                "            hops += 1",
                "            assert hops < 40, f'{path}: too many links'",
                "            target = os.readlink(step)",
                "            here = '/' if target.startswith('/') else here",
                "            names = target.split('/') + names",
                "        else:",
                "            here = step",
                "    return [*seen, here]",
                f"for path in {list(self.paths)!r}:",
                "    if not os.path.lexists(path):",
                "        continue",
                "    for real in through(path):",
                "        mode = os.stat(real).st_mode",
                "        assert not mode & 0o002, (path, real, oct(mode))",
                "    info = os.stat(path)",
                "    assert not stat.S_ISREG(info.st_mode) or info.st_nlink == 1, "
                "(path, 'has another name (a hard link) elsewhere', info.st_nlink)",
                f"made, sticky = set({made!r}), set({list(OPEN_FOLDERS)!r})",
                f"opened = [path for path, _, _, info in _walk({self.top!r}, {list(UNWALKED)!r})",
                "          if info.st_mode & 0o002 and stat.S_IFMT(info.st_mode) in "
                "(stat.S_IFREG, stat.S_IFDIR)",
                "          and path not in made and not (path in sticky and info.st_mode & "
                "stat.S_ISVTX)]",
                "assert not opened, f'made world-writable: {sorted(opened)[:5]}'"]

    def reads(self) -> tuple[str, ...]:
        """The paths."""
        return self.paths


@dataclass
class Injected:
    """A cause, as injected into the world: its fix, another fix, and its own rules."""

    cause: Cause
    fix: str  # bash lines
    other: str  # bash lines: the same fix by other tools
    rules: list[Rule] = field(default_factory=list)
    encoding: str = "utf-8"  # how the input arrives
    tools: tuple[str, ...] = ()
    lines: tuple[str, ...] | None = None  # the input's lines, when the cause changed them
    words: tuple[str, ...] | None = None  # the watch list, when the cause changed it


def _sed_line(path: str, old: str, new: str) -> str:
    """A sed command that replaces the whole line `old` of a file by `new` (both literal)."""
    pattern = re.sub(r"([\\/.*\[\]^$])", r"\\\1", old)
    replacement = re.sub(r"([\\/&])", r"\\\1", new)
    return f"sed -i {q(f's/^{pattern}$/{replacement}/')} {q(path)}"


def _python_edit(ctx: StepContext, path: str, old: str, new: str) -> str:
    """A python3 fragment replacing the one occurrence of `old` in a file by `new`."""
    return ctx.python([path, old, new],
                      "import sys\n"
                      "path, old, new = sys.argv[1:4]\n"
                      "text = open(path, encoding='utf-8').read()\n"
                      "assert text.count(old) == 1, path\n"
                      "open(path, 'w', encoding='utf-8').write(text.replace(old, new))\n")


def _tar_gz(members: dict[str, tuple[bytes, int]], mtime: int) -> bytes:
    """A gzipped tar of (bytes, mode) members, the same bytes for the same members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, (data, mode) in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, mode
            info.uname = info.gname = "root"
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _permissions(ctx: StepContext, job: Job, stale: tuple[str, ...]) -> Injected:
    user = job.user
    variants = ["not-executable", "report-dir", "output-owned"]
    if ctx.step == 1:
        variants.append("input-unreadable")
    variant = ctx.rng.choice(variants)
    world = ctx.world
    if variant == "not-executable":
        world.add(job.script, job.script_text(), mode=ctx.rng.choice((0o644, 0o640, 0o600)))
        return Injected(
            Cause("permissions", variant, "the job's script is not executable"),
            fix=f"chmod 755 {q(job.script)}",
            other=ctx.python([job.script], "import os, sys\n"
                             "os.chmod(sys.argv[1], 0o755)\n"),
            rules=[Rule("world-writable", "that no file or directory is made world-writable",
                        f"chmod 777 {q(job.script)}")], tools=("chmod",))
    if variant == "report-dir":
        world.mkdir(job.report_dir, mode=0o755)
        return Injected(
            Cause("permissions", variant, f"`{user}` cannot write in the report folder"),
            fix=f"chown {q(user)}:{q(user)} {q(job.report_dir)}",
            other=ctx.python([job.report_dir, user], "import grp, os, sys\n"
                             "os.chown(sys.argv[1], -1, grp.getgrnam(sys.argv[2]).gr_gid)\n"
                             "os.chmod(sys.argv[1], 0o775)\n"),
            rules=[Rule("world-writable", "that no file or directory is made world-writable",
                        f"chmod 777 {q(job.report_dir)}")], tools=("chown",))
    if variant == "output-owned":
        world.add(job.output, lines_text(stale), mode=0o644)
        return Injected(
            Cause("permissions", variant, "the report file left by a manual run belongs to "
                  "root"),
            fix=f"chown {q(user)}:{q(user)} {q(job.output)}",
            other=ctx.python([job.output], "import os, sys\nos.remove(sys.argv[1])\n"),
            rules=[Rule("world-writable", "that no file or directory is made world-writable",
                        f"chmod 666 {q(job.output)}")], tools=("chown",))
    group = f"{ctx.domain.name}-data"
    world.add_group(group)
    spec = world.files[job.input]
    world.add(job.input, spec.content, mode=0o640, group=group, mtime=spec.mtime)
    return Injected(
        Cause("permissions", variant, f"`{user}` cannot read the input file"),
        fix=f"usermod -a -G {q(group)} {q(user)}",
        other=ctx.python([job.input], "import os, sys\nos.chmod(sys.argv[1], 0o644)\n"),
        rules=[Rule("world-writable", "that no file or directory is made world-writable",
                    f"chmod 666 {q(job.input)}")], tools=("usermod",))


def _path(ctx: StepContext, job: Job) -> Injected:
    variant = ctx.rng.choice(["env-moved", "watchlist-moved", "input-moved", "script-moved"])
    dom = ctx.domain.name
    world = ctx.world
    if variant == "env-moved":
        moved = f"/etc/{dom}/jobs/{posixpath.basename(job.env)}"
        world.files.pop(job.env)
        world.add(moved, job.env_text())
        return Injected(
            Cause("path", variant, "the settings file the job sources has moved"),
            fix=f"mv {q(moved)} {q(job.env)}",
            other=ctx.python([moved, job.env], "import os, sys\n"
                             "os.symlink(sys.argv[1], sys.argv[2])\n"), tools=("mv",))
    if variant == "watchlist-moved":
        moved = f"/opt/{dom}/lists/{posixpath.basename(job.watchlist)}"
        world.add(moved, world.files.pop(job.watchlist).content)
        return Injected(
            Cause("path", variant, "the watch list was moved away from the place the "
                  "settings file names"),
            fix=f"mv {q(moved)} {q(job.watchlist)}",
            other=ctx.python([moved, job.watchlist], "import shutil, sys\n"
                             "shutil.copyfile(sys.argv[1], sys.argv[2])\n"), tools=("mv",))
    if variant == "input-moved":
        old = f"/srv/{dom}-export/{posixpath.basename(job.input)}"
        job.settings["INPUT"] = old
        world.add(job.env, job.env_text())
        return Injected(
            Cause("path", variant, "the settings file points at the input's old location"),
            fix=_sed_line(job.env, f"INPUT={q(old)}", f"INPUT={q(job.input)}"),
            other=ctx.python([job.input, old], "import os, sys\n"
                             "os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)\n"
                             "os.symlink(sys.argv[1], sys.argv[2])\n"),
            rules=[Rule("read-input", f"that the job keeps reading {job.input}",
                        f"mkdir -p {q(posixpath.dirname(old))}\n"
                        f"cp {q(job.input)} {q(old)}\nchmod 644 {q(old)}")],
            tools=("sed",))
    moved = f"/opt/{dom}/archive/{posixpath.basename(job.script)}"
    world.add(moved, world.files.pop(job.script).content, mode=0o755)
    return Injected(
        Cause("path", variant, "the job's script was moved away from the path cron runs"),
        fix=f"mv {q(moved)} {q(job.script)}",
        other=ctx.python([moved, job.script], "import shutil, sys\n"
                         "shutil.copy2(sys.argv[1], sys.argv[2])\n"), tools=("mv",))


MISSPELLED = {"INPUT": "INPUT_FILE", "WATCHLIST": "WATCH_LIST", "REPORT_DIR": "REPORTS_DIR"}


def _environment(ctx: StepContext, job: Job) -> Injected:
    variant = ctx.rng.choice(["misspelled", "unset"])
    name = ctx.rng.choice(sorted(job.settings))
    value = job.settings[name]
    line = f"{name}={q(value)}"
    if variant == "misspelled":
        wrong = MISSPELLED[name]
        ctx.world.add(job.env, job.env_text({name: wrong}))
        return Injected(
            Cause("environment", variant, f"the settings file misspells the variable {name}"),
            fix=_sed_line(job.env, f"{wrong}={q(value)}", line),
            other=f"printf '%s\\n' {q(line)} >> {q(job.env)}", tools=("sed",))
    text = job.env_text().replace(line + "\n", "")
    ctx.world.add(job.env, text)
    source = f". {q(job.env)}  # sets INPUT, WATCHLIST and REPORT_DIR"
    return Injected(
        Cause("environment", variant, f"the settings file no longer sets {name}"),
        fix=f"printf '%s\\n' {q(line)} >> {q(job.env)}",
        other=_python_edit(ctx, job.script, source + "\n", f"{source}\n{line}\n"),
        tools=("printf",))


PLACES = ("Zürich", "Malmö", "São Paulo", "Besançon", "Großräschen", "Hämeenlinna",
          "Córdoba", "Ærøskøbing")


def _accented(ctx: StepContext, lines: tuple[str, ...],
              words: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """The lines, some with an accented place name appended, and a place to watch too.

    No appended name holds a watched word, so their counts stay; the watched place makes a
    job that only stops refusing Latin-1 (and counts its bytes) wrong.
    """
    places = [place for place in PLACES if not any(word in place for word in words)]
    if len(places) < 2:
        raise NotApplicable("the place names hold watched words")
    watched = ctx.rng.choice(places)
    changed = [f"{line} ({ctx.rng.choice(places)})" if line.strip() and
               ctx.rng.random() < 0.3 else line for line in lines]
    index = next(i for i, line in enumerate(lines) if line.strip())
    changed[index] = f"{lines[index]} ({watched})"
    return tuple(changed), watched


def _encoding(ctx: StepContext, job: Job, lines: tuple[str, ...]) -> Injected:
    variants = ["crlf-env"]
    if ctx.step == 1:
        variants += ["utf16-input", "latin1-input"]
    variant = ctx.rng.choice(variants)
    if variant == "crlf-env":
        ctx.world.add(job.env, job.env_text().replace("\n", "\r\n"))
        return Injected(
            Cause("encoding", variant, "the settings file has Windows (CRLF) line endings"),
            fix=f"sed -i 's/\\r$//' {q(job.env)}",
            other=ctx.python([job.env], "import sys\n"
                             "data = open(sys.argv[1], 'rb').read()\n"
                             "open(sys.argv[1], 'wb').write(data.replace(b'\\r\\n', b'\\n'))\n"),
            tools=("sed",))
    words = None
    if variant == "latin1-input":
        lines, place = _accented(ctx, lines, job.words)
        words = (*job.words, place)
        ctx.world.add(job.watchlist, lines_text(words))
    encoding, label = ("utf-16", "UTF-16") if variant == "utf16-input" else \
        ("latin-1", "ISO-8859-1")
    spec = ctx.world.files[job.input]
    ctx.world.add(job.input, lines_text(lines).encode(encoding), mode=spec.mode,
                  owner=spec.owner, group=spec.group, mtime=spec.mtime)
    source = f". {q(job.env)}  # sets INPUT, WATCHLIST and REPORT_DIR\n"

    def converted(command: str) -> str:
        return (source + 'converted=$(mktemp)\ntrap \'rm -f "$converted"\' EXIT\n'
                + command + ' > "$converted"\nINPUT=$converted\n')

    iconv = f'iconv -f {label} -t UTF-8 "$INPUT"'
    python = (f"python3 -c 'import sys; sys.stdout.write(open(sys.argv[1], "
              f"encoding=\"{encoding}\").read())' \"$INPUT\"")
    return Injected(
        Cause("encoding", variant, f"the input now arrives as {label} text"),
        fix=f"sed -i {q('/^[.] /r /dev/stdin')} {q(job.script)} <<'TASKLOOM_FIX'\n"
            + converted(iconv).removeprefix(source) + "TASKLOOM_FIX",
        other=_python_edit(ctx, job.script, source, converted(python)),
        rules=[Rule("input-as-delivered", f"that {job.input} itself is left as it is",
                    f"iconv -f {label} -t UTF-8 {q(job.input)} > /tmp/taskloom-converted\n"
                    f"cat /tmp/taskloom-converted > {q(job.input)}")],
        encoding=encoding, tools=("iconv",), lines=lines, words=words)


def _missing(ctx: StepContext, job: Job) -> Injected:
    variant = ctx.rng.choice(["backup", "git"])
    world = ctx.world
    data = world.files.pop(job.watchlist).content
    if variant == "backup":
        stamp = "2025-11-" + f"{ctx.rng.randint(20, 28)}"
        backup = f"/var/backups/{ctx.domain.name}/jobs-{stamp}.tar.gz"
        members = {job.watchlist.lstrip("/"): (data, 0o644),
                   job.script.lstrip("/"): (job.script_text().encode(), 0o755),
                   job.env.lstrip("/"): (job.env_text().encode(), 0o644)}
        world.add(backup, _tar_gz(members, EPOCH_NOW - 3 * DAY), mode=0o600)
        member = job.watchlist.lstrip("/")
        return Injected(
            Cause("missing-file", variant, "the watch list was deleted; a backup in "
                  "/var/backups holds it"),
            fix=f"tar -xzf {q(backup)} -C / {q(member)}",
            other=ctx.python([backup, member, job.watchlist], "import sys, tarfile\n"
                             "backup, member, path = sys.argv[1:4]\n"
                             "with tarfile.open(backup) as archive:\n"
                             "    data = archive.extractfile(member).read()\n"
                             "open(path, 'wb').write(data)\n"),
            tools=("tar",))
    repo = posixpath.dirname(job.watchlist)
    staging = f"/tmp/taskloom-debug-git/{posixpath.basename(job.watchlist)}"
    world.add(staging, data)
    who = "GIT_AUTHOR_NAME=ops GIT_AUTHOR_EMAIL=ops@example.com GIT_COMMITTER_NAME=ops " \
          "GIT_COMMITTER_EMAIL=ops@example.com GIT_AUTHOR_DATE='@1764000000 +0000' " \
          "GIT_COMMITTER_DATE='@1764000000 +0000'"
    world.commands.append(
        f"cp {q(staging)} {q(job.watchlist)} && rm -rf /tmp/taskloom-debug-git && "
        f"git init -q -b main {q(repo)} && git -C {q(repo)} add -A && "
        f"{who} git -C {q(repo)} commit -q -m 'Nightly report job' && rm {q(job.watchlist)}")
    name = posixpath.basename(job.watchlist)
    return Injected(
        Cause("missing-file", variant, f"the watch list was deleted from the git work tree "
              f"{repo}"),
        fix=f"git -C {q(repo)} checkout -- {q(name)}",
        other=f"git -C {q(repo)} show HEAD:{q(name)} > {q(job.watchlist)}",
        tools=("git",))


def _watch_words(ctx: StepContext, lines: tuple[str, ...]) -> tuple[str, ...]:
    """Words some lines contain and some do not."""
    text = [line for line in lines if line.strip()]
    counts: dict[str, int] = {}
    for line in set(text):
        for token in set(TOKEN.findall(line)):
            counts[token] = counts.get(token, 0) + 1
    candidates = sorted(t for t, n in counts.items() if n < len(set(text)))
    if len(candidates) < 2:
        raise NotApplicable("fewer than two words occur in only some lines")
    return tuple(ctx.rng.sample(candidates, min(len(candidates), ctx.count((2, 3), (3, 4),
                                                                          (4, 6)))))


def _other_content(ctx: StepContext, lines: tuple[str, ...],
                   words: tuple[str, ...]) -> list[str]:
    """Other input lines (a sample, some repeated) for which the report differs."""
    watched = [line for line in lines if any(word in line for word in words)]
    for _ in range(20):
        other = [line for line in lines if ctx.rng.random() < 0.7]
        other += ctx.rng.choices(watched, k=ctx.rng.randint(2, 5))
        ctx.rng.shuffle(other)
        if report(words, other) != report(words, lines):
            return other
    raise NotApplicable("no other content changes the report")


def _rerun(ctx: StepContext, lines: tuple[str, ...],
           words: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The input lines and the watch list the checks run the job on.

    New words, some of them in the new lines, and an accented place name that some new
    lines end with: a job that counts bytes of another encoding miscounts it.
    """
    other = _other_content(ctx, lines, words)
    full = [line for line in other if line.strip()]
    tokens = sorted({token for line in full for token in TOKEN.findall(line)} - set(words))
    some = [token for token in tokens if not all(token in line for line in full)]
    fresh = tuple(ctx.rng.sample(some, min(len(some), 2)))
    changed, place = _accented(ctx, tuple(other), (*words, *fresh))
    kept = tuple(ctx.rng.sample(words, 1))
    listing = [*fresh, place, *kept]
    changed, telling = _telling(ctx, changed, [t for t in some if t not in fresh])
    listing += telling
    ctx.rng.shuffle(listing)
    return changed, tuple(listing)


def _telling(ctx: StepContext, lines: tuple[str, ...],
             candidates: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """Lines and words on which a count other than of lines holding plain text is wrong.

    A forger's job counting case-folded pattern matches passed the rerun without them.
    A word W of some lines is written twice on one of them (a count of occurrences is one
    more), and watched with its second letter a dot (a pattern matching W; as text on no
    line) and in capitals (case-folded, it counts W's lines). None when no word serves.
    """
    for word in ctx.rng.sample(candidates, len(candidates)):
        dotted, loud = f"{word[0]}.{word[2:]}", word.upper()
        holding = [i for i, line in enumerate(lines) if word in line]
        if loud == word or not holding or any(dotted in line or loud in line
                                              for line in lines):
            continue
        changed = list(lines)
        changed[holding[0]] = f"{lines[holding[0]]} {word}"
        return tuple(changed), [word, dotted, loud]
    return lines, []


@primitive("debug.fix_job")
def fix_job(ctx: StepContext, source) -> StepResult:
    """Diagnose and fix the one cause that makes a nightly job fail."""
    return broken_job(ctx, source)[0]


def broken_job(ctx: StepContext, source) -> tuple[StepResult, Cause]:
    """The step, and the cause it injected (tests read which)."""
    if not isinstance(source, TextFile) or not source.lines:
        raise NotApplicable("needs a text file with known lines")
    lines = source.lines
    words = _watch_words(ctx, lines)
    dom = ctx.domain.name
    stem = ctx.rng.choice(("nightly-report", "watch-report", "daily-digest", "word-report"))
    user = f"{dom}-report"
    report_dir = f"/var/lib/{dom}/reports"
    output = ctx.output_path(stem, "txt", directory=report_dir)
    job = Job(name=stem, user=user, home=f"/home/{user}",
              script=f"/opt/{dom}/jobs/{stem}.sh", env=f"/etc/{dom}/{stem}.env",
              watchlist=f"/opt/{dom}/jobs/{stem}.words", report_dir=report_dir,
              output=output, input=source.path, words=words)
    if ctx.world.exists(job.script):
        raise NotApplicable("a job of that name is already there")
    job.settings = {"INPUT": job.input, "WATCHLIST": job.watchlist, "REPORT_DIR": report_dir}
    world = ctx.world
    spec = world.files.get(job.input)
    if spec is not None and spec.mode & 0o044 != 0o044:  # a source's own mode (a script's)
        world.add(job.input, spec.content, mode=spec.mode | 0o444, owner=spec.owner,
                  group=spec.group, mtime=spec.mtime)
    world.add_user(user)
    world.add(job.script, job.script_text(), mode=0o755)
    world.add(job.env, job.env_text())
    world.add(job.watchlist, lines_text(words))
    world.mkdir(report_dir, mode=0o755, owner=user, group=user)
    minute, hour = ctx.rng.choice((0, 5, 15, 30, 45)), ctx.rng.randint(1, 5)
    cron = f"{minute} {hour} * * * {job.script}"
    staging = f"/tmp/taskloom-debug-cron/{user}"
    world.add(staging, lines_text([f"# {ctx.domain.org}: nightly watch-list report", cron]))
    world.commands.append(f"crontab -u {q(user)} {q(staging)} && "
                          "rm -rf /tmp/taskloom-debug-cron")
    family = ctx.rng.choice(FAMILIES)
    if family == "permissions":
        stale = [line for line in lines if ctx.rng.random() < 0.5]
        injected = _permissions(ctx, job, report(words, stale))
    elif family == "path":
        injected = _path(ctx, job)
    elif family == "environment":
        injected = _environment(ctx, job)
    elif family == "encoding":
        injected = _encoding(ctx, job, lines)
    else:
        injected = _missing(ctx, job)
    cause = injected.cause
    lines = injected.lines or lines
    words = injected.words or words
    expected = report(words, lines)
    other, listing = _rerun(ctx, lines, words)
    compare = ctx.compare(order_matters=True)
    today = report(listing, lines)
    hidden_expected = report(listing, other)
    content = lines_text(other).encode(injected.encoding)
    run = f"cd {q(job.home)} && runuser -u {q(user)} -- {q(job.script)}"
    reads = stored_input(source)
    what = ctx.phrase([
        "one line `WORD COUNT` for each word of its watch list, in the order of the list, "
        "COUNT being the number of lines of the input that contain WORD (plain text, "
        "case-sensitive)",
        "for every word of its watch list, in list order, a line `WORD COUNT` where COUNT "
        "is how many input lines contain that word (case-sensitive, plain text)",
        "a line `WORD COUNT` per watch-list word (same order as the list; COUNT = the "
        "number of input lines containing WORD, plain text, case matters)"])
    files = (f"its script, its settings file {job.env}, the input, the watch list, the "
             "report folder and the report, and whatever they link to")
    cron_env = ("HOME, LOGNAME, SHELL=/bin/sh and PATH=/usr/bin:/bin, or what its crontab sets "
                "instead")
    rules = ctx.phrase([
        f"The checks run the job again that way (as `{user}`, from its home directory, with "
        f"only cron's variables: {cron_env}) with a changed watch list at {job.watchlist}, "
        f"on today's and on new content of {job.input} (in the same format as today's), "
        "each written as a new file in place of the old: the job must keep reading "
        f"{job.input} and {job.watchlist} and writing {output}, and compute the report on "
        f"every run. Leave {job.input} itself as it is, do not make any file or directory "
        f"world-writable, and keep the job's files ({files}) out of world-writable "
        "directories.",
        f"How it is judged: the job is run again as `{user}` from its home directory with "
        f"cron's variables only ({cron_env}), after {job.watchlist} and {job.input} are "
        "replaced by new files (a different watch list; today's and then new input in "
        "today's format). So the job has to go on reading those two paths and writing "
        f"{output}, and must compute the report each time it runs. Do not edit {job.input}; "
        "nothing may become world-writable, and none of the job's files "
        f"({files}) may sit in a world-writable directory.",
        f"Constraints: {job.input} stays untouched; no file or directory may be made "
        f"world-writable, nor may any of the job's files ({files}) live in a world-writable "
        f"directory. The fix is verified by re-running the job as `{user}` (from its home, "
        f"with just {cron_env}, as cron does) against a new watch list at "
        f"{job.watchlist} and against today's and fresh content of {job.input} in the same "
        "format, each put in place as a new file, so the job must keep reading those paths, "
        f"keep writing {output} and really compute the report on every run."])
    sentence = ctx.phrase([
        f"The nightly job {job.script} has stopped working: it fails and {output} is no "
        f"longer updated. It runs from the crontab of the user `{user}` (`{cron}`); to run "
        f"it by hand the way cron does, use `{run}`. It reads {reads} and writes to "
        f"{output} {what}. Find out why it fails and fix it, so that the job, run that way, "
        f"writes the report again; then run it once so that {output} is up to date. {rules}",
        f"Since the last change on this host, the job {job.script} (run every night from "
        f"`{user}`'s crontab as `{cron}`) fails and no longer updates {output}. Debug it: "
        f"run it as cron does (`{run}`), find the cause and fix it. The job reads {reads} "
        f"and must write to {output} {what}. Once it works, run it once more so that "
        f"{output} is current. {rules}",
        f"`{user}`'s nightly cron job (`{cron}`) is broken: {job.script} fails, and the "
        f"report {output} ({what}, from {reads}) is stale or missing. Diagnose why (run it "
        f"by hand with `{run}`), repair the job so it runs cleanly that way, and run it once "
        f"to bring {output} up to date. {rules}",
    ]) + ctx.hint(f"the cause: {cause.hint}")
    solution = f"{injected.fix}\n({run})"
    alternative = (f"{injected.other}\n(cd {q(job.home)} && setpriv --reuid={q(user)} "
                   f"--regid={q(user)} --init-groups {q(job.script)})")
    by_hand = f"mkdir -p {q(report_dir)}\nprintf '%s\\n' " + " ".join(
        q(line) for line in expected) + f" > {q(output)}"
    saved = f"/opt/{dom}/jobs/.{stem}.last"
    replay = (f"{solution}\ncp {q(output)} {q(saved)}\nchmod 644 {q(saved)}\n"
              f"printf '%s\\n' '#!/bin/bash' {q(f'cat {q(saved)} > {q(output)}')} > "
              f"{q(job.script)}\nchmod 755 {q(job.script)}")
    stated = [(True, Rule("job-runs", "that the job itself is fixed, not just its report "
                          "written", by_hand)),
              (differs(hidden_expected, expected, compare) or differs(today, expected, compare),
               Rule("every-run", "that the job computes the report on every run", replay))]
    for rule in injected.rules:
        stated.append((True, Rule(rule.name, rule.stated, f"{rule.ignored}\n({run})")))
    closed = NotWorldWritable("the job's files are not world-writable nor in world-writable "
                              "folders", paths=(job.script, job.env, job.input,
                                                job.watchlist, report_dir, output),
                              world=world)
    checks: list[Assertion] = [
        FileText(f"{output} holds the report on today's input", path=output,
                 expected=lines_text(expected), compare=compare),
        # The job is judged on the checks' own watch list, which they put back afterwards:
        # the job's list must still be the one it had (an emptied list reports nothing).
        FileText(f"{job.watchlist} still lists the words to watch", path=job.watchlist,
                 expected=lines_text(words), compare=compare),
        CrontabEntry(f"{user}'s crontab still runs the job on its schedule", user=user,
                     command=(job.script,), schedule=f"{minute} {hour} * * *"),
        JobRuns(f"the job, run as {user}, reports on a new watch list and new input, "
                "and leaves nothing world-writable",
                script=job.script, user=user, input=job.input, output=output,
                watchlist=job.watchlist, words=lines_text(listing).encode(),
                today=lines_text(today), content=content,
                expected=lines_text(hidden_expected), compare=compare, after=closed),
        closed]
    if ctx.step == 1:
        checks.append(FileDigests.of(f"{job.input} is left as delivered",
                                     {job.input: world.files[job.input].content}))
    return StepResult(
        output=Report(path=output, phrase=f"the watch-list report {output}", lines=expected),
        instruction=sentence, solution=solution, alternative=alternative, checks=checks,
        tools=("runuser", "bash", *injected.tools), side_effect=True, reads_input_file=True,
        rules=exercised(*stated)), cause
