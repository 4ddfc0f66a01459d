"""Hand-written text sources: an INI configuration, a plain list, a maintenance script."""

from __future__ import annotations

from taskloom.generators.procedural.artifacts import ConfigFile, Script, TextFile
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import data_dir, noisy, spaced
from taskloom.generators.procedural.world import lines_text


def _old_value(ctx: StepContext, key: str, value: str) -> str:
    """A value the setting had before, of the same kind."""
    if value in ("true", "false"):
        return "false" if value == "true" else "true"
    if value.isdigit():
        return str(max(1, int(value) // 2) if ctx.rng.random() < 0.5 else int(value) * 2)
    if key == "log_level":
        return ctx.rng.choice([level for level in ("debug", "info", "warn", "error")
                               if level != value])
    return f"{value} (old)"


@source("config_file")
def config_file(ctx: StepContext) -> ConfigFile:
    """An INI-style service configuration.

    At least one setting has an old value commented out above it (`# port = 8080`), which
    a careless `grep port` picks up; more comments at noise 2+. Some sections set a
    hyphenated key (`max-connections`), which is no valid shell variable name as it is.
    """
    domain = ctx.domain
    entries = []
    for service in ctx.rng.sample(domain.services, min(3, len(domain.services))):
        entries += [(service, "enabled", ctx.rng.choice(("true", "false"))),
                    (service, "port", str(ctx.rng.randint(2000, 9000))),
                    (service, "workers", str(ctx.rng.randint(1, 16))),
                    (service, "log_level", ctx.rng.choice(("debug", "info", "warn")))]
        if ctx.rng.random() < 0.5:
            entries.append((service, "timeout_ms", str(ctx.rng.randint(100, 5000))))
        if ctx.rng.random() < 0.4:
            entries.append((service, "max-connections", str(ctx.rng.randint(5, 50) * 10)))
    if ctx.difficulty.edge_cases >= 2:  # a value with spaces
        first = entries[0][0]
        entries.insert(1, (first, "description", f"{first} service of {domain.org}"))
    lines = [f"# {domain.org} service configuration", ""]
    section = None
    old = ctx.rng.randrange(len(entries))  # an old value commented out, at every level
    for number, (sect, key, value) in enumerate(entries):
        if sect != section:
            if section is not None:
                lines.append("")
            lines.append(f"[{sect}]")
            section = sect
        if number == old:
            lines.append(ctx.rng.choice([f"# {key} = {_old_value(ctx, key, value)}",
                                         f"#{key} = {value}"]))
        elif ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.3:  # comments, old settings
            lines.append(ctx.rng.choice([f"# {key} = {ctx.rng.randint(1, 99)}",
                                         f"; {key} was changed during the last review",
                                         f"#{key} = {value}"]))
        lines.append(f"{key} = {value}")
    path = f"/etc/{domain.name}/{spaced(ctx, 'services.ini')}"
    ctx.world.add(path, lines_text(lines))
    return ConfigFile(path=path, phrase=f"the configuration file `{path}`", lines=tuple(lines),
                      entries=tuple(entries))


@source("text_file")
def text_file(ctx: StepContext) -> TextFile:
    """A plain text list: one host, user or item per line, with repeats.

    Typed by hand: at edge-case level 2+ some names also appear in another case
    (`Edge-api-07`, `EDGE-API-07`); at noise 2+ blank lines separate groups, and at noise 3
    some of them hold only spaces or a tab and some names have trailing blanks.
    """
    domain = ctx.domain
    pool = [f"{ctx.rng.choice(domain.words)}-{ctx.rng.choice(domain.services)}"
            f"-{ctx.rng.randint(1, 30):02d}" for _ in range(ctx.count((4, 6), (10, 25), (40, 90)))]
    lines = [ctx.rng.choice(pool) for _ in range(ctx.count((10, 18), (50, 150), (400, 900)))]
    if ctx.difficulty.edge_cases >= 2:
        for name in ctx.rng.sample(sorted(set(pool)), min(2, len(set(pool)))):
            variant = name.upper() if ctx.rng.random() < 0.5 else name.capitalize()
            for _ in range(ctx.rng.randint(1, 3)):
                lines.insert(ctx.rng.randint(0, len(lines)), variant)
    if ctx.difficulty.noise >= 2:
        for _ in range(noisy(ctx)):
            blank = ctx.rng.choice(("", "", "  ", "\t")) if ctx.difficulty.noise == 3 else ""
            lines.insert(ctx.rng.randint(0, len(lines)), blank)
    if ctx.difficulty.noise == 3:
        for index in ctx.rng.sample(range(len(lines)), 3):
            if lines[index].strip():
                lines[index] += ctx.rng.choice((" ", "  ", "\t"))
    path = f"{data_dir(ctx, 'lists')}/{spaced(ctx, 'inventory.txt')}"
    ctx.world.add(path, lines_text(lines))
    return TextFile(path=path, phrase=f"the list `{path}`", lines=tuple(lines))


SCRIPT_JOBS = {
    "cleanup": ("Compress {name} logs older than a week.",
                "find /var/log/{name} -name '*.log' -mtime +7 -exec gzip -f {{}} +"),
    "sweep": ("Remove {name} temporary files older than two days.",
              "find /tmp -maxdepth 1 -name '{name}-*' -mtime +2 -delete"),
    "snapshot": ("Snapshot the {name} configuration into /var/backups.",
                 "tar -czf \"/var/backups/{name}-etc-$(date +%F).tar.gz\" -C /etc {name}"),
}


@source("script")
def script(ctx: StepContext) -> Script:
    """A maintenance script kept with the domain's data, not yet installed on the PATH.

    It answers `--version` with one line, so a test can run it by name once installed. Only
    its owner may run it where it is (so a copy that keeps its mode is not installed right).
    """
    domain = ctx.domain
    job = ctx.rng.choice(sorted(SCRIPT_JOBS))
    summary, command = SCRIPT_JOBS[job]
    name = f"{domain.name}-{job}"
    version = f"{ctx.rng.randint(1, 3)}.{ctx.rng.randint(0, 9)}"
    lines = ("#!/bin/bash", f"# {summary.format(name=domain.name)}", "set -eu",
             'if [ "${1:-}" = "--version" ]; then',
             f'  echo "{name} {version}"', "  exit 0", "fi",
             command.format(name=domain.name))
    path = f"{data_dir(ctx, 'scripts')}/{spaced(ctx, name + '.sh')}"
    ctx.world.add(path, lines_text(lines), mode=ctx.rng.choice((0o700, 0o744)))
    return Script(path=path, phrase=f"the script `{path}`", lines=lines)
