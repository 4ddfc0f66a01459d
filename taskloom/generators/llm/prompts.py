"""Prompt files: `prompts/<name>.md`, a system part and a user template.

A file holds `<!-- taskloom:system -->` and `<!-- taskloom:user -->` sections; `{{name}}`
in them is replaced by the value of `name` (nothing else is special, so JSON and shell
examples need no escaping). The sha256 of a file is its fingerprint: it is part of every
request's cache key and of the stage keys, so editing a prompt re-runs what it feeds.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pydantic import BaseModel

from taskloom.generators.llm.exchange import ChatMessage, ChatRequest

PROMPT_NAMES = ("planner", "generator", "refiner", "rewriter", "judge", "intent", "agent",
                "forger")
_SECTION = re.compile(r"^<!-- taskloom:(system|user) -->\s*$", re.MULTILINE)
_SLOT = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


@dataclass(frozen=True)
class Prompt:
    """One prompt file, parsed."""

    name: str
    system: str
    user: str
    fingerprint: str

    def request(self, answer: type[BaseModel], *, seed: int | None = None, attempt: int = 0,
                **values: object) -> ChatRequest:
        """A request with the slots filled and `answer`'s JSON schema attached.

        Raises:
            KeyError: A slot of the template has no value (a bug in the caller).
        """
        return ChatRequest(
            purpose=self.name, answer_name=answer.__name__,
            answer_schema=answer.model_json_schema(), prompt_fingerprint=self.fingerprint,
            seed=seed, attempt=attempt,
            messages=(ChatMessage(role="system", content=_fill(self.system, values)),
                      ChatMessage(role="user", content=_fill(self.user, values))))


def _fill(template: str, values: dict[str, object]) -> str:
    return _SLOT.sub(lambda m: str(values[m.group(1)]), template).strip() + "\n"


@cache
def prompt(name: str) -> Prompt:
    """The shipped prompt `name` (one of PROMPT_NAMES)."""
    raw = resources.files("taskloom.generators.llm").joinpath(f"prompts/{name}.md") \
        .read_bytes()
    text = raw.decode("utf-8")
    parts = _SECTION.split(text)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    if set(sections) != {"system", "user"}:
        raise ValueError(f"prompts/{name}.md needs a system and a user section")
    return Prompt(name=name, system=sections["system"].strip(), user=sections["user"].strip(),
                  fingerprint=hashlib.sha256(raw).hexdigest())


def prompts_fingerprint(*names: str) -> str:
    """One fingerprint over the named prompt files."""
    return hashlib.sha256("".join(prompt(n).fingerprint for n in names).encode()).hexdigest()
