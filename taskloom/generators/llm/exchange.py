"""What an LLM stage asks and gets: requests and the exchanges recorded for them.

A `ChatRequest` is the logical request (messages, answer schema, seed, which prompt); its
`key` hashes it with the settings that change the answer (model, temperature...), never
with how the schema is imposed on the wire or where the server is. A worker's session
records every `Exchange`; the stage returns them in its `StageOutcome`, the driver writes
them to the run store's `llm_cache` table and hands them back as a replay map when it
submits more work for the same item, so no request is paid for twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from taskloom.models import Frozen, Usage


class ChatMessage(Frozen):
    """One message of a chat request."""

    role: Literal["system", "user", "assistant"] = Field(description="Who speaks.")
    content: str = Field(description="What is said.")


class ChatRequest(Frozen):
    """A request for a JSON answer of a given schema."""

    purpose: str = Field(description="Which agent asks: plan, generate, refine, rewrite, judge.")
    messages: tuple[ChatMessage, ...] = Field(description="The conversation.")
    answer_name: str = Field(description="Name of the answer schema (tool / schema name).")
    answer_schema: dict[str, Any] = Field(description="JSON schema the answer must follow.")
    prompt_fingerprint: str = Field(description="sha256 of the prompt file the request uses.")
    seed: int | None = Field(default=None, description="Sampling seed sent to the server.")
    attempt: int = Field(default=0, description="Deliberate re-asks of the same question.")

    def key(self, settings: dict[str, Any]) -> str:
        """Content hash of this request under `settings` (the cache key)."""
        text = json.dumps([self.model_dump(mode="json"), settings], sort_keys=True,
                          separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class Exchange(Frozen):
    """One answered request, as stored in the run store's `llm_cache` table."""

    key: str = Field(description="ChatRequest.key under the run's model settings.")
    purpose: str = Field(description="Which agent asked.")
    model: str = Field(description="Model that answered.")
    messages: tuple[ChatMessage, ...] = Field(description="What was asked.")
    answer_name: str = Field(description="Answer schema name.")
    answer: str = Field(description="Raw answer text (message content or tool arguments).")
    finish_reason: str | None = Field(default=None, description="stop, length, tool_calls...")
    tokens_in: int = Field(default=0, ge=0, description="Prompt tokens.")
    tokens_out: int = Field(default=0, ge=0, description="Completion tokens.")
    cost_usd: float = Field(default=0.0, ge=0, description="Dollars at configured prices.")
    seconds: float = Field(default=0.0, ge=0, description="Wall-clock time of the request.")

    @property
    def usage(self) -> Usage:
        """Tokens and dollars of this exchange (one request)."""
        return Usage(tokens_in=self.tokens_in, tokens_out=self.tokens_out,
                     cost_usd=self.cost_usd, requests=1)


class ExchangeFile:
    """Exchanges kept one JSON line each: appended whole, torn lines skipped when read.

    Several processes (`make`, `solve`) may share the file: each appends its new lines in one write
    to a file opened for appending, so lines never interleave.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: set[str] = set()

    def load(self) -> dict[str, Exchange]:
        """Every exchange in the file by key (none when it is missing or unreadable)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
        found: dict[str, Exchange] = {}
        for line in text.splitlines():
            try:
                exchange = Exchange.model_validate_json(line)
            except ValidationError:  # torn by a crash mid-write, or blank
                continue
            found[exchange.key] = exchange
        self.known |= set(found)
        return found

    def add(self, exchanges: Iterable[Exchange]) -> None:
        """Append the exchanges not in the file yet (a read-only cache keeps nothing)."""
        new = {e.key: e for e in exchanges if e.key not in self.known}
        if not new:
            return
        data = "".join(e.model_dump_json() + "\n" for e in new.values()).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if os.fstat(descriptor).st_size and not _ends_with_newline(self.path):
                    data = b"\n" + data  # a torn last line stays apart from ours
                os.write(descriptor, data)
            finally:
                os.close(descriptor)
        except OSError:
            return
        self.known |= set(new)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
