"""Read a Dockerfile into instructions, and decide whether it can be emulated.

Fast mode skips `docker build`: when a Dockerfile is FROM a local image and uses only
WORKDIR, ENV, COPY/ADD of local files, RUN and USER (plus instructions that do not touch
the filesystem), the same state is made by running those steps inside the sandbox. Any
other Dockerfile is built for real (strict mode). `Unemulable` says why.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import shlex
from dataclasses import dataclass

from taskloom.errors import Unemulable
from taskloom.models import TaskFile
from taskloom.sandbox.trial import CopySource, SetupStep

# Instructions that change only image metadata the sandbox ignores.
_IGNORED = frozenset({"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "STOPSIGNAL",
                      "HEALTHCHECK", "VOLUME"})
_ARCHIVE = re.compile(r"\.(tar|tgz|tar\.(gz|bz2|xz)|tbz2?|txz)$")



@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction after joining continuation lines."""

    keyword: str
    arguments: str
    line: int


@dataclass(frozen=True)
class Emulation:
    """A Dockerfile expressed as steps on a base image."""

    image: str
    steps: tuple[SetupStep, ...]
    workdir: str
    env: dict[str, str]
    user: str | None


def parse(text: str) -> list[Instruction]:
    """Split Dockerfile text into instructions (comments dropped, continuations joined)."""
    instructions: list[Instruction] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            if re.match(r"#\s*escape\s*=", stripped) and not instructions:
                raise Unemulable(f"line {number}: the escape parser directive is not emulated")
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        joined = (pending + stripped).strip()
        pending = ""
        keyword, _, arguments = joined.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    if pending.strip():
        keyword, _, arguments = pending.strip().partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    return instructions


def emulate(dockerfile: str, context: tuple[TaskFile, ...]) -> Emulation:
    """Translate a Dockerfile into emulated setup steps.

    Args:
        dockerfile: Text of the Dockerfile.
        context: Files of the build context (environment/), paths relative to it.

    Raises:
        Unemulable: The Dockerfile uses something fast mode does not reproduce exactly.
    """
    instructions = parse(dockerfile)
    if not instructions or instructions[0].keyword != "FROM":
        raise Unemulable("the first instruction is not FROM")
    if any(_has(path, ".dockerignore") for path in (f.path for f in context)):
        raise Unemulable(".dockerignore filtering is not emulated")
    image = _from_image(instructions[0])
    steps: list[SetupStep] = []
    workdir, env, user = "/", {}, None
    for item in instructions[1:]:
        where = f"line {item.line} ({item.keyword})"
        if item.keyword in _IGNORED:
            continue
        if "$" in item.arguments and item.keyword != "RUN":
            raise Unemulable(f"{where}: variable substitution is not emulated")
        if item.keyword == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, _unquote(item.arguments)))
            steps.append(SetupStep(op="workdir", path=workdir))
        elif item.keyword == "ENV":
            env = {**env, **_env_pairs(item.arguments, where)}
        elif item.keyword == "USER":
            user = item.arguments.split(":")[0] or None
        elif item.keyword in ("COPY", "ADD"):
            steps.append(_copy_step(item, context, workdir, where))
        elif item.keyword == "RUN":
            steps.append(SetupStep(op="run", argv=_run_argv(item.arguments, where),
                                   workdir=workdir, user=user, env=dict(env)))
        else:
            raise Unemulable(f"{where}: {item.keyword} is not emulated")
    return Emulation(image=image, steps=tuple(steps), workdir=workdir, env=env, user=user)


def from_image(dockerfile: str) -> str:
    """The image a Dockerfile starts FROM (its first FROM)."""
    for item in parse(dockerfile):
        if item.keyword == "FROM":
            words = [w for w in item.arguments.split() if not w.startswith("--")]
            if words:
                return words[0]
    raise Unemulable("no FROM instruction")


def _from_image(item: Instruction) -> str:
    words = item.arguments.split()
    if not words or words[0].startswith("--"):
        raise Unemulable(f"line {item.line}: FROM with flags is not emulated")
    if len(words) > 1:
        raise Unemulable(f"line {item.line}: multi-stage builds are not emulated")
    if "$" in words[0]:
        raise Unemulable(f"line {item.line}: FROM with build arguments is not emulated")
    return words[0]


def _has(path: str, name: str) -> bool:
    return path == name or path.endswith("/" + name)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _env_pairs(arguments: str, where: str) -> dict[str, str]:
    try:
        words = shlex.split(arguments)
    except ValueError as exc:
        raise Unemulable(f"{where}: {exc}") from exc
    if words and "=" not in words[0]:
        key, _, value = arguments.strip().partition(" ")
        return {key: _unquote(value.strip())}
    pairs = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise Unemulable(f"{where}: cannot read {word!r} as KEY=value")
        pairs[key] = value
    return pairs


def _run_argv(arguments: str, where: str) -> tuple[str, ...]:
    if arguments.startswith("["):
        try:
            argv = json.loads(arguments)
        except json.JSONDecodeError:
            return ("/bin/sh", "-c", arguments)  # Docker treats malformed JSON as shell form
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise Unemulable(f"{where}: exec form must be a list of strings")
        return tuple(argv)
    if arguments.startswith("--"):
        raise Unemulable(f"{where}: RUN flags are not emulated")
    return ("/bin/sh", "-c", arguments)


def _copy_step(item: Instruction, context: tuple[TaskFile, ...], workdir: str,
               where: str) -> SetupStep:
    words, chown = _copy_words(item.arguments, where)
    if len(words) < 2:
        raise Unemulable(f"{where}: needs a source and a destination")
    *sources, dest = words
    trailing = "/" if dest.endswith(("/", "/.")) or dest == "." else ""
    dest = posixpath.normpath(posixpath.join(workdir, dest)).rstrip("/") + trailing or "/"
    resolved: list[CopySource] = []
    for source in sources:
        if "://" in source:
            raise Unemulable(f"{where}: remote sources are not emulated")
        if item.keyword == "ADD" and _ARCHIVE.search(source):
            raise Unemulable(f"{where}: ADD of an archive (auto-extract) is not emulated")
        resolved.extend(_resolve_source(source, context, where))
    return SetupStep(op="copy", sources=tuple(resolved), dest=dest, chown=chown,
                     workdir=workdir)


def _copy_words(arguments: str, where: str) -> tuple[list[str], str | None]:
    chown = None
    rest = arguments
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        rest = rest.strip()
        if flag.startswith("--chown="):
            chown = flag.split("=", 1)[1]
        else:
            raise Unemulable(f"{where}: {flag.split('=')[0]} is not emulated")
    if rest.startswith("["):
        try:
            words = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise Unemulable(f"{where}: malformed JSON form") from exc
    else:
        words = rest.split()
    return [str(w) for w in words], chown


def _resolve_source(source: str, context: tuple[TaskFile, ...],
                    where: str) -> list[CopySource]:
    """Context files matched by one COPY source (a file, a directory, a glob)."""
    clean = posixpath.normpath(source.lstrip("/")) if source not in (".", "./") else "."
    if clean.startswith(".."):
        raise Unemulable(f"{where}: {source} is outside the build context")
    if any(ch in clean for ch in "*?["):
        matches = sorted({f.path.split("/")[clean.count("/")] for f in context
                          if fnmatch.fnmatch("/".join(f.path.split("/")[:clean.count("/") + 1]),
                                             clean)})
        if not matches:
            raise Unemulable(f"{where}: {source} matches no file")
        prefix = posixpath.dirname(clean)
        found: list[CopySource] = []
        for name in matches:
            found.extend(_resolve_source(posixpath.join(prefix, name), context, where))
        return found
    exact = next((f for f in context if f.path == clean), None)
    if exact is not None:
        return [CopySource(name=posixpath.basename(clean), is_dir=False,
                           files=(exact.model_copy(update={"path": posixpath.basename(clean)}),))]
    prefix = "" if clean == "." else clean + "/"
    below = tuple(f.model_copy(update={"path": f.path[len(prefix):]}) for f in context
                  if f.path.startswith(prefix))
    if not below:
        raise Unemulable(f"{where}: {source} is not in the build context")
    return [CopySource(name=posixpath.basename(clean), is_dir=True, files=below)]
