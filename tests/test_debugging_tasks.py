"""Debugging tasks: a nightly job broken by one injected cause, diagnosed and fixed.

The sandbox validation (nop, oracle, the alternative fix, the rule mutants, tamper probes)
is the registry-wide test's; these check what it cannot see: that every cause occurs, that
the environment as shipped holds the fault its cause names (and the job really fails
there, in the sandbox), that the job's bash computes what the generator expects, and that
a seed gives the same task every time.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import TextFile
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.checks import HEADER
from taskloom.generators.procedural.domains import DOMAINS
from taskloom.generators.procedural.primitives import SOURCES
from taskloom.generators.procedural.primitives.base import StepContext
from taskloom.generators.procedural.primitives.debugging import (
    FAMILIES,
    Job,
    JobRuns,
    NotWorldWritable,
    broken_job,
    report,
)
from taskloom.generators.procedural.world import World, lines_text
from taskloom.generators.protocols import DIMENSIONS, Difficulty
from taskloom.models import TaskFile
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()
VARIANTS = {
    "permissions": {"not-executable", "report-dir", "output-owned", "input-unreadable"},
    "path": {"env-moved", "watchlist-moved", "input-moved", "script-moved"},
    "environment": {"misspelled", "unset"},
    "encoding": {"crlf-env", "utf16-input", "latin1-input"},
    "missing-file": {"backup", "git"},
}
ONLY_STEP_ONE = {"input-unreadable", "utf16-input", "latin1-input"}  # they change the input


def difficulty(seed: int) -> Difficulty:
    level = seed % 3 + 1
    return Difficulty(**{**{name: level for name in DIMENSIONS}, "steps": 1})


def step_one(seed: int):
    """(world, result, cause) of the step on a source of its own, as a task's first step."""
    rng = random.Random(seed)
    domain = DOMAINS[rng.choice(sorted(DOMAINS))]
    world = World(workdir=domain.root)

    def context(number: int) -> StepContext:
        return StepContext(rng=random.Random(seed * 7 + number), difficulty=difficulty(seed),
                           domain=domain, world=world, step=1, steps=1)

    kind = rng.choice(("text_file", "app_log", "access_log", "config_file", "script"))
    source = SOURCES[kind](context(0))
    result, cause = broken_job(context(1), source)
    return world, result, cause


def job_run(result) -> JobRuns:
    return next(check for check in result.checks if isinstance(check, JobRuns))


def settings(world: World, path: str) -> dict[str, str]:
    """The variables an env file sets (as written, quotes stripped)."""
    text = world.files[path].content.decode("utf-8")
    found = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            name, value = line.split("=", 1)
            found[name] = value.strip("'")
    return found


def test_every_cause_occurs_and_each_names_its_family():
    seen = Counter(step_one(seed)[2] for seed in range(160))
    assert {c.family for c in seen} == set(FAMILIES)
    for family, names in VARIANTS.items():
        assert {c.name for c in seen if c.family == family} == names, family
    assert all(c.hint for c in seen)


def test_a_later_step_gets_no_cause_that_changes_its_input():
    """After another step the input is the agent's file: it cannot be shipped broken."""
    names = Counter()
    for seed in range(60):
        domain = DOMAINS["ops"]
        world = World(workdir=domain.root)
        context = StepContext(rng=random.Random(seed), difficulty=difficulty(seed),
                              domain=domain, world=world, step=2, steps=2)
        lines = tuple(f"{word}-{n % 5} build {n}" for n, word in
                      enumerate(domain.words * 3))
        source = TextFile(path=f"{domain.root}/output/errors.txt",
                          phrase="the file `/srv/ops/output/errors.txt`", lines=lines)
        try:
            result, cause = broken_job(context, source)
        except NotApplicable:
            continue
        names[cause.name] += 1
        assert source.path not in world.files  # the job reads what step 1 writes
        assert job_run(result).input == source.path
    assert names and not set(names) & ONLY_STEP_ONE


def shipped_fault(world: World, result) -> str:
    """The fault the shipped environment holds, read from the world (files, modes, setup)."""
    run = job_run(result)
    script = world.files.get(run.script)
    if script is None:
        return "script-moved"
    if not script.mode & 0o001:
        return "not-executable"
    env_path = next(line.split()[1] for line in script.content.decode().splitlines()
                    if line.startswith(". "))
    if env_path not in world.files:
        return "env-moved"
    env = world.files[env_path].content
    if b"\r\n" in env:
        return "crlf-env"
    variables = settings(world, env_path)
    if set(variables) != {"INPUT", "WATCHLIST", "REPORT_DIR"}:
        return "misspelled" if len(variables) == 3 else "unset"
    if variables["INPUT"] != run.input:
        return "input-moved"
    data = world.files[run.input].content
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf16-input"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "latin1-input"
    if not world.files[run.input].mode & 0o004:
        return "input-unreadable"
    report_dir = variables["REPORT_DIR"]
    if world.dirs[report_dir][1] != run.user:
        return "report-dir"
    if run.output in world.files:
        return "output-owned" if world.files[run.output].owner == "root" else "?"
    watchlist = variables["WATCHLIST"]
    if watchlist not in world.files:
        setup = "\n".join(world.commands)
        if f"rm {watchlist}" in setup and "git init" in setup:
            return "git"
        backups = [path for path in world.files if path.startswith("/var/backups/")]
        if backups:
            return "backup"
        return "watchlist-moved"
    return "none"


def test_the_shipped_environment_holds_the_fault_its_cause_names():
    for seed in range(120):
        world, result, cause = step_one(seed)
        assert shipped_fault(world, result) == cause.name, (seed, cause)


def test_the_instruction_names_how_the_job_runs_but_not_its_cause():
    for seed in range(90):  # specification 1 (seed % 3 == 0) shows the cause as a hint
        _, result, cause = step_one(seed)
        run = job_run(result)
        assert f"runuser -u {run.user} -- {run.script}" in result.instruction
        assert run.input in result.instruction and run.output in result.instruction
        assert "world-writable" in result.instruction
        assert (cause.hint in result.instruction) == (seed % 3 == 0)


@pytest.mark.parametrize("seed", range(8))
def test_the_jobs_bash_computes_what_the_generator_expects(tmp_path, seed):
    """The job's own script on noisy inputs (blank lines, trailing blanks, case variants)."""
    world, result, _ = step_one(seed)
    run = job_run(result)
    rng = random.Random(seed)
    data = world.files[run.input].content
    encoding = "utf-16" if data.startswith(b"\xff\xfe") else "utf-8"
    try:
        lines = data.decode(encoding).splitlines()
    except UnicodeDecodeError:
        lines = data.decode("latin-1").splitlines()
    words = tuple(rng.sample(sorted({w for line in lines for w in line.split() if w}),
                             3)) if len({w for line in lines for w in line.split()}) > 3 else ()
    words = (*words, "zz-none")
    job = Job(name="t", user="nobody", home=str(tmp_path), script=str(tmp_path / "t.sh"),
              env=str(tmp_path / "t.env"), watchlist=str(tmp_path / "t.words"),
              report_dir=str(tmp_path / "out"), output=str(tmp_path / "out" / "t r.txt"),
              input=str(tmp_path / "in.txt"), words=words)
    job.settings = {"INPUT": job.input, "WATCHLIST": job.watchlist,
                    "REPORT_DIR": job.report_dir}
    (tmp_path / "out").mkdir()
    (tmp_path / "in.txt").write_text(lines_text(lines))
    (tmp_path / "t.words").write_text(lines_text(words))
    (tmp_path / "t.env").write_text(job.env_text())
    (tmp_path / "t.sh").write_text(job.script_text())
    subprocess.run(["bash", job.script], check=True, timeout=30, cwd=tmp_path,
                   env={"PATH": "/usr/bin:/bin"})
    assert (tmp_path / "out" / "t r.txt").read_text() == lines_text(report(words, lines))


def test_the_checks_run_the_job_on_other_content_in_the_inputs_own_form():
    for seed in range(60):
        world, result, cause = step_one(seed)
        run = job_run(result)
        shipped = world.files[run.input].content
        assert run.content != shipped and run.expected
        if cause.name == "utf16-input":
            assert run.content.startswith(b"\xff\xfe")
        elif cause.name == "latin1-input":
            assert any(byte > 0x7F for byte in run.content)
            with pytest.raises(UnicodeDecodeError):
                run.content.decode("utf-8")
        else:
            run.content.decode("utf-8")


def test_the_checks_change_the_watch_list_and_watch_a_non_ascii_word():
    """Both runs see a new watch list; some new lines hold its accented place name."""
    for seed in range(60):
        world, result, _ = step_one(seed)
        run = job_run(result)
        words = run.words.decode("utf-8").split("\n")[:-1]
        shipped = world.files.get(run.watchlist)
        assert (shipped is None or run.words != shipped.content) and run.today
        assert run.watchlist in result.instruction
        assert re.search(r"(changed|different|new) watch list", result.instruction)
        place = next(word for word in words if not word.isascii())
        assert f"{place} 0" not in run.expected.split("\n")
        assert "_swap(path, data" in "\n".join(run.body())  # a new file renamed over it


@pytest.fixture
def closed_home():
    """A folder with no world-writable folder above it (pytest's tmp_path lies in /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="taskloom-test-", dir=Path.home()))
    above = [folder, *folder.parents]
    assert not [f for f in above if f.stat().st_mode & 0o002], f"{folder} is in an open folder"
    yield folder
    shutil.rmtree(folder)


def test_the_world_writable_check_follows_links_and_folders(closed_home):
    """A link into a world-writable folder fails, a sticky one (like /tmp) too: anyone may
    make a name there (red-team round 7 moved the watch list to /tmp behind a link, and made
    the report folder 1777). A file in a closed folder passes."""
    tmp_path = closed_home
    open_dir, sticky, closed = tmp_path / "open", tmp_path / "sticky", tmp_path / "closed"
    for folder in (open_dir, sticky, closed):
        folder.mkdir()
        (folder / "job.sh").write_text("x")
    open_dir.chmod(0o777)
    sticky.chmod(0o1777)
    closed.chmod(0o755)
    tmp_path.chmod(0o755)
    (tmp_path / "linked.sh").symlink_to(open_dir / "job.sh")
    (closed / "linked.sh").symlink_to(sticky / "job.sh")
    namespace: dict = {}
    exec(HEADER, namespace)

    def passes(path, world=None) -> bool:
        body = NotWorldWritable("t", paths=(str(path),), world=world,
                                top=str(tmp_path / "closed")).body()
        try:
            exec("\n".join(body), namespace)
        except AssertionError:
            return False
        return True

    assert passes(closed / "job.sh")
    assert not passes(sticky / "job.sh")
    assert not passes(sticky)
    assert not passes(closed / "linked.sh")
    assert not passes(tmp_path / "linked.sh")
    assert not passes(open_dir / "job.sh")
    (open_dir / "hop").symlink_to(closed / "job.sh")  # a link between, in an open folder
    (closed / "chain.sh").symlink_to(open_dir / "hop")
    assert not passes(closed / "chain.sh")
    shared = closed / "shared.txt"  # anything else made world-writable, but what the task made so
    shared.write_text("x")
    shared.chmod(0o666)
    world = World()
    world.add(str(shared), "x", mode=0o666)
    assert not passes(closed / "job.sh")
    assert passes(closed / "job.sh", world)



def test_the_same_seed_gives_the_same_task():
    generator = ProceduralGenerator(GRAPH)
    for seed in (3, 4):
        blueprint = blueprint_for(GRAPH, ("debug.fix_job",), seed=seed,
                                  difficulty=difficulty(seed))
        first, second = (generator.generate(blueprint).task for _ in range(2))
        assert first.config.metadata["fingerprint"] == second.config.metadata["fingerprint"]


@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_shipped_job_fails_in_the_sandbox_and_the_reference_fix_mends_it(bwrap_runtime):
    """For one task of every cause: as shipped, the job run as cron does exits non-zero;
    after the reference solution's fix it exits 0."""
    from taskloom.config import ValidationConfig
    from taskloom.generators.procedural.primitives import debugging
    from taskloom.sandbox.trial import Phase
    from taskloom.validators.engine import plan_trial
    from taskloom.validators.phases import phase_log
    from taskloom.validators.protocol import TrialPart

    generator = ProceduralGenerator(GRAPH)
    found: dict[str, object] = {}
    original = debugging.broken_job
    for seed in range(200):
        causes = []

        def recording(ctx, source, causes=causes):
            result, cause = original(ctx, source)
            causes.append(cause)
            return result, cause

        debugging.broken_job = recording
        try:
            draft = generator.generate(blueprint_for(GRAPH, ("debug.fix_job",), seed=seed,
                                                     difficulty=difficulty(seed)))
        finally:
            debugging.broken_job = original
        found.setdefault(causes[-1].name, draft.task)
        if len(found) == sum(len(names) for names in VARIANTS.values()):
            break
    assert len(found) == sum(len(names) for names in VARIANTS.values()), sorted(found)
    for name, task in sorted(found.items()):
        solve = task.file("solution", "solve.sh").content.decode()
        *fix, run = solve.rstrip("\n").split("\n")
        script = ("#!/bin/bash\n" + run.replace("(cd", "(set +e; cd").rstrip(")")
                  + "; echo \"shipped: exit $?\")\n" + "\n".join(fix[3:]) + "\n"
                  + run + "\necho 'fixed: exit 0'\n")
        part = TrialPart(phases=(Phase(name="shipped", solution="shipped"),),
                         solutions={"shipped": (TaskFile(path="solve.sh",
                                                         content=script.encode(),
                                                         mode=0o755),)})
        plan, _ = plan_trial(task, ValidationConfig(), [part])
        log = phase_log(bwrap_runtime.run(plan).phases[0])
        assert "shipped: exit 0" not in log and "shipped: exit" in log, (name, log)
        assert "fixed: exit 0" in log, (name, log)


def test_the_world_writable_walk_goes_below_the_folders_open_to_anyone(closed_home,
                                                                       monkeypatch):
    """A sticky folder the image opens to anyone (like /var/tmp) is no finding itself, but
    what lies below it is walked: a job that exec'd its code from a 0777 folder in /var/tmp
    earned 1 while those folders were skipped (forger)."""
    from taskloom.generators.procedural.primitives import debugging

    top = closed_home / "root"
    shared = top / "var-tmp"
    shared.mkdir(parents=True)
    top.chmod(0o755)
    shared.chmod(0o1777)
    monkeypatch.setattr(debugging, "OPEN_FOLDERS", (str(shared),))
    namespace: dict = {}
    exec(HEADER, namespace)

    def passes() -> bool:
        body = NotWorldWritable("t", paths=(), top=str(top)).body()
        try:
            exec("\n".join(body), namespace)
        except AssertionError:
            return False
        return True

    assert passes()
    hidden = shared / "jobs"
    hidden.mkdir()
    hidden.chmod(0o777)
    assert not passes()
    hidden.chmod(0o755)
    (hidden / "impl.sh").write_text("x")
    (hidden / "impl.sh").chmod(0o777)
    assert not passes()
    (hidden / "impl.sh").chmod(0o755)
    os.mkfifo(hidden / "pipe", 0o666)  # no file the job could run: like /dev's devices
    os.chmod(hidden / "pipe", 0o666)
    assert passes()
    shared.chmod(0o777)  # no longer sticky: anyone may rename what others put there
    assert not passes()


def test_the_world_writable_walk_reaches_below_a_path_longer_than_path_max(closed_home):
    """A folder open to anyone below a path longer than PATH_MAX (4,096 characters) is found,
    and the tree without it passes: os.scandir cannot take that path, so the walk goes by
    directory handles (the old walk errored there, on a sound tree too; a kept backup hid
    below such a path from the rotation's os.walk, which skipped it)."""
    top = closed_home / "root"
    top.mkdir()
    top.chmod(0o755)
    at = os.open(top, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir("x" * 240, 0o755, dir_fd=at)
            below = os.open("x" * 240, os.O_RDONLY, dir_fd=at)
            os.close(at)
            at = below
        namespace: dict = {}
        exec(HEADER, namespace)
        body = "\n".join(NotWorldWritable("t", paths=(), top=str(top)).body())
        exec(body, namespace)
        os.mkdir("open", dir_fd=at)
        os.chmod("open", 0o777, dir_fd=at)
        with pytest.raises(AssertionError, match="made world-writable"):
            exec(body, namespace)
    finally:
        os.close(at)


def test_the_harness_folders_are_not_walked_but_what_lies_beside_them_is(closed_home,
                                                                          monkeypatch):
    """What lies in the harness's folders is the harness's (Harbor's environments make /logs
    and its folders 0777); beside them the walk goes on."""
    from taskloom.generators.procedural.primitives import debugging

    top = closed_home / "root"
    harness = top / "logs"
    (harness / "session").mkdir(parents=True)
    top.chmod(0o755)
    harness.chmod(0o777)
    (harness / "session").chmod(0o777)
    monkeypatch.setattr(debugging, "UNWALKED", (str(harness),))
    namespace: dict = {}
    exec(HEADER, namespace)
    body = "\n".join(NotWorldWritable("t", paths=(), top=str(top)).body())
    exec(body, namespace)
    (top / "cache").mkdir()
    (top / "cache").chmod(0o777)
    with pytest.raises(AssertionError, match="made world-writable"):
        exec(body, namespace)


def test_the_job_runs_after_every_check_that_reads_the_state_it_may_change():
    """The job is the agent's code: run before the world-writable check, a job that began
    with `chmod go-w "$0"` mended its own modes before they were read (forger)."""
    draft = ProceduralGenerator(GRAPH).generate(blueprint_for(GRAPH, ("debug.fix_job",),
                                                              seed=3))
    source = "".join(f.content.decode() for f in draft.task.tests if f.path.endswith(".py"))
    checks = re.findall(r"^def (test_\w+)\(\):\n    \"(.*)\"", source, re.MULTILINE)
    runs = [name for name, label in checks if label.startswith("the job, run as")]
    assert len(runs) == 1 and len(checks) > 2, checks
    assert checks[-1][0] == runs[0], checks


@pytest.mark.bwrap
def test_a_job_that_mends_its_own_modes_or_cron_cannot_run_earns_nothing(bwrap_runtime):
    """The reference fix earns 1; the same fix, with the job's script left world-writable
    but mending itself when run, with the job's code moved to an open folder in /var/tmp,
    with a crontab whose SHELL keeps cron from running the job, with a job that opens its
    report folder or moves its report to /tmp on each run, or with a hard link to its
    script in /tmp, earns 0 (forgers; the last three earned 1 before the job's runs were
    checked too and a file's links counted)."""
    from taskloom.config import ValidationConfig
    from taskloom.sandbox.trial import Phase
    from taskloom.validators.engine import plan_trial
    from taskloom.validators.protocol import TrialPart

    draft = ProceduralGenerator(GRAPH).generate(blueprint_for(GRAPH, ("debug.fix_job",),
                                                              seed=3))
    task = draft.task
    source = "".join(f.content.decode() for f in task.tests if f.path.endswith(".py"))
    user, script = re.search(r"user, script = '([^']+)', '([^']+)'", source).groups()
    fix = task.file("solution", "solve.sh").content.decode()
    wrapper = "#!/bin/bash\\nexec /var/tmp/jobs/impl.sh \"$@\"\\n"
    forged = {
        "reference": fix,
        "mends-itself": fix + f"sed -i '2i chmod go-w \"$0\"' {script}\n"
                              f"chown {user} {script}\nchmod 0777 {script}\n",
        "open-code": fix + "mkdir -m 0777 /var/tmp/jobs\n"
                           f"cp {script} /var/tmp/jobs/impl.sh\n"
                           "chmod 0777 /var/tmp/jobs/impl.sh\n"
                           f"printf '{wrapper}' > {script}\n",
        # cron runs the entry with the variables set above it: this SHELL never runs it.
        "cron-cannot-run-it": fix + f"crontab -u {user} -l > /root/table\n"
                                    f"{{ echo SHELL=/usr/sbin/nologin; cat /root/table; }}"
                                    f" | crontab -u {user} -\n",
        # cron ends a line at a newline only: for cron this SHELL is part of a comment.
        "carriage-return": fix + f"crontab -u {user} -l > /root/table\n"
                                 "printf '#\\rSHELL=/usr/sbin/nologin\\n' | "
                                 f"cat - /root/table > /var/spool/cron/crontabs/{user}\n",
        # A comment after the command is none, for the shell cron runs it with.
        "comment-after": fix + f"crontab -u {user} -l | sed '/^[0-9]/s/$/  # nightly/' | "
                               f"crontab -u {user} -\n",
        # sh runs `job.sh#;true` as one word: no such file (shlex's comments=True cut it).
        "hash-inside-a-word": fix + f"crontab -u {user} -l | sed '/^[0-9]/s/$/#;true/' | "
                                    f"crontab -u {user} -\n",
        # A variable set below the entry is not the entry's: still a working job.
        "variable-below": fix + f"crontab -u {user} -l > /root/table\n"
                                f"{{ echo 'MAILTO=\"\"'; cat /root/table; echo PATH=/none; }}"
                                f" | crontab -u {user} -\n",
        # Each run of the job (the checks' runs, after the world-writable check) opens its
        # report folder to everyone, or moves its report to /tmp behind a link.
        "opens-on-run": fix + f"echo 'chmod 0777 \"$REPORT_DIR\"' >> {script}\n",
        "report-to-tmp": fix + f"echo '[ -L \"$out\" ] || {{ mkdir -p /tmp/r; "
                               f"mv -f -- \"$out\" /tmp/r/report; "
                               f"ln -s /tmp/r/report \"$out\"; }}' >> {script}\n",
        # the job's script has a second name in /tmp (a hard link)
        "hard-link": fix + f"ln {script} /tmp/job.sh\n",
    }
    part = TrialPart(phases=tuple(Phase(name=name, solution=name) for name in forged),
                     solutions={name: (TaskFile(path="solve.sh", content=text.encode(),
                                                mode=0o755),)
                                for name, text in forged.items()})
    plan, _ = plan_trial(task, ValidationConfig(), [part])
    rewards = {phase.name: phase.reward for phase in bwrap_runtime.run(plan).phases}
    assert rewards == {"reference": 1.0, "mends-itself": 0.0, "open-code": 0.0,
                       "cron-cannot-run-it": 0.0, "carriage-return": 0.0,
                       "hash-inside-a-word": 0.0, "comment-after": 1.0,
                       "variable-below": 1.0, "opens-on-run": 0.0, "report-to-tmp": 0.0,
                       "hard-link": 0.0}, rewards


@pytest.mark.parametrize(("entry", "stated", "same"), [
    ("10 20 1-31 * 6", "10 20 * * 6", False),  # cron: the 1st to the 31st, or a Saturday
    ("10 20 */1 * sat", "10 20 * * 6", True),
    ("10 20 1-31 * 0-6", "10 20 * * *", True),  # either field: every day
    ("10 20 1,15 * 1", "10 20 1,15 * *", False),
    ("1_0 20 * * 6", "10 20 * * 6", None),  # cron reads 1 and stops at the _
    ("10 20 * * \u0666", "10 20 * * 6", None),  # not an ASCII digit
    ("mon 20 * * 6", "1 20 * * 6", None),  # a day's name in the minutes
    ("10 20 * jan SAT", "10 20 * 1 6", True),
    ("10/1 20 * * 6", "10 20 * * 6", None),  # cron takes a step after * or a range only
    ("10-10/100 20 * * 6", "10 20 * * 6", True),
])
def test_a_schedule_is_read_as_cron_runs_it(entry, stated, same):
    """Days match either day field unless one starts with `*`; numbers are ASCII digits, and
    names stand in their own field only (red team: `1-31` and `1_0` passed for `*` and 10)."""
    from taskloom.generators.procedural.primitives import cron

    namespace: dict = {}
    exec("\n".join(cron.CRON_HELPERS), namespace)
    if same is None:
        with pytest.raises(AssertionError):
            namespace["times"](entry.split())
    else:
        assert (namespace["times"](entry.split()) == namespace["times"](stated.split())) is same


def test_a_crontab_command_is_split_into_words_as_sh_splits_it():
    """An operator outside quotes is a word of its own: sh refuses `access' '(old).log`,
    which shlex read as the one word the instruction names (red team, round 3)."""
    from taskloom.generators.procedural.primitives import cron

    namespace: dict = {}
    exec("\n".join(cron.CRON_HELPERS), namespace)
    words = namespace["words"]
    assert words("/x 4 '/var/log/access (old).log'") == ["/x", "4", "/var/log/access (old).log"]
    assert words("/x 4 /var/log/access' '(old).log") != ["/x", "4", "/var/log/access (old).log"]
    assert words("/opt/job.sh#;true") == ["/opt/job.sh#", ";", "true"]
    assert words("/opt/job.sh 'a # b'  # nightly") == ["/opt/job.sh", "a # b"]


@pytest.mark.parametrize(("above", "entry", "passes"), [
    ("", "5 4 * * * /opt/job.sh", True),
    ("", "5 4 * * * /opt/job.sh  # nightly", True),
    ("", "5 4 * * * '/opt/job.sh' '# not a comment'", False),
    ("", "5 4 * * * /opt/job.sh#;true", False),
    ("SHELL=/bin/bash\nPATH=/usr/bin:/bin:/usr/local/bin\n", "5 4 * * * /opt/job.sh", True),
    ("SHELL=/usr/bin/false\n", "5 4 * * * /opt/job.sh", False),
    ("PATH=/usr/local/bin\n", "5 4 * * * /opt/job.sh", False),
    ("SHELLOPTS=noexec\n", "5 4 * * * /opt/job.sh", False),
    ("BASH_ENV=/root/.cronrc\n", "5 4 * * * /opt/job.sh", False),
    ("SSH_CLIENT=10.0.0.1 50000 22\n", "5 4 * * * /opt/job.sh", False),  # bash reads .bashrc
    ("#" + "x" * 1200 + "\n", "5 4 * * * /opt/job.sh", True),  # cron skips any comment
    ("REPORT_DIR=/srv/reports\nLANG=C.UTF-8\n", "5 4 * * * /opt/job.sh", True),
    ("", "5 4 * * *" + " " * 1000 + "/opt/job.sh", False),
])
def test_the_crontab_entry_is_read_as_cron_and_its_shell_run_it(tmp_path, monkeypatch, above,
                                                                 entry, passes):
    """The entry's words as sh reads them (a # inside a word is none), under the SHELL and
    PATH the crontab sets above it, with no variable that changes how the shell runs it, in
    lines cron does not refuse as too long (forgers: `SHELL=/usr/bin/false`,
    `job.sh#;other`, `SHELLOPTS=noexec`, a `BASH_ENV` that exits, 1,000 blanks)."""
    import pwd

    from taskloom.generators.procedural.primitives import cron

    user = pwd.getpwuid(os.getuid()).pw_name
    job = tmp_path / "job.sh"  # the account must be able to run it
    job.write_text("#!/bin/sh\n")
    job.chmod(0o755)
    table = tmp_path / user
    table.write_text(f"{above}{entry}\nPATH=/nowhere\n".replace("/opt/job.sh", str(job)))
    table.chmod(0o600)
    monkeypatch.setattr(cron, "CRONTABS", str(tmp_path))
    check = cron.CrontabEntry("t", user=user, command=(str(job),), schedule="5 4 * * *")
    namespace: dict = {"IMAGE_USERS": {user: os.getuid()}, "IMAGE_GROUPS": {}}
    exec(HEADER, namespace)
    body = "def run():\n" + "\n".join("    " + line for line in check.body())
    exec(body, namespace)
    if passes:
        namespace["run"]()
    else:
        with pytest.raises(AssertionError):
            namespace["run"]()
