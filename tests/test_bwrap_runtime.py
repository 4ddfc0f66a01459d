"""The bwrap runtime against the real bubblewrap, kernel overlays and cgroups: what the sandbox
isolates, that time limits kill whole process trees, and that nothing is left mounted,
running or in a cgroup afterwards (after a normal run, a close() mid-run, Ctrl-C, and a
killed process). Verdicts per reason code are in test_validation_docker.py (both runtimes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from taskfactory import make_task

import taskloom.sandbox.bwrap_runtime as bwrap_module
from taskloom.models import TaskFile
from taskloom.sandbox import bwrap_host, cgroups, mounts, rootfs, seccomp
from taskloom.sandbox.base_image import BASE_IMAGE, IMAGE_PATH
from taskloom.sandbox.bwrap_host import STATE_ROOT, process_name
from taskloom.sandbox.bwrap_runtime import BwrapRuntime
from taskloom.sandbox.policy import PIDS_LIMIT
from taskloom.sandbox.trial import EnvironmentSpec, Phase, SetupStep, TrialPlan

pytestmark = pytest.mark.bwrap
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


def probe_plan(test_sh: str, *, solve: str | None = None, memory_mb: int = 512,
               solution_timeout: float = 30.0, steps: tuple[SetupStep, ...] = (),
               build_timeout: float = 60.0, phases: int = 1) -> TrialPlan:
    """A trial whose tests are `test_sh` (its output lands in the phase's tests log)."""
    spec = EnvironmentSpec(image=BASE_IMAGE, memory_mb=memory_mb, steps=steps,
                           build_timeout_sec=build_timeout)
    solutions = {}
    if solve is not None:
        solutions["s"] = (TaskFile(path="solve.sh", content=solve.encode(), mode=0o755),)
    return TrialPlan(
        environment=spec, solutions=solutions,
        tests=(TaskFile(path="test.sh", content=test_sh.encode(), mode=0o755),),
        phases=tuple(Phase(name=f"p{i}", solution="s" if solve else None)
                     for i in range(phases)),
        solution_timeout=solution_timeout, tests_timeout=30.0)


def leftovers(owner: str, marker: str | None = None) -> list[str]:
    """Mounts, folders, cgroups and processes a runtime owned by `owner` left behind."""
    home = STATE_ROOT / owner
    found = [f"mount {p}" for p in mounts.mounts_below(home)]
    found += [f"folder {home}"] if home.exists() else []
    found += [f"cgroup {c}/{owner}" for c in cgroups.CONTROLLERS
              if (cgroups.CGROUP_ROOT / c / cgroups.PARENT / owner).exists()]
    if marker:
        found += [f"process {pid}" for pid in processes_with(marker)]
    return found


def sandboxes_of(runtime: BwrapRuntime) -> list[str]:
    """Trial folders, mounts and cgroups of a live runtime (none once a run is cleaned up)."""
    found = [str(p) for p in runtime.home.glob("trial-*")]
    found += [str(p) for p in mounts.mounts_below(runtime.home) if "trial-" in str(p)]
    for name in cgroups.CONTROLLERS:
        top = cgroups.CGROUP_ROOT / name / cgroups.PARENT / runtime.owner
        found += [str(p) for p in top.glob("*") if p.is_dir()]
    return found


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def phase_log(runtime: BwrapRuntime, plan: TrialPlan) -> str:
    result = runtime.run(plan)
    assert result.setup.ok, result.setup
    return result.phases[0].tests.log


def test_sandbox_isolation(bwrap_runtime):
    script = textwrap.dedent("""\
        #!/bin/bash
        echo "pid=$$ procs=$(ls /proc | grep -c '^[0-9]')"
        echo "host=$(hostname) net=$(ls /sys/class/net | tr '\\n' ,)"
        grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
        echo "cgroup=$(cut -d: -f3 /proc/self/cgroup | sort -u | tr '\\n' ,)"
        ( : >> /proc/sys/kernel/core_pattern ) 2>/dev/null && echo sysctl=writable || echo sysctl=ro
        unshare -U true 2>/dev/null && echo userns=yes || echo userns=no
        python3 -c 'import socket; socket.create_connection(("192.0.2.1", 80), 1)' \\
          2>&1 | tail -1
        python3 - <<'EOF'
        import socket
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
        socket.create_connection(server.getsockname(), 1); print("loopback=ok")
        EOF
        echo 0 > /logs/verifier/reward.txt
        """)
    log = phase_log(bwrap_runtime, probe_plan(script))
    kept = sum(1 << n for n in (0, 1, 3, 4, 5, 6, 7))  # CHOWN DAC_OVERRIDE FOWNER ... SETUID
    assert f"CapEff:\t{kept:016x}" in log, log
    assert "NoNewPrivs:\t1" in log
    assert "Seccomp:\t2" in log
    assert "host=sandbox net=lo," in log
    assert "cgroup=/," in log
    assert "sysctl=ro" in log and "userns=no" in log and "loopback=ok" in log
    assert "Network is unreachable" in log
    procs = int(log.split("procs=")[1].split()[0])
    assert procs <= 6, log  # the driver, bash, ls, grep: nothing of the host's


def test_memory_limit(bwrap_runtime):
    script = ("#!/bin/bash\npython3 -c 'x = bytearray(300 * 1024 * 1024)' 2>/dev/null\n"
              "echo \"hog=$?\"\necho 0 > /logs/verifier/reward.txt\n")
    log = phase_log(bwrap_runtime, probe_plan(script, memory_mb=128))
    assert "hog=137" in log, log  # SIGKILLed by the memory cgroup (no swap), not a MemoryError


def test_process_limit(bwrap_runtime):
    script = textwrap.dedent("""\
        #!/bin/bash
        python3 - <<'EOF'
        import os, time
        forked = 0
        try:
            while forked < 2000:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                forked += 1
        except OSError as exc:
            print("fork failed:", exc.strerror)
        print("forked", forked)
        EOF
        echo 0 > /logs/verifier/reward.txt
        """)
    log = phase_log(bwrap_runtime, probe_plan(script))
    assert "fork failed: Resource temporarily unavailable" in log, log
    assert int(log.split("forked ")[1].split()[0]) < PIDS_LIMIT


def test_each_command_reports_the_cpu_it_and_its_children_used(bwrap_runtime):
    """A solution that computes for ~0.4 s in a child it waits for, tests that sleep."""
    burn = textwrap.dedent("""\
        #!/bin/bash
        python3 -c 'import time
        end = time.process_time() + 0.4
        while time.process_time() < end: pass'
        """)
    result = bwrap_runtime.run(probe_plan("#!/bin/bash\nsleep 0.4\necho 1 > "
                                          "/logs/verifier/reward.txt\n", solve=burn))
    phase, = result.phases
    assert phase.solution.cpu_seconds >= 0.35, phase.solution
    assert phase.tests.seconds >= 0.4 and phase.tests.cpu_seconds < 0.2, phase.tests


def test_cgroup_limits_are_written():
    owner = f"{process_name(os.getpid())}-cgroup-test"  # alive: not pruned
    cgroup = cgroups.Cgroup(f"{owner}/limits")
    try:
        cgroup.create(memory_bytes=64 * 1024 * 1024, pids=77, cpus=0.5)
        memory, pids, cpu = cgroup.paths
        assert int((memory / "memory.limit_in_bytes").read_text()) == 64 * 1024 * 1024
        assert (pids / "pids.max").read_text().strip() == "77"
        assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "50000"
    finally:
        cgroup.remove()
        cgroups.remove_tree(owner)
    assert not any(path.exists() for path in cgroup.paths)


def test_timeout_kills_the_whole_tree(bwrap_runtime):
    marker = f"{time.time_ns() % 10**6}.5"
    solve = (f"#!/bin/bash\nsetsid nohup sleep {marker} >/dev/null 2>&1 &\n"
             f"(trap '' TERM; sleep {marker}) &\nsleep {marker}\n")
    started = time.monotonic()
    result = bwrap_runtime.run(probe_plan("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
                                          solve=solve, solution_timeout=2.0))
    assert result.phases[0].solution.timed_out
    assert time.monotonic() - started < 20
    assert processes_with(marker) == []
    deadline = time.monotonic() + 10  # folders and mounts are removed in the background
    while sandboxes_of(bwrap_runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandboxes_of(bwrap_runtime) == []


def test_host_deadline_kills_a_sandbox_that_overruns(monkeypatch, bwrap_rootfs):
    # The driver enforces every command's limit itself; the host's deadline is the backstop
    # for a driver that does not. Shrink the backstop below the solution's own limit.
    monkeypatch.setattr(bwrap_module, "SLACK_SEC", 1.0)
    monkeypatch.setattr(bwrap_module, "_phase_budget", lambda plan, phase: 0.0)
    marker = f"{time.time_ns() % 10**6}.25"
    with BwrapRuntime() as runtime:
        started = time.monotonic()
        result = runtime.run(probe_plan("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
                                        solve=f"#!/bin/bash\nsleep {marker}\n",
                                        solution_timeout=60.0, build_timeout=1.0))
        assert time.monotonic() - started < 15
        assert not result.setup.ok and result.setup.command.timed_out
        assert "deadline" in result.setup.log
        assert processes_with(marker) == []
        owner = runtime.owner
    assert leftovers(owner, marker) == []


def test_every_phase_gets_the_set_up_state_and_nothing_leaks_between(bwrap_runtime):
    steps = (SetupStep(op="run", argv=("/bin/sh", "-c", "echo setup > /srv/state; "
                                       "useradd -m alice")),)
    solve = ("#!/bin/bash\necho changed >> /srv/state\necho x >> /etc/debian_version\n"
             "touch /tmp/leftover; chown alice /srv/state\n")
    test = ("#!/bin/bash\necho \"state=$(cat /srv/state | tr '\\n' ,) "
            "owner=$(stat -c %U /srv/state) tmp=$(ls /tmp)\"\n"
            "echo 0 > /logs/verifier/reward.txt\n")
    for strict in (False, True):
        plan = probe_plan(test, solve=solve, steps=steps, phases=3)
        if strict:  # the layered path: a new sandbox per phase on the set-up layer
            plan = plan.model_copy(update={"environment": plan.environment.model_copy(
                update={"build": True, "steps": (), "context": (TaskFile(
                    path="Dockerfile", content=(
                        f"FROM {BASE_IMAGE}\nRUN echo setup > /srv/state && useradd -m alice\n"
                    ).encode()),)})})
        result = bwrap_runtime.run(plan)
        logs = [phase.tests.log for phase in result.phases]
        assert logs == ["state=setup,changed, owner=alice tmp=leftover\n"] * 3, (strict, logs)


def test_close_mid_run_stops_everything(bwrap_rootfs):
    marker = f"{time.time_ns() % 10**6}.75"
    runtime = BwrapRuntime()
    errors = []

    def run():
        try:
            runtime.run(probe_plan("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
                                   solve=f"#!/bin/bash\nsleep {marker}\n"))
        except Exception as exc:  # the runtime says it was closed
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker), "the sandbox never started"
    runtime.close()
    worker.join(20)
    assert not worker.is_alive()
    assert errors and "closed" in str(errors[0])
    assert leftovers(runtime.owner, marker) == []


CHILD = """
import sys
from taskloom.sandbox.bwrap_runtime import BwrapRuntime
from taskloom.sandbox.trial import TrialPlan
runtime = BwrapRuntime()
print(runtime.owner, flush=True)
runtime.run(TrialPlan.model_validate_json(sys.stdin.read()))
"""


def test_leftovers_of_a_killed_process_are_removed_by_the_next_runtime(bwrap_rootfs):
    marker = f"{time.time_ns() % 10**6}.125"
    plan = probe_plan("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
                      solve=f"#!/bin/bash\nsleep {marker}\n")
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    child.stdin.write(plan.model_dump_json())
    child.stdin.close()
    owner = child.stdout.readline().strip()
    deadline = time.monotonic() + 20
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker), "the sandbox never started"
    child.kill()  # SIGKILL: no finally, no close()
    child.wait()
    left = leftovers(owner)
    assert any(item.startswith("mount") for item in left), left
    assert any(item.startswith("cgroup") for item in left), left
    assert bwrap_host.prune_stale() >= 1
    time.sleep(0.2)
    assert leftovers(owner, marker) == []


def test_ctrl_c_leaves_nothing_behind(tmp_path, bwrap_rootfs):
    marker = f"{time.time_ns() % 10**6}.0625"
    for i in range(3):
        make_task(tmp_path / "set", f"hang-{i}", solve=f"#!/bin/bash\nsleep {marker}\n",
                  agent_timeout=300.0)
    process = subprocess.Popen([*TASKLOOM, "validate", str(tmp_path / "set"), "-w", "2",
                                "--runtime", "bwrap", "--report", str(tmp_path / "r.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(processes_with(marker)) >= 2, "validation never started its sandboxes"
    owners = [p.name for p in STATE_ROOT.iterdir() if p.name.startswith(f"{process.pid}-")]
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert owners and all(leftovers(owner, marker) == [] for owner in owners)


def test_validate_cli_on_bwrap(tmp_path, bwrap_rootfs):
    make_task(tmp_path / "set", "good")
    make_task(tmp_path / "set", "wrong", solve="#!/bin/bash\ntrue\n")
    report = tmp_path / "report.json"
    done = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "set"), "--runtime", "bwrap",
                           "--report", str(report)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "1 accepted, 1 rejected of 2" in done.stdout
    reasons = json.loads(report.read_text())["summary"]["reasons"]
    assert reasons == {"oracle-fails": 1}


def test_unknown_runtime_is_a_clear_error(tmp_path):
    done = subprocess.run([*TASKLOOM, "validate", str(make_task(tmp_path, "t")), "--runtime",
                           "podman"], capture_output=True, text=True)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "Invalid value for '--runtime'" in said and "'podman' is not one of" in said


@pytest.mark.parametrize(("dockerfile", "why"), [
    ("FROM {image} AS base\nRUN true\n", "multi-stage"),
    ("FROM debian:bookworm\nRUN true\n", "FROM debian:bookworm"),
])
def test_strict_mode_that_needs_docker_is_a_build_verdict(tmp_path, bwrap_runtime,
                                                          dockerfile, why):
    from taskloom.config import ValidationConfig
    from taskloom.validators.engine import validate_folder

    folder = make_task(tmp_path, "needs-docker",
                       dockerfile=dockerfile.format(image=BASE_IMAGE))
    report = validate_folder(folder, bwrap_runtime, ValidationConfig(mode="strict"))
    build = next(v for v in report.verdicts if v.check == "build")
    assert not build.passed
    assert why in build.log and "--runtime docker" in build.log


def test_doctor_reports_both_runtimes(bwrap_rootfs):
    done = subprocess.run([*TASKLOOM, "doctor"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "250"})
    lines = {line.split("│")[1].strip(): line for line in done.stdout.splitlines()
             if line.count("│") > 2}
    assert "ok" in lines["runtime: docker"] and "ok" in lines["runtime: bwrap"]
    assert "bubblewrap 0.8" in lines["runtime: bwrap"]


def test_doctor_says_how_to_export_a_missing_root_filesystem(tmp_path):
    reasons = bwrap_host.unavailable_reasons(tmp_path)
    assert [reason for reason, _ in reasons] == [
        f"the root filesystem of {BASE_IMAGE} is not exported yet"]
    assert "taskloom base-image export" in reasons[0][1]


def test_rootfs_export_from_docker(tmp_path):
    from taskloom.sandbox.docker_runtime import docker_client

    found = rootfs.export_from_docker(docker_client(), root=tmp_path, log=lambda line: None)
    assert found == rootfs.find(root=tmp_path)
    assert (found.path / "usr/bin/python3").exists()
    assert not (found.path / ".dockerenv").exists()
    assert "localhost" in (found.path / "etc/hosts").read_text()
    assert found.env["PATH"] == IMAGE_PATH  # the image's own, system folders first
    name = rootfs.folder_name(BASE_IMAGE)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, f"{name}.json"]


def test_seccomp_program_is_well_formed():
    program = seccomp.program()
    assert program is not None and len(program) % 8 == 0
    assert len(program) // 8 == 6 + len(seccomp.DENIED) + 7


def test_layered_runtime_gives_every_phase_a_new_sandbox(tmp_path, bwrap_rootfs):
    from taskloom.config import ValidationConfig
    from taskloom.validators.engine import plan_trial, validate_task
    from taskloom.validators.structure import load_task

    task, _ = load_task(make_task(tmp_path, "good"))
    with BwrapRuntime(layered=True) as runtime:
        result = runtime.run(plan_trial(task, ValidationConfig())[0])
        # nop, oracle x 2, the combined tamper probe: each in a sandbox of its own.
        assert result.sandboxes == 1 + 4 and [p.reward for p in result.phases] == [0, 1, 1, 0]
        assert validate_task(task, runtime, ValidationConfig()).accepted
