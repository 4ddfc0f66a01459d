"""Service tasks: a local HTTP or TCP service configured and started as its user on loopback.

The registry-wide sandbox validation runs nop, oracle, the alternative, the rule mutants and
the tamper probes; these check what it cannot see: that every fault occurs and the shipped
environment holds it, that the shipped server program answers what the generator expects
(run here for real, on loopback), that the instruction states how the service starts and
what it must do but not the hidden probes, and, in the sandbox, that forgeries (a fake
server answering anything, answers and logs written by hand, a server started by hand and
left running, a start script that passes another settings file or overwrites the stated one)
earn nothing while other right solutions (settings spaced otherwise, a start script that
waits for a background server) earn the reward.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.domains import DOMAINS
from taskloom.generators.procedural.primitives import SOURCES
from taskloom.generators.procedural.primitives.base import StepContext
from taskloom.generators.procedural.primitives.services import (
    Service,
    ServiceAnswers,
    _service,
    counts,
    ini_text,
    matching,
)
from taskloom.generators.procedural.world import World, lines_text
from taskloom.generators.protocols import DIMENSIONS, Difficulty
from taskloom.models import TaskFile
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()
SKILLS = {"http": "services.configure_http", "tcp": "services.configure_tcp"}


def difficulty(seed: int, steps: int = 1) -> Difficulty:
    level = seed % 3 + 1
    return Difficulty(**{**{name: level for name in DIMENSIONS}, "steps": steps})


def step_one(seed: int, protocol: str):
    """(world, result) of the step on a source of its own, as a task's first step."""
    rng = random.Random(seed)
    domain = DOMAINS[rng.choice(sorted(DOMAINS))]
    world = World(workdir=domain.root)

    def context(number: int) -> StepContext:
        return StepContext(rng=random.Random(seed * 7 + number), difficulty=difficulty(seed),
                           domain=domain, world=world, step=1, steps=1)

    kind = rng.choice(("text_file", "app_log", "access_log", "config_file"))
    source = SOURCES[kind](context(0))
    return world, _service(context(1), source, protocol), source


def answers_check(result) -> ServiceAnswers:
    return next(check for check in result.checks if isinstance(check, ServiceAnswers))


def results(protocol: str, count: int = 60):
    for seed in range(count):
        try:
            yield (seed, *step_one(seed, protocol))
        except NotApplicable:
            continue


def shipped_faults(world: World, result) -> set[str]:
    """What the shipped environment gets wrong, read from its files and folders."""
    check = answers_check(result)
    start = world.files.get(check.start)
    faults = set()
    if start is None:
        faults.add("start-missing")
    elif not start.mode & 0o001:
        faults.add("start-not-executable")
    config = next(path for path in world.files if path.endswith(".ini")
                  and path.startswith("/etc/") and check.user in path)
    if start is not None and config not in start.content.decode():
        faults.add("start-wrong-config")
    text = world.files[config].content.decode()
    if f"port = {check.port}\n" not in text:
        faults.add("port")
    if "bind = 0.0.0.0" in text:
        faults.add("bind")
    if f"file = {check.log}\n" not in text:
        faults.add("log-setting")
    if f"file = {check.data}\n" not in text:
        faults.add("data-setting")
    log_dir = check.log.rsplit("/", 1)[0]
    if log_dir not in world.dirs or world.dirs[log_dir][1] != check.user:
        faults.add("log-folder")
    return faults


@pytest.mark.parametrize("protocol", ["http", "tcp"])
def test_every_fault_occurs_and_the_service_never_works_as_shipped(protocol):
    seen = Counter()
    for _, world, result, _ in results(protocol):
        faults = shipped_faults(world, result)
        # The port is always wrong and the log folder never the user's: it cannot work.
        assert {"port", "log-folder"} <= faults
        seen.update(faults)
    assert set(seen) == {"start-missing", "start-not-executable", "start-wrong-config", "port",
                         "bind", "log-setting", "data-setting", "log-folder"}, seen


@pytest.mark.parametrize("protocol", ["http", "tcp"])
def test_the_instruction_states_the_start_and_the_goal_but_not_the_probes(protocol):
    for seed, _, result, source in results(protocol, 30):
        check = answers_check(result)
        text = result.instruction
        assert f"runuser -u {check.user} -- {check.start}" in text
        assert f"127.0.0.1 port {check.port}" in text and f"`{check.log}`" in text
        assert "world-writable" in text and "new content" in text
        hidden = check.requests[1][0].split("=")[-1].split()[-1]
        assert f"`{hidden}`" not in text and f"contains={hidden}`" not in text
        assert check.content != source.text().encode()
        assert (("what is wrong:" in text) == (seed % 3 == 0)), seed
        assert {rule.name for rule in result.rules} == {
            "service-runs", "loopback-only", "log-folder", "server-unchanged", "live-data",
            "settings-file", "start-reads-settings"}


def test_the_hidden_probe_answers_differ_on_the_shipped_data():
    """A service serving a stale copy of the data gives another answer to the checks."""
    for protocol in ("http", "tcp"):
        for _, _world, result, source in results(protocol, 30):
            check = answers_check(result)
            request, _, expected = check.requests[1]
            word = request.split("=")[-1].split()[-1]
            stale = (lines_text(matching(word, source.lines)) if protocol == "http"
                     else counts((word,), source.lines)[0])
            assert stale != expected


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def running(tmp_path, protocol: str, lines: list[str]):
    """The shipped server program, configured in tmp_path, started on a free port."""
    port = free_port()
    svc = Service(protocol=protocol, name="t-svc", user="nobody", version="1.2.3",
                  server=str(tmp_path / "server.py"), config=str(tmp_path / "t.ini"),
                  start="", log=str(tmp_path / "logs" / "t.log"), port=port,
                  health="/healthz", data=str(tmp_path / "data.txt"))
    (tmp_path / "logs").mkdir()
    (tmp_path / "server.py").write_text(svc.program("Org", "test"))
    (tmp_path / "t.ini").write_text(ini_text(svc.settings(), "test"))
    (tmp_path / "data.txt").write_text(lines_text(lines))
    process = subprocess.Popen([sys.executable, svc.server, "--config", svc.config],
                               stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, port


@pytest.mark.parametrize("seed", range(3))
def test_the_http_server_answers_what_the_generator_expects(tmp_path, seed):
    lines = ["alpha beta", "gamma ALPHA", "", "alphabet soup", "délta alpha"][seed:]
    process, port = running(tmp_path, "http", lines)
    try:
        def get(path):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read()

        assert get("/healthz") == (200, (json.dumps({"service": "t-svc", "status": "ok",
                                                     "version": "1.2.3"}) + "\n").encode())
        assert get("/lines?contains=alpha") == (
            200, lines_text(matching("alpha", lines)).encode())
        assert get("/nothing")[0] == 404
        (tmp_path / "data.txt").write_text("alpha again\n")  # read at every request
        assert get("/lines?contains=alpha") == (200, b"alpha again\n")
    finally:
        process.kill()
        process.wait()
    log = (tmp_path / "logs" / "t.log").read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in log] == [
        '"GET /healthz" 200', '"GET /lines?contains=alpha" 200', '"GET /nothing" 404',
        '"GET /lines?contains=alpha" 200']


def test_the_tcp_server_answers_what_the_generator_expects(tmp_path):
    lines = ["alpha beta", "gamma ALPHA", "", "alphabet soup", "délta alpha"]
    process, port = running(tmp_path, "tcp", lines)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            replies = client.makefile("rb")
            answers = []
            for command in ("PING", "COUNT alpha", "COUNT délta", "HELLO", "QUIT"):
                client.sendall(command.encode() + b"\n")
                answers.append(replies.readline().decode().rstrip("\n"))
    finally:
        process.kill()
        process.wait()
    assert answers == ["PONG t-svc 1.2.3", counts(("alpha",), lines)[0],
                       counts(("délta",), lines)[0], "ERR unknown command", "BYE"]
    log = (tmp_path / "logs" / "t.log").read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in log][-2:] == ['"HELLO" err', '"QUIT" ok']


def test_the_server_refuses_an_unwritable_log_and_a_missing_setting(tmp_path):
    svc = Service(protocol="http", name="t", user="nobody", version="1", server="",
                  config=str(tmp_path / "t.ini"), start="", log="/nonexistent/t.log",
                  port=free_port(), health="/h", data="/dev/null")
    server = tmp_path / "server.py"
    server.write_text(svc.program("Org", "test"))
    for text in (ini_text(svc.settings(), "x"), ini_text(svc.settings(), "x", ("data",))):
        (tmp_path / "t.ini").write_text(text)
        done = subprocess.run([sys.executable, str(server), "--config", svc.config],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 1 and done.stderr.startswith("t: "), done.stderr


def test_the_same_seed_gives_the_same_task():
    generator = ProceduralGenerator(GRAPH)
    for skill in SKILLS.values():
        blueprint = blueprint_for(GRAPH, (skill,), seed=5, difficulty=difficulty(5))
        first, second = (generator.generate(blueprint).task for _ in range(2))
        assert first.config.metadata["fingerprint"] == second.config.metadata["fingerprint"]


def test_a_requested_port_is_the_port():
    generator = ProceduralGenerator(GRAPH)
    blueprint = blueprint_for(GRAPH, ("services.configure_http",), seed=2,
                              difficulty=difficulty(2)).model_copy(update={"numbers": (8080,)})
    task = generator.generate(blueprint).task
    assert "127.0.0.1 port 8080 only" in task.instruction


@pytest.mark.parametrize(("request_text", "skill"), [
    ("start a health-check service on port 8080", "services.configure_http"),
    ("the tcp service won't start, fix its config and start script",
     "services.configure_tcp"),
])
def test_requests_reach_the_service_skills(request_text, skill):
    from taskloom.embedding import load_embedder
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.request import understand

    understood = understand(request_text, skill_graph(()), load_embedder())
    assert understood.skills[0].id == skill, understood.nearest
    assert understood.scenario.id in skill_graph(()).scenarios_of(skill)
    assert 8080 in understood.numbers or "8080" not in request_text


FORGERIES = {
    # A server of the agent's own that answers 200 and a health JSON to anything, with the
    # report copied from the data by grep and the config and folder set as asked.
    "fake-server": """
{setup}
cat > /usr/local/bin/start-{name} <<'EOF'
#!/usr/bin/python3
import http.server, json, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"service": "{name}", "status": "ok",
                            "version": "{version}"}}).encode() + b"\\n"
        open("{log}", "a").write('x 127.0.0.1 "GET %s" 200\\n' % self.path)
        self.send_response(200); self.end_headers(); self.wfile.write(body)
socketserver.TCPServer.allow_reuse_address = True
socketserver.TCPServer(("127.0.0.1", {port}), H).serve_forever()
EOF
chmod 755 /usr/local/bin/start-{name}
""",
    # Everything configured, but the start script only touches the log: the service is
    # started by hand and left running, with the answers saved.
    "left-running": """
{setup}
printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/start-{name}
chmod 755 /usr/local/bin/start-{name}
setsid runuser -u {name} -- python3 {server} --config {config} > /dev/null 2>&1 &
sleep 1
""",
    # The answers and log lines written by hand; the start script a no-op that keeps running.
    "written-by-hand": """
{setup}
printf '#!/bin/sh\\nexec sleep 30\\n' > /usr/local/bin/start-{name}
chmod 755 /usr/local/bin/start-{name}
for path in {paths}; do echo "x 127.0.0.1 \\"GET $path\\" 200" >> {log}; done
""",
    # The settings file set right (and the service user's, so that it may write it), but
    # the start script copies a fixed one over it before it starts the service: the service
    # does not follow what the file holds then.
    "rewrites-settings": """
{setup}
cp {config} /etc/.{name}.fixed.ini
chown {name} {config}
cat > /usr/local/bin/start-{name} <<'EOF'
#!/bin/sh
cat /etc/.{name}.fixed.ini > {config}
exec python3 {server} --config {config}
EOF
chmod 755 /usr/local/bin/start-{name}
""",
    # The settings file left as shipped, a right copy of it elsewhere that the start script
    # passes (found by a red team; also every task's `settings-file` rule mutant).
    "other-settings-file": """
{setup}
mv {config} /etc/.{name}.real.ini
cp {config}.shipped {config}
sed -i 's#--config {config}#--config /etc/.{name}.real.ini#' /usr/local/bin/start-{name}
""",
    # The log folder left open to anyone, and the start script (the service user's, who
    # owns the folder) closes it before the service starts: the check read it only after.
    "folder-mended-at-start": """
{setup}
sed -i '2i chmod 755 {log_dir}' /usr/local/bin/start-{name}
chmod 0777 {log_dir}
""",
}

# Other right solutions: each must earn the reward.
VARIANTS = {
    # The settings spaced and commented otherwise (as `sed -i` leaves them), and a start
    # script that keeps the server in the background and waits for it.
    "sed-and-wait": """
{setup}
sed -i -e 's/ = /=/' -e '1i ; edited with sed' {config}
cat > /usr/local/bin/start-{name} <<'EOF'
#!/usr/bin/env bash
cd /tmp
python3 {server} --config {config} &
wait
EOF
chmod 755 /usr/local/bin/start-{name}
""",
}


@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_forgeries_earn_nothing_and_the_reference_earns_the_reward(bwrap_runtime):
    """Each forgery, with the report and the config written right, earns reward 0.

    The reference and the right variants earn reward 1.
    """
    from taskloom.config import ValidationConfig
    from taskloom.sandbox.trial import Phase
    from taskloom.validators.engine import plan_trial
    from taskloom.validators.phases import phase_log
    from taskloom.validators.protocol import TrialPart

    generator = ProceduralGenerator(GRAPH)
    task = generator.generate(blueprint_for(GRAPH, ("services.configure_http",), seed=4,
                                            difficulty=difficulty(4))).task
    solve = task.file("solution", "solve.sh").content.decode()
    alternative = task.file("solution", "alternatives/other-tools.sh").content.decode()
    # The reference's config, log folder and start script (its lines after the header),
    # and the alternative's report (grep of the data): everything but a working service.
    setup = solve.split("runuser -u", 1)[0].split("\n", 4)[4]
    setup += next(line for line in alternative.splitlines() if line.startswith("LC_ALL=C"))
    program = next(f for f in task.environment if f.path.endswith("/server.py"))
    version = program.content.decode().split('SERVICE, VERSION = "', 1)[1].split('"')[2]
    values = {"name": task.instruction.split("runuser -u ", 1)[1].split(" ", 1)[0],
              "port": int(task.instruction.split("127.0.0.1 port ", 1)[1].split(" ", 1)[0]),
              "server": program.path.removeprefix("files"),
              "config": solve.split("cat > ", 1)[1].split(" ", 1)[0],
              "log": solve.split("[log]\nfile = ", 1)[1].split("\n", 1)[0],
              "version": version, "paths": "/healthz /lines /admin"}
    values["log_dir"] = values["log"].rsplit("/", 1)[0]
    # The settings file as shipped, kept aside before the setup overwrites it.
    setup = f"cp {values['config']} {values['config']}.shipped\n{setup}"
    scripts = {"reference": solve}
    for forgery, body in {**VARIANTS, **FORGERIES}.items():
        scripts[forgery] = "#!/bin/bash\nset -u\n" + body.format(setup=setup, **values)
    solutions = {key: (TaskFile(path="solve.sh", content=script.encode(), mode=0o755),)
                 for key, script in scripts.items()}
    part = TrialPart(phases=tuple(Phase(name=key, solution=key) for key in solutions),
                     solutions=solutions)
    plan, _ = plan_trial(task, ValidationConfig(), [part])
    phases = bwrap_runtime.run(plan).phases
    rewards = {key: phase.reward for key, phase in zip(solutions, phases, strict=True)}
    assert rewards == {"reference": 1, **dict.fromkeys(VARIANTS, 1),
                       **dict.fromkeys(FORGERIES, 0)}, \
        {key: phase_log(phase)[-1500:] for key, phase in zip(solutions, phases, strict=True)}
