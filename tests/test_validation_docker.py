"""Integration tests against the real Docker engine: one per reason code, plus the hard cases
(a hanging solution, a fork bomb, a memory hog, a missing reward file) that must end as
rejected verdicts, never as a crash or a hang."""

from __future__ import annotations

import pytest
from taskfactory import (
    DOCKERFILE,
    NAIVE_TEST_SH,
    TWO_STEPS,
    UPPERCASE_SOLVE,
    UPPERCASE_TEST,
    make_multi_step_task,
    make_task,
)

from taskloom.models import ReasonCode
from taskloom.sandbox.base_image import BASE_IMAGE

pytestmark = pytest.mark.docker
MODES = ["auto", "strict"]


def failed(report):
    return {v.check: v.reason for v in report.verdicts if not v.passed}


@pytest.mark.parametrize("mode", MODES)
def test_good_task_is_accepted(tmp_path, validate, mode):
    report = validate(make_task(tmp_path, "good"), mode=mode)
    assert report.accepted, report
    assert [v.check for v in report.verdicts] == [
        "structure", "build", "nop", "oracle", "tamper", "leakage"]


@pytest.mark.parametrize("mode", MODES)
def test_fresh_state_between_oracle_runs(tmp_path, validate, mode):
    # Not idempotent: appends to a setup file, a base-image file and creates files and a
    # background process. Only a real reset lets every run see the original state.
    solve = ("#!/bin/bash\necho extra >> /app/data.txt\necho '# x' >> /etc/bash.bashrc\n"
             "mkdir -p /srv/new && touch /srv/new/f\n(sleep 300 &)\n"
             "tr a-z A-Z < /app/data.txt > /app/out.txt\n")
    test = ('from pathlib import Path\n\n\ndef test_once():\n'
            '    assert Path("/app/out.txt").read_text() == "HELLO\\nWORLD\\nEXTRA\\n"\n'
            '    assert Path("/etc/bash.bashrc").read_text().count("# x") == 1\n')
    report = validate(make_task(tmp_path, "append", solve=solve, test_py=test), mode=mode,
                      repeats=3)
    assert report.accepted, failed(report)


def test_structure_not_toml(tmp_path, validate):
    folder = make_task(tmp_path, "bad-toml", toml="schema_version = \n[verifier\n")
    report = validate(folder)
    assert failed(report) == {"structure": ReasonCode.STRUCTURE}
    assert "task.toml" in report.verdicts[0].details
    assert "TOML" in report.verdicts[0].details


def test_structure_missing_instruction(tmp_path, validate):
    report = validate(make_task(tmp_path, "no-instruction", instruction=None))
    assert failed(report) == {"structure": ReasonCode.STRUCTURE}
    assert "instruction.md" in report.verdicts[0].details


def test_structure_missing_solution(tmp_path, validate):
    report = validate(make_task(tmp_path, "no-solution", solve=None))
    assert failed(report) == {"structure": ReasonCode.STRUCTURE}
    assert "solve.sh" in report.verdicts[0].details


@pytest.mark.parametrize("mode", MODES)
def test_build_failure(tmp_path, validate, mode):
    dockerfile = DOCKERFILE + "RUN echo about to fail && exit 3\n"
    report = validate(make_task(tmp_path, "bad-build", dockerfile=dockerfile), mode=mode)
    assert failed(report) == {"build": ReasonCode.BUILD}
    build = next(v for v in report.verdicts if v.check == "build")
    assert "about to fail" in build.log


def test_build_from_missing_image(tmp_path, validate):
    dockerfile = "FROM taskloom-test/does-not-exist:1\nRUN true\n"
    report = validate(make_task(tmp_path, "no-image", dockerfile=dockerfile))
    assert failed(report) == {"build": ReasonCode.BUILD}


@pytest.mark.parametrize("mode", MODES)
def test_trivial_task(tmp_path, validate, mode):
    test = "def test_nothing():\n    assert True\n"
    report = validate(make_task(tmp_path, "trivial", test_py=test), mode=mode)
    assert failed(report) == {"nop": ReasonCode.TRIVIAL}


# A hand-written verifier of the kind graded Harbor tasks have: a partial score, or
# several named ones in reward.json, from one comparison of the output.
SCORED_TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/out.txt 2>/dev/null)" = "$(printf 'HELLO\\nWORLD')" ]; then done=1
else done={untouched}; fi
{write}
"""
GRADED = {"untouched": "0.2", "write": "echo $done > /logs/verifier/reward.txt"}
NAMED = {"untouched": "0", "write": 'echo "{\\"correctness\\": $done, \\"performance\\": 1}" '
                                    "> /logs/verifier/reward.json"}


def test_a_graded_task_is_accepted_with_its_untouched_score_shown(tmp_path, validate):
    report = validate(make_task(tmp_path, "graded", test_sh=SCORED_TEST_SH.format(**GRADED)),
                      checks=("nop", "oracle"))
    assert report.accepted, report
    nop = next(v for v in report.verdicts if v.check == "nop")
    assert nop.details == ("graded: tests give reward 0.2 on the untouched environment, "
                           "below the 1 of a solved task")


def test_named_rewards_are_read_as_harbor_reads_them(tmp_path, validate):
    """reward.json with no `reward` key: solved is every named reward at 1, and the report
    shows each."""
    report = validate(make_task(tmp_path, "named", test_sh=SCORED_TEST_SH.format(**NAMED)),
                      checks=("nop", "oracle"))
    assert report.accepted, report
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert oracle.details.endswith("(1 (correctness 1, performance 1), "
                                   "1 (correctness 1, performance 1))"), oracle.details
    wrong = make_task(tmp_path, "named-wrong", test_sh=SCORED_TEST_SH.format(**NAMED),
                      solve="#!/bin/bash\ncp /app/data.txt /app/out.txt\n")
    report = validate(wrong, checks=("nop", "oracle"))
    assert failed(report) == {"oracle": ReasonCode.ORACLE_FAILS}
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert "0 (correctness 0, performance 1)" in oracle.details


# Multi-step tasks as Harbor runs them: one environment for every step (the join step
# needs the file the write step left, and the seed its workdir/setup.sh put beside it), a
# step's own solve.sh or else the task's, min_reward ending the trial early, and the trial's
# reward the mean of the steps' (or the final step's).
LAZY = {"write": {**TWO_STEPS["write"], "solve": "#!/bin/bash\ntrue\n"},
        "join": {**TWO_STEPS["join"], "solve": None}}
JOIN_ANYWAY = "#!/bin/bash\nprintf 'hello\\nworld\\n' > /app/c.txt\n"
MULTI_STEP = {
    # name: (steps, [[steps]] lines, strategy, the task's solve.sh, verdicts, oracle shows)
    "gated": (TWO_STEPS, {"write": "min_reward = 1.0\n"}, None, None, {},
              "1 (steps: write 1, join 1)"),
    "mean": (LAZY, {}, None, JOIN_ANYWAY, {"oracle": ReasonCode.ORACLE_FAILS},
             "0.5 (steps: write 0, join 1)"),
    "final": (LAZY, {}, "final", JOIN_ANYWAY, {}, "1 (steps: write 0, join 1)"),
    "stopped": (LAZY, {"write": "min_reward = 1.0\n"}, "final", JOIN_ANYWAY,
                {"oracle": ReasonCode.ORACLE_FAILS}, "0 (steps: write 0)"),
}


@pytest.mark.parametrize("case", list(MULTI_STEP))
def test_a_multi_step_task_is_validated_step_by_step(tmp_path, validate, case):
    steps, settings, strategy, solve, verdicts, shown = MULTI_STEP[case]
    task = make_multi_step_task(tmp_path, case, steps, settings=settings, strategy=strategy,
                                solve=solve)
    report = validate(task, checks=("nop", "oracle", "leakage"), repeats=1)
    assert failed(report) == verdicts, report
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert shown in oracle.details, oracle.details
    nop = next(v for v in report.verdicts if v.check == "nop")
    assert nop.passed and "write 0" in nop.details, nop.details


# An answer key in the environment: the tests compare the checksum with a file the agent
# can read, which the instruction only asks it not to open (Harbor's oracle 1 and nop 0
# cannot tell); the same task whose tests compute the checksum has no key.
KEY_DOCKERFILE = DOCKERFILE + "RUN sha256sum /app/data.txt | cut -d' ' -f1 > /app/.expected\n"
KEY_TESTS = {
    "from-key": 'Path("/app/.expected").read_text().strip()',
    "computed": 'hashlib.sha256(Path("/app/data.txt").read_bytes()).hexdigest()',
}
KEY_TEST = """import hashlib
from pathlib import Path


def test_checksum():
    assert Path("/app/sum.txt").read_text().strip() == {expected}
"""


@pytest.mark.parametrize("tests", list(KEY_TESTS))
def test_an_answer_key_in_the_environment_is_a_leak(tmp_path, validate, tests):
    task = make_task(tmp_path, tests, dockerfile=KEY_DOCKERFILE,
                     test_py=KEY_TEST.format(expected=KEY_TESTS[tests]),
                     instruction="Write the SHA-256 checksum of /app/data.txt, in hex, to "
                                 "/app/sum.txt. Do not open /app/.expected.\n",
                     solve="#!/bin/bash\nsha256sum /app/data.txt | cut -d' ' -f1 > "
                           "/app/sum.txt\n")
    report = validate(task, checks=("nop", "oracle", "leakage"), repeats=1)
    leakage = next(v for v in report.verdicts if v.check == "leakage")
    if tests == "computed":
        assert report.accepted, report
    else:
        assert failed(report) == {"leakage": ReasonCode.LEAK}, report
        assert leakage.details.startswith("1 leak(s) of tests, solution or answers: "
                                          "/app/.expected holds the answer the tests compare "
                                          "with"), leakage.details


# A service the solution starts and leaves running, as Harbor keeps it for the tests (its
# trial shares one environment): each usual way of starting one in the background.
SERVED_TEST = """import urllib.request


def test_served():
    body = urllib.request.urlopen("http://127.0.0.1:8080/data.txt", timeout=5).read()
    assert body == b"hello\\nworld\\n"
"""
SERVE = "python3 -m http.server 8080 --directory /app"
STARTS = {
    "nohup": f"nohup {SERVE} > /tmp/server.log 2>&1 &",
    "nohup-stdin-closed": f"nohup {SERVE} > /tmp/server.log 2>&1 < /dev/null &",
    "setsid": f"setsid {SERVE} > /tmp/server.log 2>&1 &",
    "double-fork": f"( {SERVE} > /tmp/server.log 2>&1 & )",
    "daemon-with-pid-file": (
        "python3 -c 'import os, sys\nif os.fork(): sys.exit(0)\nos.setsid()\n"
        "if os.fork(): sys.exit(0)\nopen(\"/run/server.pid\", \"w\").write(str(os.getpid()))\n"
        "os.execvp(\"python3\", \"python3 -m http.server 8080 --directory /app\".split())'"
        " > /dev/null 2>&1"),
}
WAIT_FOR_PORT = ("for _ in $(seq 100); do python3 -c 'import socket; socket.create_connection("
                 "(\"127.0.0.1\", 8080), 1)' 2>/dev/null && break; sleep 0.1; done\n")


@pytest.mark.parametrize("start", list(STARTS))
def test_a_service_the_solution_starts_is_up_for_the_tests(tmp_path, validate, start):
    """The solution starts a server, waits for its port and returns; in every run from
    fresh state the tests find it serving (a kill of the solution's process group as it
    exited took the server down in about 1 run of 4)."""
    task = make_task(tmp_path, start, test_sh=NAIVE_TEST_SH, test_py=SERVED_TEST,
                     solve=f"#!/bin/bash\n{STARTS[start]}\n{WAIT_FOR_PORT}",
                     instruction="Serve /app over HTTP on 127.0.0.1:8080.\n")
    report = validate(task, checks=("nop", "oracle"), repeats=4)
    assert report.accepted, [(v.check, v.details, v.log[-800:]) for v in report.verdicts]


@pytest.mark.parametrize("mode", MODES)
def test_oracle_fails(tmp_path, validate, mode):
    solve = "#!/bin/bash\ncp /app/data.txt /app/out.txt\n"
    report = validate(make_task(tmp_path, "wrong", solve=solve), mode=mode)
    assert failed(report) == {"oracle": ReasonCode.ORACLE_FAILS}
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert "AssertionError" in oracle.log or "assert" in oracle.log


def test_flaky_solution(tmp_path, validate):
    """A solution that passes half the time is `flaky`. The coin is bash's own SRANDOM
    (getrandom), so no helper process can fail and turn every run into a pass, which is how
    `od` behind `$((...))` once made all 12 runs agree; with 20 runs the chance all agree
    by luck is 1 in 2**19."""
    solve = UPPERCASE_SOLVE + "(( SRANDOM % 2 )) && rm /app/out.txt\nexit 0\n"
    report = validate(make_task(tmp_path, "flaky", solve=solve), repeats=20)
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert failed(report) == {"oracle": ReasonCode.FLAKY}, (oracle.details, oracle.log[-800:])


@pytest.mark.parametrize("mode", MODES)
def test_hanging_solution_times_out(tmp_path, validate, mode):
    solve = "#!/bin/bash\nsleep 1000\n"
    report = validate(make_task(tmp_path, "hang", solve=solve, agent_timeout=3.0), mode=mode)
    assert failed(report) == {"oracle": ReasonCode.TIMEOUT}
    assert report.seconds < 60


def test_hanging_tests_time_out(tmp_path, validate):
    test_sh = "#!/bin/bash\nsleep 1000\n"
    report = validate(make_task(tmp_path, "hang-tests", test_sh=test_sh,
                                verifier_timeout=3.0))
    assert failed(report)["oracle"] == ReasonCode.TIMEOUT


# Tests that wait for a service nothing runs: on the untouched environment they hang until
# stopped; the solution starts the service, and they pass.
WAITING_TEST = """import socket
import time


def test_service_answers():
    while True:
        try:
            socket.create_connection(("127.0.0.1", 8080), 1).close()
            return
        except OSError:
            time.sleep(0.2)
"""


def test_a_hanging_nop_is_a_warning_found_early(tmp_path, validate):
    task = make_task(tmp_path, "waits", test_sh=NAIVE_TEST_SH, test_py=WAITING_TEST,
                     solve=f"#!/bin/bash\n{STARTS['setsid']}\n{WAIT_FOR_PORT}",
                     verifier_timeout=120.0)
    report = validate(task, checks=("nop", "oracle"), nop_budget_sec=4.0)
    assert report.accepted, report
    nop = next(v for v in report.verdicts if v.check == "nop")
    assert nop.details.startswith("warning: the tests were still running after 4 s"), nop
    assert "test.sh" in nop.log
    assert report.seconds < 60  # not the verifier's 120 s


def test_fork_bomb_is_contained(tmp_path, validate):
    solve = "#!/bin/bash\nbomb() { bomb | bomb & }\nbomb\nwait\n"
    report = validate(make_task(tmp_path, "fork-bomb", solve=solve, agent_timeout=8.0))
    # The bomb outlives solve.sh's limit, or starves test.sh of processes, or leaves no
    # output: any of these is a rejected oracle, within bounded time.
    assert set(failed(report)) == {"oracle"}
    assert report.seconds < 120


def test_memory_hog_is_killed(tmp_path, validate):
    solve = ("#!/bin/bash\npython3 -c \"x = bytearray(2 * 1024 ** 3)\" || true\n"
             "cp /app/data.txt /app/out.txt\n")
    report = validate(make_task(tmp_path, "memory-hog", solve=solve, memory_mb=256))
    assert failed(report) == {"oracle": ReasonCode.ORACLE_FAILS}


def test_missing_reward_file(tmp_path, validate):
    test_sh = "#!/bin/bash\ncd /tests && python3 -m pytest -q test_outputs.py\n"
    report = validate(make_task(tmp_path, "no-reward", test_sh=test_sh))
    # A verifier that writes no reward lets a process the agent left behind write one.
    assert failed(report) == {"nop": ReasonCode.VERIFIER, "oracle": ReasonCode.VERIFIER,
                              "tamper": ReasonCode.HACKABLE}
    nop = next(v for v in report.verdicts if v.check == "nop")
    assert "reward.txt" in nop.details


def test_weak_tests(tmp_path, validate):
    solve = ("#!/bin/bash\n# taskloom:step 1 make a copy\ncp /app/data.txt /app/copy.txt\n"
             "# taskloom:step 2 uppercase\ntr a-z A-Z < /app/data.txt > /app/out.txt\n")
    report = validate(make_task(tmp_path, "weak", solve=solve))
    assert failed(report) == {"mutations": ReasonCode.WEAK_TESTS}
    mutations = next(v for v in report.verdicts if v.check == "mutations")
    assert "step 1" in mutations.details


def test_every_step_checked(tmp_path, validate):
    solve = ("#!/bin/bash\n# taskloom:step 1 make a copy\ncp /app/data.txt /app/copy.txt\n"
             "# taskloom:step 2 uppercase the copy\n"
             "tr a-z A-Z < /app/copy.txt > /app/out.txt\n")
    report = validate(make_task(tmp_path, "strong", solve=solve))
    assert report.accepted, failed(report)
    assert "mutations" in [v.check for v in report.verdicts]


def test_leak_in_build_context(tmp_path, validate):
    folder = make_task(tmp_path, "leak-context",
                       environment={"data.txt": "hello\nworld\n", "check.py": UPPERCASE_TEST})
    report = validate(folder)
    assert failed(report) == {"leakage": ReasonCode.LEAK}
    leakage = next(v for v in report.verdicts if v.check == "leakage")
    assert "environment/check.py" in leakage.log


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("folder", ["/opt", "/var/lib/dpkg/info"])
def test_leak_in_image(tmp_path, validate, mode, folder):
    # The Dockerfile writes the reference solution into the image without copying it (the
    # package database is not walked unless setup wrote into it, as here).
    dockerfile = (f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY data.txt /app/data.txt\n"
                  "RUN printf '#!/bin/bash\\ntr a-z A-Z < /app/data.txt > /app/out.txt\\n' "
                  f"> {folder}/answer.sh\n")
    report = validate(make_task(tmp_path, "leak-image", dockerfile=dockerfile), mode=mode)
    assert failed(report) == {"leakage": ReasonCode.LEAK}
    leakage = next(v for v in report.verdicts if v.check == "leakage")
    assert f"{folder}/answer.sh" in leakage.log


@pytest.mark.parametrize("mode", MODES)
def test_solution_killing_every_process_is_judged_as_harbor_does(tmp_path, validate, mode):
    """`kill -9 -1` kills the container's main command: under Harbor the container stops
    and the trial fails, so the oracle fails here too; the sandbox itself survives."""
    solve = "#!/bin/bash\n" + UPPERCASE_SOLVE + "kill -9 -1\n"
    report = validate(make_task(tmp_path, "killer", solve=solve), mode=mode)
    assert failed(report)["oracle"] == ReasonCode.VERIFIER
    oracle = next(v for v in report.verdicts if v.check == "oracle")
    assert "main process was killed" in oracle.details


def test_tasks_run_without_network(tmp_path, validate):
    solve = UPPERCASE_SOLVE + "cat /sys/class/net/*/operstate > /app/net.txt 2>&1 || true\n"
    test = UPPERCASE_TEST + ('\n\ndef test_only_loopback():\n'
                             '    import os\n'
                             '    assert sorted(os.listdir("/sys/class/net")) == ["lo"]\n')
    report = validate(make_task(tmp_path, "offline", solve=solve, test_py=test))
    assert report.accepted, failed(report)


# Solution lines that fail when run twice in the same state, and the sandboxes a trial
# (nop, oracle x 2) needs: what the driver can undo in place needs one.
STATE_CHANGES = {
    "local-install": ("[ ! -e /usr/local/bin/upper ]\ninstall -m 755 /bin/cat "
                      "/usr/local/bin/upper\n", 1),
    "system-install": ("[ ! -e /usr/bin/upper ]\ninstall -m 755 /bin/cat /usr/bin/upper\n", 2),
    "new-user": ("useradd -M -s /usr/sbin/nologin probe-user\n", 1),
    "move-and-chmod": ("[ ! -e /app/moved ]\n[ \"$(stat -c %a /app/data.txt)\" != 600 ]\n"
                       "mkdir /app/moved\nmv /app/data.txt /app/moved/\n"
                       "chmod 600 /app/moved/data.txt\ncp /app/moved/data.txt /app/data.txt\n",
                       1),
    "package-database": ("[ ! -e /var/lib/dpkg/info/upper.list ]\n"
                         "echo /usr/bin/upper > /var/lib/dpkg/info/upper.list\n", 2),
    # a new container's /dev/shm is empty (a tmpfs of its own, outside the root filesystem);
    # a file another user owns there is sticky
    "shared-memory": ("[ -z \"$(ls -A /dev/shm)\" ]\nmkdir /dev/shm/upper\n"
                      "runuser -u nobody -- touch /dev/shm/upper.lock\n", 1),
    # so are its POSIX message queues (an IPC namespace of its own, seen at /dev/mqueue): a
    # queue opened O_EXCL fails when an earlier phase's is still there
    "message-queue": ("python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
                      "assert libc.mq_open(b\"/upper\", os.O_CREAT | os.O_EXCL | os.O_RDWR, "
                      "0o600, None) >= 0, os.strerror(ctypes.get_errno())'\n"
                      "[ -e /dev/mqueue/upper ]\n", 1),
}


@pytest.mark.parametrize("change", list(STATE_CHANGES))
def test_state_changes_are_undone_between_runs(tmp_path, runtime_name, request, change):
    """Every oracle run must see the original state. Installs under /usr/local (the overlay
    copies /usr up on the first write), edits of image files under /etc (useradd), files
    moved away and chmod-ed (renamed back, not rewritten) and files left in /dev/shm are
    undone in place; a new entry in a system directory or the package database is not, so
    each later run gets a new sandbox."""
    from taskloom.config import ValidationConfig
    from taskloom.harbor import read_task_folder
    from taskloom.validators.engine import plan_trial, validate_task

    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    line, sandboxes = STATE_CHANGES[change]
    solve = "#!/bin/bash\nset -e\n" + line + UPPERCASE_SOLVE.removeprefix("#!/bin/bash\n")
    task = read_task_folder(make_task(tmp_path, change, solve=solve))
    config = ValidationConfig(repeats=2, checks=("-tamper",))  # the phases of this test only
    report = validate_task(task, runtime, config)
    assert report.accepted, failed(report)
    plan, _ = plan_trial(task, config)
    result = runtime.run(plan)
    assert [phase.reward for phase in result.phases] == [0, 1, 1]
    assert result.sandboxes == sandboxes, result.notes


def test_an_image_holds_nothing_its_build_left_in_shared_memory(tmp_path, runtime_name,
                                                                 request):
    """A build's RUN writes /dev/shm of the build container only: the image, and so every
    phase, starts with it empty. Fast mode runs the RUN lines in the sandbox itself, so the
    end of its setup empties /dev/shm."""
    from taskloom.config import ValidationConfig
    from taskloom.harbor import read_task_folder
    from taskloom.validators.engine import validate_task

    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    solve = ("#!/bin/bash\nset -e\n[ -z \"$(ls -A /dev/shm)\" ]\n"
             + UPPERCASE_SOLVE.removeprefix("#!/bin/bash\n"))
    task = read_task_folder(make_task(tmp_path, "built-shm", solve=solve,
                                      dockerfile=DOCKERFILE + "RUN touch /dev/shm/built\n"))
    report = validate_task(task, runtime, ValidationConfig(repeats=1, checks=("oracle",)))
    assert report.accepted, failed(report)


class DoNothingEarnsZero:
    """A check registered from outside the package: a solve.sh that does nothing earns 0."""

    name, reasons, needs, default, needs_model = ("do-nothing", ("hackable",), ("build",),
                                                  False, False)

    def trial_part(self, task, config):
        from taskloom.models import TaskFile
        from taskloom.sandbox.trial import Phase
        from taskloom.validators.protocol import TrialPart

        idle = (TaskFile(path="solve.sh", content=b"#!/bin/bash\nexit 0\n", mode=0o755),)
        return TrialPart(phases=(Phase(name="do-nothing", solution="do-nothing"),),
                         solutions={"do-nothing": idle})

    def check(self, evidence):
        from taskloom.models import Verdict

        (run,) = [p for p in evidence.trial.phases if p.name == "do-nothing"]
        return Verdict(check=self.name, passed=run.reward == 0,
                       reason=None if run.reward == 0 else "hackable",
                       details=f"an idle solve.sh earns {run.reward}")


def test_a_check_added_from_outside_runs_in_the_same_sandbox(tmp_path, validate):
    from taskloom.validators import registry

    registry.register(DoNothingEarnsZero(), before="leakage")
    try:
        good = validate(make_task(tmp_path, "good"), checks=("+do-nothing",))
        trivial = validate(make_task(tmp_path, "trivial", solve="#!/bin/bash\ntrue\n",
                                     test_py="def test_nothing():\n    pass\n"),
                           checks=("do-nothing",))
    finally:
        registry.unregister("do-nothing")
    assert good.accepted, failed(good)
    assert [v.check for v in good.verdicts] == ["structure", "build", "nop", "oracle",
                                                "tamper", "do-nothing", "leakage"]
    assert failed(trivial) == {"do-nothing": "hackable"}
