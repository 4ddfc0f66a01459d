"""Talk to an OpenAI-compatible server: one verb, `complete(request) -> Exchange`.

`OpenAIChat` is the transport (one per worker process and settings): bounded concurrency,
a timeout per request, retries with exponential backoff on transport errors only
(connection failures, timeouts, 408/429/502/503/504, told apart by the `openai` exception
types and status codes, never by message text), and the answer schema imposed the way
the server supports:

| mode | sent as |
|---|---|
| `json_schema` | `response_format={"type": "json_schema", ...}` (OpenAI, vLLM, Ollama) |
| `json_object` | `response_format={"type": "json_object", "schema": ...}` (llama.cpp) |
| `tools` | one forced tool call whose parameters are the schema |

`auto` tries them in that order on the first request and keeps the first the server
accepts. For grammar-constrained modes every string gets a `pattern` that allows only
valid JSON string characters (llama.cpp's default grammar lets raw newlines through).

`transport_for` picks the transport of a config: `OpenAIChat`, or `MockChat` (`mock.py`)
for the model name `mock`, which needs no server and no `openai` package.

`Session` wraps a transport for one stage call: it answers from the replay map first,
records every exchange, and sums usage. `ask` turns an answer into a validated pydantic
model or raises `InvalidAnswer` (a rejected draft, never a crash).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from taskloom.config import MOCK_MODEL, LLMConfig
from taskloom.errors import InvalidAnswer, MissingExtra, ModelUnavailable, RequestRejected
from taskloom.generators.llm.exchange import ChatRequest, Exchange
from taskloom.models import Usage

MODES = ("json_schema", "json_object", "tools")
# A JSON string's raw characters: no quote, backslash or control character unescaped.
JSON_STRING_CHARS = r'([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})'
# Statuses of a server that does not take this way of passing a schema (llama-cpp-python
# answers 500 to an unknown response_format type).
MODE_REJECTED = frozenset({400, 404, 415, 422, 500, 501})
RETRIED_STATUS = frozenset({408, 429, 502, 503, 504})
BACKOFF_CAP_SEC = 30.0
# Longest string a grammar allows (a weak model otherwise rambles inside one string until
# max_tokens); multi-line texts are lists of lines, so this bounds a line, not a file.
GRAMMAR_STRING_CHARS = 200
T = TypeVar("T", bound=BaseModel)


class ChatModel(Protocol):
    """Answers chat requests.

    Example:
        >>> exchange = chat.complete(request)   # doctest: +SKIP
        >>> exchange.answer
        '{"title": "..."}'
    """

    def complete(self, request: ChatRequest) -> Exchange:
        """The server's answer to `request`."""
        ...




class OpenAIChat:
    """The `openai` client with retries, bounded concurrency and schema negotiation."""

    def __init__(self, config: LLMConfig) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingExtra("the openai package is not installed",
                                   fix="pip install 'taskloom[llm]'") from exc
        if not config.model:
            raise ModelUnavailable("no model name", fix="pass --model or set "
                                                        "TASKLOOM_LLM_MODEL")
        self.openai = openai
        self.config = config
        self.settings = config.output_settings()
        key = os.environ.get(config.api_key_env) or "unused"  # local servers need none
        self.client = openai.OpenAI(base_url=config.base_url, api_key=key,
                                    timeout=config.timeout_sec, max_retries=0)
        self.slots = threading.BoundedSemaphore(config.max_concurrency)
        self.mode: str | None = None if config.structured_output == "auto" \
            else config.structured_output
        self.jitter = random.Random()  # retry jitter only; no task content depends on it

    def complete(self, request: ChatRequest) -> Exchange:
        """Send `request` (schema mode negotiated on first use).

        Raises:
            ModelUnavailable: Transport errors outlived the retries, or the server rejects
                the key or the model name.
            RequestRejected: The server refused this request (4xx).
        """
        modes = [self.mode] if self.mode else list(MODES)
        for position, mode in enumerate(modes):
            started = time.monotonic()
            try:
                response = self._send(request, mode)
            except self.openai.APIStatusError as exc:
                if position + 1 < len(modes) and exc.status_code in MODE_REJECTED:
                    continue  # try the next way of passing the schema
                raise self._translate(exc) from exc
            self.mode = self.mode or mode
            return self._exchange(request, response, mode, time.monotonic() - started)
        raise AssertionError("unreachable: the last mode either answers or raises")

    def _send(self, request: ChatRequest, mode: str):
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        constrained = grammar_schema(request.answer_schema, self.config.grammar_max_items)
        if mode == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": request.answer_name, "schema": request.answer_schema}}
        elif mode == "json_object":
            # Sent raw so no client-side type drops the llama.cpp `schema` key.
            kwargs["extra_body"] = {"response_format": {"type": "json_object",
                                                        "schema": constrained}}
        else:
            kwargs["tools"] = [{"type": "function", "function": {
                "name": request.answer_name, "description": "Give the answer.",
                "parameters": constrained}}]
            kwargs["tool_choice"] = {"type": "function",
                                     "function": {"name": request.answer_name}}
        openai = self.openai
        last: Exception | None = None
        for attempt in range(self.config.retries + 1):
            if attempt:
                delay = min(BACKOFF_CAP_SEC, self.config.backoff_sec * 2 ** (attempt - 1))
                time.sleep(delay * (0.5 + self.jitter.random() / 2))
            try:
                with self.slots:
                    return self.client.chat.completions.create(**kwargs)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                last = exc
            except openai.APIStatusError as exc:
                if exc.status_code not in RETRIED_STATUS:
                    raise
                last = exc
        kind = "timed out" if isinstance(last, openai.APITimeoutError) else "unreachable"
        raise ModelUnavailable(
            f"the model server at {self.config.base_url} {kind} after "
            f"{self.config.retries + 1} attempts ({type(last).__name__})",
            fix="start the server or fix llm.base_url; raise llm.timeout_sec or "
                "llm.retries for a slow one; then resume the run") from last

    def _translate(self, exc) -> Exception:
        status = exc.status_code
        if status in (401, 403):
            return ModelUnavailable(f"the model server refused the key (HTTP {status})",
                                    fix=f"set ${self.config.api_key_env} to a valid key "
                                        "(or llm.api_key_env to the variable holding it)")
        if status == 404:
            return ModelUnavailable(f"model {self.config.model!r} or the chat endpoint was "
                                    f"not found at {self.config.base_url} (HTTP 404)",
                                    fix="check --model / llm.model and --base-url "
                                        "(it usually ends in /v1)")
        if 400 <= status < 500:
            return RequestRejected(f"the server refused the request (HTTP {status})")
        return ModelUnavailable(f"the model server failed (HTTP {status})",
                                fix="check the server's log, then resume the run")

    def _exchange(self, request: ChatRequest, response, mode: str,
                  seconds: float) -> Exchange:
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice else None
        answer = ""
        if message is not None:
            calls = getattr(message, "tool_calls", None) or []
            if mode == "tools" and calls:
                answer = calls[0].function.arguments or ""
            else:
                answer = message.content or ""
        usage = response.usage
        tokens_in = usage.prompt_tokens if usage else 0
        tokens_out = usage.completion_tokens if usage else 0
        cost = (tokens_in * self.config.price_in_per_mtok +
                tokens_out * self.config.price_out_per_mtok) / 1e6
        return Exchange(key=request.key(self.settings), purpose=request.purpose,
                        model=response.model or self.config.model, messages=request.messages,
                        answer_name=request.answer_name, answer=answer,
                        finish_reason=choice.finish_reason if choice else None,
                        tokens_in=tokens_in or 0, tokens_out=tokens_out or 0,
                        cost_usd=round(cost, 8), seconds=round(seconds, 3))


@lru_cache(maxsize=4)
def _transport(config_json: str) -> ChatModel:
    config = LLMConfig.model_validate_json(config_json)
    if config.model == MOCK_MODEL:
        from taskloom.generators.llm.mock import MockChat

        return MockChat(config)
    return OpenAIChat(config)


def transport_for(config: LLMConfig) -> ChatModel:
    """This process's transport for `config` (threads share it and its concurrency bound).

    The model `mock` gets the offline `MockChat`; any other name an `OpenAIChat`.
    """
    return _transport(config.model_dump_json())


class Session:
    """One stage call's view of a model: replay first, record everything, count usage."""

    def __init__(self, transport: ChatModel, settings: dict[str, Any],
                 replay: dict[str, Exchange] | None = None) -> None:
        self.transport = transport
        self.settings = settings
        self.replay = dict(replay or {})
        self.exchanges: list[Exchange] = []
        self.sent = 0

    def complete(self, request: ChatRequest) -> Exchange:
        """The replayed or recorded exchange, else a new one from the transport."""
        key = request.key(self.settings)
        found = self.replay.get(key) or next((e for e in self.exchanges if e.key == key),
                                             None)
        if found is None:
            found = self.transport.complete(request)
            self.sent += 1
        if all(e.key != key for e in self.exchanges):
            self.exchanges.append(found)
        return found

    @property
    def usage(self) -> Usage:
        """Tokens and dollars behind this stage's result, replayed exchanges included.

        Each exchange counts once; `requests` counts only the requests actually sent.
        """
        total = Usage()
        for exchange in self.exchanges:
            total = total + exchange.usage
        return total.model_copy(update={"requests": self.sent})


def ask(chat: ChatModel, request: ChatRequest, answer: type[T]) -> T:
    """Send `request` and validate the answer as `answer`.

    Raises:
        InvalidAnswer: Empty, not JSON, or not matching the schema (the message says which).
        RequestRejected: The server refused the request.
        ModelUnavailable: The server is unreachable or misconfigured.
    """
    exchange = chat.complete(request)
    data = parse_json_object(exchange.answer, cut=exchange.finish_reason == "length")
    try:
        return answer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise InvalidAnswer(f"{where}: {first['msg']} ({exc.error_count()} problem(s))") \
            from exc


def parse_json_object(text: str, *, cut: bool = False) -> dict:
    """The first JSON object in `text` (servers may add prose or code fences around it).

    Raises:
        InvalidAnswer: There is none.
    """
    if not text.strip():
        raise InvalidAnswer("the model gave an empty answer")
    start = text.find("{")
    if start < 0:
        raise InvalidAnswer(f"no JSON object in the answer: {text[:120]!r}")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        hint = " (cut at llm.max_tokens)" if cut else ""
        raise InvalidAnswer(f"the answer is not valid JSON{hint}: {exc.msg} at "
                            f"character {exc.pos}") from exc
    if not isinstance(data, dict):
        raise InvalidAnswer("the answer is JSON but not an object")
    return data


def grammar_schema(schema: dict[str, Any], max_items: int | None = None) -> dict[str, Any]:
    """`schema` with `$ref`s inlined and a JSON-safe `pattern` on every free string.

    Grammar-based servers (llama.cpp) build their grammar from this; the pattern is over
    the raw characters between the quotes, so escapes stay legal and raw newlines do not,
    and it bounds the length (`maxLength`, else GRAMMAR_STRING_CHARS). `max_items` caps
    every list (small models can loop forever on a list).
    """
    definitions = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(definitions[node["$ref"].rsplit("/", 1)[-1]])
        out = {key: ({name: walk(sub) for name, sub in value.items()}
                     if key == "properties" else walk(value))
               for key, value in node.items() if key not in ("$defs", "title", "default")}
        if out.get("type") == "string" and "enum" not in out and "const" not in out:
            low = out.pop("minLength", 0)
            high = out.pop("maxLength", GRAMMAR_STRING_CHARS)
            out["pattern"] = f"^{JSON_STRING_CHARS}{{{low},{high}}}$"
        if out.get("type") == "array" and max_items is not None:
            out["maxItems"] = min(out.get("maxItems", max_items), max_items)
        return out

    return walk(schema)
