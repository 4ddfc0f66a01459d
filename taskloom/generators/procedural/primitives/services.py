"""Service primitives: configure a small local service on loopback and start it as its user.

A stdlib python3 service ships at /opt/DOMAIN/NAME/server.py, its docstring listing its
settings (an INI file: address and port, health path, data file, log file). It is an HTTP
service (GET of the health path answers a JSON status, `GET /lines?contains=WORD` the lines
of its data file holding WORD) or a TCP line service (`PING` answers `PONG NAME VERSION`,
`COUNT WORD` answers `WORD N`). As shipped it does not work: settings are wrong or missing
(the port, an address other than loopback, the health path, the data file, a log location
its user cannot write), its start script is missing or broken, its log folder missing or
not its user's. The input file is the service's data; the step's output is what the
service answers for the instruction's words, saved to a report.

A correct solution is a configuration, not a running process: the verifier ends whatever
the agent left running. So `ServiceAnswers` reads the stated settings file (its port must be
the stated one), gives it another free port and the data file new content, starts the
service itself with the stated command (as its user, no new privileges, a minimal
environment), waits for it to listen on that new port, checks that it listens on 127.0.0.1
only, talks to it (health, the data on hidden words, an unknown request), reads the new
lines of its log, checks the log folder's owner and mode, then kills every process of the
service's user and puts the settings and data files back. A report written by hand, a
service that serves a copy of the data, listens on every address, logs into a
world-writable folder, or runs with another settings file than the stated one (the stated
file left wrong, or right but not read), fails it.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import ClassVar

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Report, TextFile
from taskloom.generators.procedural.checks import Assertion, FileDigests, FileText
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    exercised,
    primitive,
    stored_input,
)
from taskloom.generators.procedural.world import lines_text, q

TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
SERVICE_PATH = "/usr/bin:/bin"  # the PATH the checks start the service with
HEALTH_PATHS = ("/healthz", "/health", "/status", "/ping", "/-/health", "/api/health")
PORTS = (8080, 8000, 8081, 8088, 8888, 9000, 9090, 5000, 7070, 3000)
WAIT = 10  # seconds the checks wait for the service to listen

HTTP_SERVER = '''#!/usr/bin/env python3
"""NAME: the ORG WHAT service (HTTP, Python standard library only).

Usage: server.py --config FILE

It runs in the foreground until it is stopped, and reads its settings from an INI file
(every setting is required):

    [server]
    bind = ADDRESS    the address to listen on (127.0.0.1: loopback only)
    port = PORT       the TCP port
    [health]
    path = /PATH      GET /PATH answers 200 and a JSON status
    [data]
    file = FILE       GET /lines?contains=WORD answers the lines of FILE that contain WORD
                      (case-sensitive; FILE is read at every request)
    [log]
    file = FILE       one line is appended per request; the file is opened at start, so
                      its folder must exist and be writable by the user the service runs as
"""

import configparser
import json
import socketserver
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVICE, VERSION = "NAME", "VERSION"


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):  # no name lookup of the address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--config":
        sys.exit("usage: server.py --config FILE")
    config = configparser.ConfigParser(interpolation=None)
    try:
        if not config.read(sys.argv[2], encoding="utf-8"):
            sys.exit(f"{SERVICE}: cannot read {sys.argv[2]}")
        bind, port = config.get("server", "bind"), config.getint("server", "port")
        health, data = config.get("health", "path"), config.get("data", "file")
        log = open(config.get("log", "file"), "a", encoding="utf-8", buffering=1)
    except (configparser.Error, ValueError, OSError) as error:
        sys.exit(f"{SERVICE}: {error}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            kind, body = "text/plain; charset=utf-8", b""
            if url.path == health:
                status, kind = 200, "application/json"
                body = (json.dumps({"service": SERVICE, "status": "ok",
                                    "version": VERSION}) + "\\n").encode()
            elif url.path == "/lines":
                word = urllib.parse.parse_qs(url.query).get("contains", [""])[0].encode()
                try:
                    with open(data, "rb") as handle:
                        text = handle.read()
                except OSError:
                    status, body = 500, b"cannot read the data file\\n"
                else:
                    lines = text.split(b"\\n")
                    if lines[-1] == b"":
                        lines.pop()
                    status = 200 if word else 400
                    body = b"".join(line + b"\\n" for line in lines if word and word in line)
            else:
                status, body = 404, b"not found\\n"
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            log.write(f'{stamp} {self.client_address[0]} "GET {self.path}" {status}\\n')
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # requests go to the log file instead
            pass

    try:
        server = Server((bind, port), Handler)
    except OSError as error:
        sys.exit(f"{SERVICE}: cannot listen on {bind}:{port}: {error}")
    print(f"{SERVICE} {VERSION}: listening on {bind}:{port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
'''

TCP_SERVER = '''#!/usr/bin/env python3
"""NAME: the ORG WHAT service (a TCP line protocol, Python standard library only).

Usage: server.py --config FILE

Clients send one command per line and get one line back:

    PING          PONG NAME VERSION (the health check)
    COUNT WORD    WORD N: N lines of the data file contain WORD (case-sensitive)
    QUIT          BYE, and the connection closes

It runs in the foreground until it is stopped, and reads its settings from an INI file
(every setting is required):

    [server]
    bind = ADDRESS    the address to listen on (127.0.0.1: loopback only)
    port = PORT       the TCP port
    [data]
    file = FILE       the data file COUNT reads (at every command)
    [log]
    file = FILE       one line is appended per command; the file is opened at start, so
                      its folder must exist and be writable by the user the service runs as
"""

import configparser
import socketserver
import sys
import time

SERVICE, VERSION = "NAME", "VERSION"


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--config":
        sys.exit("usage: server.py --config FILE")
    config = configparser.ConfigParser(interpolation=None)
    try:
        if not config.read(sys.argv[2], encoding="utf-8"):
            sys.exit(f"{SERVICE}: cannot read {sys.argv[2]}")
        bind, port = config.get("server", "bind"), config.getint("server", "port")
        data = config.get("data", "file")
        log = open(config.get("log", "file"), "a", encoding="utf-8", buffering=1)
    except (configparser.Error, ValueError, OSError) as error:
        sys.exit(f"{SERVICE}: {error}")

    def answer(command):
        verb, _, word = command.partition(" ")
        if verb == "PING":
            return f"PONG {SERVICE} {VERSION}", "ok"
        if verb == "COUNT" and word:
            try:
                with open(data, "rb") as handle:
                    text = handle.read()
            except OSError:
                return "ERR cannot read the data file", "err"
            lines = text.split(b"\\n")
            if lines[-1] == b"":
                lines.pop()
            count = sum(word.encode() in line for line in lines)
            return f"{word} {count}", "ok"
        if verb == "QUIT":
            return "BYE", "ok"
        return "ERR unknown command", "err"

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for raw in self.rfile:
                command = raw.decode("utf-8", "replace").strip()
                if not command:
                    continue
                reply, status = answer(command)
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                log.write(f'{stamp} {self.client_address[0]} "{command}" {status}\\n')
                self.wfile.write((reply + "\\n").encode())
                if command == "QUIT":
                    return

    try:
        server = Server((bind, port), Handler)
    except OSError as error:
        sys.exit(f"{SERVICE}: cannot listen on {bind}:{port}: {error}")
    print(f"{SERVICE} {VERSION}: listening on {bind}:{port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
'''


@dataclass
class Service:
    """Where a service's parts are, and what it must be configured to."""

    protocol: str  # "http" or "tcp"
    name: str
    user: str
    version: str
    server: str
    config: str
    start: str
    log: str
    port: int
    health: str  # the health path (HTTP)
    data: str  # the data file: the step's input

    @property
    def log_dir(self) -> str:
        """The folder of the log file."""
        return posixpath.dirname(self.log)

    def settings(self, **changed: str) -> dict[str, dict[str, str]]:
        """The INI settings the service must have (sections of keys), some changed."""
        values = {"bind": "127.0.0.1", "port": str(self.port), "health": self.health,
                  "data": self.data, "log": self.log, **changed}
        sections = {"server": {"bind": values["bind"], "port": values["port"]}}
        if self.protocol == "http":
            sections["health"] = {"path": values["health"]}
        sections["data"] = {"file": values["data"]}
        sections["log"] = {"file": values["log"]}
        return sections

    def program(self, org: str, what: str) -> str:
        """server.py's text."""
        text = HTTP_SERVER if self.protocol == "http" else TCP_SERVER
        return (text.replace("NAME", self.name).replace("ORG", org).replace("WHAT", what)
                .replace('"VERSION"', json.dumps(self.version)))


def ini_text(sections: dict[str, dict[str, str]], header: str,
             dropped: tuple[str, ...] = ()) -> str:
    """An INI file of these sections (leaving out the sections in `dropped`)."""
    lines = [f"# {header}"]
    for section, keys in sections.items():
        if section in dropped:
            continue
        lines += ["", f"[{section}]", *(f"{key} = {value}" for key, value in keys.items())]
    return lines_text(lines)


def matching(word: str, lines: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The lines holding `word`, as the HTTP service answers them."""
    return tuple(line for line in lines if word in line)


def counts(words: tuple[str, ...], lines: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """`WORD N` per word, as the TCP service answers COUNT."""
    return tuple(f"{word} {len(matching(word, lines))}" for word in words)


@dataclass(frozen=True)
class ServiceAnswers(Assertion):
    """The service, started as its user with the stated command, answers on loopback.

    The settings file `config` must set `[server] port` to `port` (read as server.py reads
    it, with configparser). The check then gives that setting another free port (the file
    rewritten in place by configparser), so only a start that reads that very file finds
    the port it probes: a start script passing another settings file listens elsewhere.
    The data file is replaced (a new file renamed over it, same owner and mode) by
    `content`; the start command runs as `user` with no new privileges from / with a
    minimal environment; once the new port listens, every listening socket on it must be
    bound to 127.0.0.1 (a socket of the user on another port fails at once). Then each
    request gets its expected answer, each leaves a line in the log file, and the log
    folder belongs to the user and is not world-writable, as handed over (when it was there)
    and after the start (the start could mend it). At the end every process of the
    user is killed and the settings and data files get their bytes back.
    """

    protocol: str = "http"
    start: str = ""
    user: str = ""
    port: int = 0  # the port the settings file must name (the check then moves it)
    config: str = ""  # the settings file the start script must run server.py with
    data: str = ""
    content: bytes = b""
    log: str = ""
    executes: ClassVar[bool] = True  # the start command and the service
    # (request, expected status, expected body): HTTP requests are GET paths, the body
    # compared as bytes (a JSON body as parsed); TCP requests are command lines, the reply
    # line compared as text, the status the one the log shows.
    requests: tuple[tuple[str, str, str], ...] = ()
    health: str = ""  # the HTTP health path, whose body is compared as JSON

    def body(self) -> list[str]:
        """Swap the data, start, wait, talk, read the log, stop everything, restore."""
        return [
            "import configparser, io, signal, socket, time",
            f"user, start, stated = {self.user!r}, {self.start!r}, {self.port!r}",
            "entry, uid, gid, groups = _as_account(user)",
            f"config, data, log = Path({self.config!r}), Path({self.data!r}), "
            f"Path({self.log!r})",
            "assert data.is_file() and not data.is_symlink(), f'{data} is gone'",
            "assert config.is_file(), f'there is no settings file {config}'",
            "settings = configparser.ConfigParser(interpolation=None)",
            "settings.read(config, encoding='utf-8')",
            "value = settings.get('server', 'port', fallback=None)",
            "assert value is not None and value.isdigit() and int(value) == stated, "
            "f'{config} sets [server] port to {value!r}, not {stated}'",
            "def sockets():",
            "    found = []",
            "    for table in ('/proc/net/tcp', '/proc/net/tcp6'):",
            "        try:",
            "            rows = Path(table).read_text().splitlines()[1:]",
            "        except OSError:",
            "            continue",
            "        for row in rows:",
            "            fields = row.split()",
            "            address, _, number = fields[1].rpartition(':')",
            "            if fields[3] == '0A':",
            "                found.append((address, int(number, 16), int(fields[7])))",
            "    return found",
            "def listening():",
            "    return [address for address, number, _ in sockets() if number == port]",
            "def elsewhere():",
            "    return sorted({number for _, number, owner in sockets() "
            "if owner == uid and number != port})",
            "def free():",
            "    while True:",
            "        with socket.socket() as probe:",
            "            probe.bind(('127.0.0.1', 0))",
            "            number = probe.getsockname()[1]",
            "        if number != stated and all(n != number for _, n, _ in sockets()):",
            "            return number",
            "port = free()",
            "settings.set('server', 'port', str(port))",
            "moved = io.StringIO()",
            "settings.write(moved)",
            "def processes():",
            "    found = []",
            "    for name in os.listdir('/proc'):",
            "        try:",
            "            status = Path('/proc', name, 'status').read_text()",
            "        except OSError:",
            "            continue",
            "        fields = dict(line.split(':', 1) for line in status.splitlines() "
            "if ':' in line)",
            "        if fields.get('State', '').split()[:1] == ['Z']:",
            "            continue",
            "        if name.isdigit() and uid in {int(n) for n in fields.get('Uid', '').split()}:",
            "            found.append(int(name))",
            "    return found",
            "def stop():",
            "    for _ in range(100):",
            "        child = os.fork()",
            "        if child == 0:",
            "            try:",
            "                os.setgroups([])",
            "                os.setgid(gid)",
            "                os.setuid(uid)",
            "                os.kill(-1, signal.SIGKILL)",
            "            finally:",
            "                os._exit(0)",
            "        os.waitpid(child, 0)",
            "        if process is not None:",
            "            process.poll()",
            "        if not processes():",
            "            return",
            "        time.sleep(0.02)",
            "    raise AssertionError(f'processes of {user} keep running: {processes()}')",
            "kept, times = _stamp(data)",
            "config_kept, config_times = _stamp(config)",
            "before = log.read_bytes() if log.is_file() else b''",
            "# The folder as handed over, too: the start (the agent's code) could mend it.",
            "handed = [os.stat(log.parent)] if log.parent.is_dir() else []",
            "assert not [n for _, n, _ in sockets() if n in (stated, port)], "
            "f'something listens on port {stated} before the start'",
            "home = entry[5] if os.path.isdir(entry[5]) else '/'",
            f"env = {{'PATH': {SERVICE_PATH!r}, 'HOME': home, 'LOGNAME': user, "
            "'USER': user, 'SHELL': '/bin/sh'}",
            "errors = tempfile.TemporaryFile()",
            "process, answers, swapped, rewritten = None, [], False, False",
            "def said():",
            "    errors.seek(0)",
            "    return errors.read().decode('utf-8', 'replace')[-1500:]",
            "try:",
            f"    _swap(data, {self.content!r})",
            "    swapped = True",
            "    rewritten = True",
            "    config.write_text(moved.getvalue(), encoding='utf-8')  # in place: same file",
            "    process = subprocess.Popen([start], stdin=subprocess.DEVNULL, stdout=errors, "
            "stderr=errors, env=env, cwd='/', user=uid, group=gid, extra_groups=groups, "
            "preexec_fn=_no_new_privileges, start_new_session=True)",
            f"    deadline = time.monotonic() + {WAIT}",
            "    while not listening():",
            "        code = process.poll()",
            "        assert code in (None, 0), f'{start} exits with {code}: {said()}'",
            "        assert not elsewhere(), f'{user} listens on port(s) {elsewhere()}, not on "
            "the port {port} that {config} names when the service starts'",
            "        assert time.monotonic() < deadline, "
            f"f'nothing listens on port {{port}} (the port {{config}} names when the service "
            f"starts) {WAIT} s after the start: {{said()}}'",
            "        time.sleep(0.05)",
            "    addresses = sorted(set(listening()))",
            "    assert addresses == ['0100007F'], "
            "f'port {port} listens on {addresses} (hex), not on 127.0.0.1 alone'",
            *self._talk(),
            "finally:",
            "    stop()",
            "    if process is not None:",
            "        process.wait(timeout=10)",
            "    if swapped:",
            "        _swap(data, kept, times)",
            "    if rewritten:",
            "        config.write_bytes(config_kept)",
            "        os.utime(config, ns=config_times)",
            f"for (request, status, expected), answer in zip({list(self.requests)!r}, "
            "answers, strict=True):",
            *self._compare(),
            "after = log.read_bytes() if log.is_file() else b''",
            "assert log.is_file(), f'the service wrote no log {log}'",
            "new = after[len(before):] if after.startswith(before) else after",
            "lines = new.decode('utf-8', 'replace').splitlines()",
            f"for request, status, _ in {list(self.requests)!r}:",
            *self._logged(),
            "for folder in (*handed, os.stat(log.parent)):",
            "    assert folder.st_uid == uid and folder.st_gid == gid, "
            "f'{log.parent} does not belong to {user}:{user}'",
            "    assert not folder.st_mode & 0o002, f'{log.parent} is world-writable'",
        ]

    def _talk(self) -> list[str]:
        if self.protocol == "http":
            return [
                "    import http.client",
                f"    for request, _, _ in {list(self.requests)!r}:",
                "        connection = http.client.HTTPConnection('127.0.0.1', port, timeout=10)",
                "        connection.request('GET', request)",
                "        response = connection.getresponse()",
                "        answers.append((str(response.status), response.read()))",
                "        connection.close()"]
        return [
            "    with socket.create_connection(('127.0.0.1', port), timeout=10) as client:",
            "        replies = client.makefile('rb')",
            f"        for request, _, _ in {list(self.requests)!r}:",
            "            client.sendall(request.encode() + b'\\n')",
            "            line = replies.readline().decode('utf-8', 'replace')",
            "            answers.append(line.rstrip('\\r\\n'))"]

    def _compare(self) -> list[str]:
        if self.protocol == "http":
            return [
                "    got, content = answer",
                "    assert got == status, f'GET {request} answers {got}, not {status}'",
                f"    if request == {self.health!r}:",
                "        assert json.loads(content) == json.loads(expected), (request, content)",
                "    elif status == '200':",
                "        assert content == expected.encode(), (request, content[:500])"]
        return ["    assert answer == expected, (request, answer)"]

    def _logged(self) -> list[str]:
        if self.protocol == "http":
            return ["    mark = f'\"GET {request}\" {status}'",
                    "    assert any(line.endswith(mark) for line in lines), "
                    "f'no line of the log {log} ends with {mark}'"]
        return ["    mark = f'\"{request}\" {status}'",
                "    assert any(line.endswith(mark) for line in lines), "
                "f'no line of the log {log} ends with {mark}'"]

    def reads(self) -> tuple[str, ...]:
        """The start script, settings, data and log files (the instruction names them)."""
        return (self.start, self.config, self.data, self.log)

    @property
    def portable(self) -> bool:
        """It runs the service with the system's accounts and files: no separate verifier."""
        return False


def _tokens(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Words some lines hold and some do not."""
    text = [line for line in lines if line.strip()]
    found = sorted({token for line in text for token in TOKEN.findall(line)})
    return [token for token in found if 0 < len(matching(token, text)) < len(text)]


def _other_content(ctx: StepContext, lines: tuple[str, ...], word: str) -> list[str]:
    """Other data lines (a sample, some repeated) on which the answer for `word` changes."""
    holding = list(matching(word, lines))
    for _ in range(30):
        other = [line for line in lines if ctx.rng.random() < 0.7]
        other += ctx.rng.choices(holding, k=ctx.rng.randint(1, 4))
        ctx.rng.shuffle(other)
        if len(matching(word, other)) != len(matching(word, lines)):
            return other
    raise NotApplicable("no other content changes the service's answer")


def _faults(ctx: StepContext, svc: Service, dom: str) -> tuple[dict[str, str], tuple[str, ...],
                                                                  str, list[str]]:
    """What is wrong as shipped: changed settings, dropped sections, start script state.

    Returns (changed settings, dropped sections, start script state, hints).
    """
    rng = ctx.rng
    changed: dict[str, str] = {}
    hints = []
    others = [p for p in PORTS if p != svc.port] + [rng.randint(8100, 8999)]
    changed["port"] = str(rng.choice([p for p in others if p != svc.port]))
    hints.append("the port is wrong")
    if rng.random() < 0.5:
        changed["bind"] = "0.0.0.0"
        hints.append("it listens on every address")
    if svc.protocol == "http" and rng.random() < 0.5:
        changed["health"] = rng.choice([p for p in HEALTH_PATHS if p != svc.health])
        hints.append("the health path is wrong")
    if rng.random() < 0.5:
        changed["data"] = f"/srv/{dom}/old/{posixpath.basename(svc.data)}"
        hints.append("the data file setting names an old path")
    log_fault = rng.choice(("elsewhere", "missing-dir", "root-dir"))
    if log_fault == "elsewhere":
        changed["log"] = rng.choice((f"/var/log/{svc.name}.log", f"/tmp/{svc.name}/requests.log"))
        hints.append("the log setting names another place")
    hints.append("the log folder is missing or not the service user's")
    dropped: tuple[str, ...] = ()
    if rng.random() < 0.25:
        dropped = (rng.choice(("log", "data")),)
        hints.append(f"the [{dropped[0]}] section is missing")
    start = rng.choice(("missing", "missing", "not-executable", "wrong-config"))
    hints.append({"missing": "the start script is missing",
                  "not-executable": "the start script is not executable",
                  "wrong-config": "the start script names another config file"}[start])
    if log_fault == "root-dir":
        ctx.world.mkdir(svc.log_dir, mode=0o755)
    return changed, dropped, start, hints


def _service(ctx: StepContext, source, protocol: str) -> StepResult:
    """The step for either protocol."""
    if not isinstance(source, TextFile) or not source.lines:
        raise NotApplicable("needs a text file with known lines")
    lines = source.lines
    if any("\r" in line for line in lines):
        raise NotApplicable("the data lines hold carriage returns")
    tokens = _tokens(lines)
    if len(tokens) < 3:
        raise NotApplicable("fewer than three words occur in only some lines")
    rng = ctx.rng
    dom = ctx.domain.name
    stem = rng.choice(("lookup", "search", "index", "query") if protocol == "http"
                      else ("count", "tally", "wordcount", "linecount"))
    name = f"{dom}-{stem}"
    user = name
    if ctx.world.exists(f"/opt/{dom}/{name}") or user in ctx.world.users:
        raise NotApplicable("a service of that name is already there")
    # The port the request named (an unprivileged one), else 0 and one of the usual ports.
    port = ctx.pick_number(0, 0, allowed=(1024, 65535)) or rng.choice(PORTS)
    svc = Service(protocol=protocol, name=name, user=user,
                  version=f"{rng.randint(1, 4)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}",
                  server=f"/opt/{dom}/{name}/server.py", config=f"/etc/{dom}/{name}.ini",
                  start=f"/usr/local/bin/start-{name}",
                  log=f"/var/log/{name}/" + rng.choice(("access.log", "requests.log",
                                                        f"{name}.log")),
                  port=port, health=rng.choice(HEALTH_PATHS), data=source.path)
    what = "line lookup" if protocol == "http" else "line count"
    world = ctx.world
    spec = world.files.get(svc.data)
    if spec is not None and spec.mode & 0o044 != 0o044:  # the service user reads it
        world.add(svc.data, spec.content, mode=spec.mode | 0o444, owner=spec.owner,
                  group=spec.group, mtime=spec.mtime)
    world.add_user(user)
    world.add(svc.server, svc.program(ctx.domain.org, what), mode=0o755)
    changed, dropped, start_state, hints = _faults(ctx, svc, dom)
    header = f"{ctx.domain.org}: settings of the {what} service {name}"
    world.add(svc.config, ini_text(svc.settings(**changed), header, dropped))
    if ctx.difficulty.noise >= 2:  # an older copy of the settings, wrong in other ways
        old = {"port": str(rng.choice([p for p in PORTS if p != port])), "bind": "0.0.0.0",
               "log": f"/var/log/{name}.log"}
        world.add(f"{svc.config}.orig", ini_text(svc.settings(**old), f"{header} (before "
                                                 "the move)"))
    if ctx.difficulty.noise >= 3:  # a rotated log of the old host, and its old start script
        world.add(f"/var/log/{name}.log.1", lines_text(
            f"2025-11-2{n}T0{n}:00:00Z 10.0.0.{n} \"GET {svc.health}\" 200" for n in range(4)))
        world.add(f"/opt/{dom}/{name}/start.sh.old", lines_text(
            ["#!/bin/sh", f"cd /opt/{dom}/{name} && python3 server.py --config old.ini &"]),
            mode=0o644)
    if start_state != "missing":
        config = svc.config if start_state == "not-executable" else \
            f"/etc/{dom}/{name}.conf"
        world.add(svc.start, lines_text(["#!/bin/sh", f"# Start {name} in the foreground.",
                                         f"exec python3 {q(svc.server)} --config {q(config)}"]),
                  mode=0o644 if start_state == "not-executable" else 0o755)

    # What the checks ask, on new data content; what the report holds, on today's.
    hidden = rng.choice(tokens)
    other = _other_content(ctx, lines, hidden)
    content = lines_text(other).encode()
    compare = ctx.compare(order_matters=True)
    if protocol == "http":
        word = rng.choice([t for t in tokens if t != hidden])
        expected = matching(word, lines)
        missing = f"/{rng.choice(('admin', 'metrics', 'debug', 'index.html', 'v1'))}"
        requests = ((svc.health, "200", json.dumps({"service": name, "status": "ok",
                                                      "version": svc.version})),
                    (f"/lines?contains={hidden}", "200", lines_text(matching(hidden, other))),
                    (missing, "404", ""))
        asks = (f"answer GET {svc.health} with its health status (HTTP 200), answer "
                "`GET /lines?contains=WORD` with the lines of the data file that contain WORD")
        report_words = (f"the body of its answer to `GET /lines?contains={word}` (the lines "
                        f"of the data that contain `{word}`)")
        phrase = f"the lines of the service's data holding `{word}` ({{path}})"
    else:
        words = tuple(rng.sample([t for t in tokens if t != hidden],
                                 min(len(tokens) - 1, ctx.count((2, 2), (2, 3), (3, 4)))))
        expected = counts(words, lines)
        requests = (("PING", "ok", f"PONG {name} {svc.version}"),
                    (f"COUNT {hidden}", "ok", counts((hidden,), other)[0]),
                    ("HELLO", "err", "ERR unknown command"))
        asks = ("answer `PING` (its health check) and `COUNT WORD` (the number of lines of "
                "the data file that contain WORD)")
        listed = ", ".join(f"`{w}`" for w in words)
        report_words = (f"its answers to `COUNT WORD` for the words {listed}, one answer line "
                        "(`WORD N`) per word in that order")
        phrase = "the service's line counts ({path})"
    output = ctx.output_path(f"{stem}-answers", "txt")
    run = f"runuser -u {user} -- {svc.start}"
    reads = stored_input(source)
    goal = (f"`{run}` must start it (in the foreground; write or fix that start script so "
            f"it runs `{svc.server}` with its settings file `{svc.config}`). Configured through "
            f"that file, it must listen on 127.0.0.1 port {port} only (no other address), "
            f"{asks}, serve as its data file {reads} (the service reads it at every "
            f"request: keep that path), and append one line per request to the log file "
            f"`{svc.log}`, whose folder `{svc.log_dir}` must belong to `{user}` (user and "
            f"group) and not be world-writable. Leave `{svc.server}` itself unchanged. Then "
            f"start it and save {report_words} to `{output}`.")
    checks_say = (f"The checks read `{svc.config}` as server.py does, then start the service "
                  f"themselves with that command (as `{user}`, from /, with only HOME, USER, "
                  f"LOGNAME, SHELL and PATH={SERVICE_PATH} set) after giving `{svc.data}` new "
                  f"content (a new file in its place) and, to see that the service follows "
                  f"that settings file, another free port in it (its `[server]` port, the file "
                  f"rewritten in place and given its bytes back afterwards); they talk to it on "
                  f"127.0.0.1 at that port, read the new lines of its log, and stop it; "
                  "nothing left running counts.")
    kind = "HTTP" if protocol == "http" else "TCP"
    sentence = ctx.phrase([
        f"The {what} service {name} (`{svc.server}`, a small {kind} server; its docstring "
        f"lists its settings) does not work on this host. Set it up as a local service of "
        f"the user `{user}`: {goal} {checks_say}",
        f"Put the {kind} service {name} into service on loopback. Its program is "
        f"`{svc.server}` (read its docstring for the settings); as shipped it does not start "
        f"or is misconfigured. {goal[0].upper()}{goal[1:]} {checks_say}",
        f"Our {kind} {what} service {name} must run on this machine as `{user}`, but it "
        f"is not set up right (`{svc.server}` documents its settings file). {goal[0].upper()}"
        f"{goal[1:]} {checks_say}",
    ]) + ctx.hint("what is wrong: " + "; ".join(hints))

    sections = svc.settings()
    ini = ini_text(sections, header)
    write_config = f"cat > {q(svc.config)} <<'TASKLOOM_INI'\n{ini}TASKLOOM_INI"
    log_dir = f"install -d -o {q(user)} -g {q(user)} -m 755 {q(svc.log_dir)}"
    command = f"exec python3 {q(svc.server)} --config {q(svc.config)}"
    start_script = (f"printf '%s\\n' '#!/bin/sh' {q(command)} > {q(svc.start)}\n"
                    f"chmod 755 {q(svc.start)}")
    launch = f"{run} > /tmp/taskloom-service.out 2>&1 &"
    if protocol == "http":
        client = (f"python3 - {port} {q(f'/lines?contains={word}')} {q(output)} <<'PY'\n"
                  "import sys, time, urllib.request\n"
                  "port, path, output = sys.argv[1:4]\n"
                  "for _ in range(200):\n"
                  "    try:\n"
                  "        with urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', "
                  "timeout=5) as response:\n"
                  "            body = response.read()\n"
                  "        break\n"
                  "    except OSError:\n"
                  "        time.sleep(0.05)\n"
                  "else:\n"
                  "    sys.exit('the service does not answer')\n"
                  "open(output, 'wb').write(body)\n"
                  "PY")
    else:
        client = (f"python3 - {port} {q(output)} {' '.join(q(w) for w in words)} <<'PY'\n"
                  "import socket, sys, time\n"
                  "port, output, words = int(sys.argv[1]), sys.argv[2], sys.argv[3:]\n"
                  "for _ in range(200):\n"
                  "    try:\n"
                  "        client = socket.create_connection(('127.0.0.1', port), timeout=5)\n"
                  "        break\n"
                  "    except OSError:\n"
                  "        time.sleep(0.05)\n"
                  "else:\n"
                  "    sys.exit('the service does not answer')\n"
                  "replies = client.makefile('rb')\n"
                  "lines = []\n"
                  "for word in words:\n"
                  "    client.sendall(f'COUNT {word}\\n'.encode())\n"
                  "    lines.append(replies.readline().decode().rstrip('\\n'))\n"
                  "client.close()\n"
                  "open(output, 'w').write(''.join(line + '\\n' for line in lines))\n"
                  "PY")
    stop = f"pkill -u {q(user)} || true"
    solution = "\n".join([write_config, log_dir, start_script, launch, client, stop])

    alt_config = (f"python3 - {q(svc.config)} <<'PY'\n"
                  "import configparser, json, sys\n"
                  "config = configparser.ConfigParser(interpolation=None)\n"
                  "config.read(sys.argv[1], encoding='utf-8')\n"
                  f"for section, keys in json.loads({json.dumps(json.dumps(sections))}).items():\n"
                  "    if not config.has_section(section):\n"
                  "        config.add_section(section)\n"
                  "    for key, value in keys.items():\n"
                  "        config.set(section, key, value)\n"
                  "with open(sys.argv[1], 'w', encoding='utf-8') as handle:\n"
                  "    config.write(handle)\n"
                  "PY")
    alt_dir = (f"mkdir -p {q(svc.log_dir)}\nchown {q(user)}:{q(user)} {q(svc.log_dir)}\n"
               f"chmod 750 {q(svc.log_dir)}")
    alt_start = (f"cat > {q(svc.start)} <<'TASKLOOM_START'\n#!/bin/bash\ncd / || exit 1\n"
                 f"exec /usr/bin/python3 {q(svc.server)} --config {q(svc.config)}\n"
                 f"TASKLOOM_START\nchmod a+rx {q(svc.start)}")
    if protocol == "http":
        alt_report = f"LC_ALL=C grep -aF -- {q(word)} {q(svc.data)} > {q(output)} || true"
    else:
        alt_report = (f": > {q(output)}\nfor word in {' '.join(q(w) for w in words)}; do\n"
                      f"  printf '%s %s\\n' \"$word\" \"$(LC_ALL=C grep -caF -- \"$word\" "
                      f"{q(svc.data)})\" >> {q(output)}\ndone")
    alternative = "\n".join([alt_config, alt_dir, alt_start, alt_report])

    by_hand = f"printf '%s\\n' {' '.join(q(line) for line in expected)} > {q(output)}"
    every = ini_text(svc.settings(bind="0.0.0.0"), header)
    copy = f"/opt/{dom}/{name}/data-copy.txt"
    copied = ini_text(svc.settings(data=copy), header)
    rest = "\n".join([start_script, launch, client, stop])
    # Another settings file, right, that the start script passes instead of the stated one:
    # the stated file left as shipped, or set right too but not what the service reads.
    other = f"/etc/{dom}/.{name}.real.ini"
    other_command = f"exec python3 {q(svc.server)} --config {q(other)}"
    elsewhere = "\n".join([f"cat > {q(other)} <<'TASKLOOM_INI'\n{ini}TASKLOOM_INI", log_dir,
                           f"printf '%s\\n' '#!/bin/sh' {q(other_command)} > {q(svc.start)}",
                           f"chmod 755 {q(svc.start)}"])
    elsewhere_rest = "\n".join([launch, client, stop])
    stated = [
        (True, Rule("service-runs", "that the service itself works, not just its answers "
                    "saved", by_hand)),
        (True, Rule("loopback-only", "that it listens on 127.0.0.1 only",
                    "\n".join([f"cat > {q(svc.config)} <<'TASKLOOM_INI'\n{every}TASKLOOM_INI",
                               log_dir, rest]))),
        (True, Rule("log-folder", f"that {svc.log_dir} belongs to `{user}` and is not "
                    "world-writable",
                    "\n".join([write_config, f"mkdir -p {q(svc.log_dir)}",
                               f"chmod 777 {q(svc.log_dir)}", rest]))),
        (True, Rule("server-unchanged", f"that {svc.server} itself is left unchanged",
                    f"{solution}\nprintf '%s\\n' '# tuned for this host' >> {q(svc.server)}")),
        (True, Rule("live-data", f"that the service reads {svc.data} itself",
                    "\n".join([f"cp {q(svc.data)} {q(copy)}",
                               f"cat > {q(svc.config)} <<'TASKLOOM_INI'\n{copied}TASKLOOM_INI",
                               log_dir, rest]))),
        (True, Rule("settings-file", f"that it is configured through {svc.config}",
                    "\n".join([elsewhere, elsewhere_rest]))),
        (True, Rule("start-reads-settings", f"that the start script runs {svc.server} with "
                    f"its settings file {svc.config}",
                    "\n".join([write_config, elsewhere, elsewhere_rest]))),
    ]
    checks: list[Assertion] = [
        FileText(f"{output} holds the service's answers", path=output,
                 expected=lines_text(expected), compare=compare),
        ServiceAnswers(f"{name}, started as {user}, answers on 127.0.0.1:{port} and logs",
                       protocol=protocol, start=svc.start, user=user, port=port,
                       config=svc.config, data=svc.data, content=content, log=svc.log,
                       requests=requests,
                       health=svc.health if protocol == "http" else ""),
        FileDigests.of(f"{svc.server} is unchanged",
                       {svc.server: world.files[svc.server].content}),
    ]
    return StepResult(
        output=Report(path=output, phrase=phrase.format(path=output), lines=expected),
        instruction=sentence, solution=solution, alternative=alternative, checks=checks,
        tools=("runuser", "python3", "install", "pkill"), side_effect=True, reads_input_file=True,
        rules=exercised(*stated))


@primitive("services.configure_http")
def configure_http(ctx: StepContext, source) -> StepResult:
    """Configure and start a local HTTP service with a health check, serving the input."""
    return _service(ctx, source, "http")


@primitive("services.configure_tcp")
def configure_tcp(ctx: StepContext, source) -> StepResult:
    """Configure and start a local TCP line service whose health check is PING."""
    return _service(ctx, source, "tcp")
