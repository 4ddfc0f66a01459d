"""The machine and the graph: `doctor`, `base-image build/export/show`, `graph ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from taskloom.cli.common import GraphOption, app, base_image_app, console, fail, graph_app, stdout
from taskloom.errors import TaskloomError


@base_image_app.command("build")
def base_image_build(
    from_registry: Annotated[str | None, typer.Option(
        help="Build from this registry image (e.g. debian:bookworm-slim) with apt-get "
             "instead of debootstrap.")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the image exists.")] = False,
) -> None:
    """Build the toolbox image generated tasks build FROM (offline: debootstrap, as root)."""
    from taskloom.sandbox import base_image
    from taskloom.sandbox.containers import docker_client

    try:
        client = docker_client(timeout=900)
        usable, status = base_image.base_image_status(client)
        if usable and not force:
            stdout.print(f"{status} already built (use --force to rebuild)")
            return
        log = lambda line: console.print(f"  {line}", highlight=False, markup=False)  # noqa: E731
        with console.status(f"building {base_image.BASE_IMAGE} (about a minute)"):
            if from_registry:
                base_image.build_from_registry(client, from_registry, log=log)
            else:
                base_image.build_offline(client, log=log)
        stdout.print(base_image.base_image_status(client)[1])
    except TaskloomError as exc:
        raise fail(exc) from exc


@base_image_app.command("export")
def base_image_export(
    source: Annotated[str, typer.Option("--from", help="docker: export the built image "
                                                       "(~3 s); debootstrap: build from Debian "
                                                       "packages, no Docker needed (~1 min).")
                      ] = "docker",
    force: Annotated[bool, typer.Option(help="Redo an existing export.")] = False,
) -> None:
    """Unpack the base image into a folder for the daemonless bwrap runtime (as root)."""
    from taskloom.sandbox import rootfs

    try:
        if source == "docker":
            from taskloom.sandbox.containers import docker_client

            found = rootfs.export_from_docker(docker_client(), force=force)
        elif source == "debootstrap":
            found = rootfs.build_with_debootstrap(force=force)
        else:
            raise typer.BadParameter("--from is docker or debootstrap")
    except TaskloomError as exc:
        raise fail(exc) from exc
    stdout.print(f"{found.image}: {found.path} ({found.source}, made {found.created})")


@base_image_app.command("show")
def base_image_show() -> None:
    """Print the base image name, version and toolbox packages."""
    from taskloom.sandbox import base_image

    stdout.print(f"{base_image.BASE_IMAGE} (toolbox {base_image.TOOLBOX_DIGEST})")
    stdout.print(" ".join(base_image.TOOLBOX_PACKAGES))


def _load_graph(extra: list[Path] | None):
    from taskloom.skill_graph.model import load_graph

    try:
        return load_graph(extra)
    except TaskloomError as exc:
        raise fail(exc) from exc


@graph_app.command("check")
def graph_check(graph: GraphOption = None) -> None:
    """Check the graph: references, reachability and input/output types. Exit 1 on problems."""
    loaded = _load_graph(graph)
    stats = loaded.stats()
    stdout.print(f"[green]ok[/]: {stats['skills']} skills, {stats['scenarios']} scenarios, "
              f"{stats['types']} types, {stats['transitions']} typed transitions")


@graph_app.command("stats")
def graph_stats(graph: GraphOption = None,
                as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
                ) -> None:
    """Sizes, categories, domains, degrees and which skills have procedural primitives."""
    from taskloom.generators.procedural.primitives import PRIMITIVES

    loaded = _load_graph(graph)
    stats = loaded.stats()
    stats["procedural_primitives"] = len(set(PRIMITIVES) & set(loaded.skills))
    stats["skills_without_primitive"] = sorted(set(loaded.skills) - set(PRIMITIVES))
    if as_json:
        stdout.print_json(data=stats)
        return
    table = Table(show_header=False)
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value) or "-"
        table.add_row(key, str(value))
    stdout.print(table)


@graph_app.command("list")
def graph_list(
    what: Annotated[str, typer.Argument(help="skills, scenarios or sources (the skills a "
                                             "task can start with).")] = "skills",
    graph: GraphOption = None,
) -> None:
    """The ids of the graph's skills or scenarios, one per line (for --scenario, skills =)."""
    loaded = _load_graph(graph)
    ids = {"skills": sorted(loaded.skills), "scenarios": sorted(loaded.scenarios),
           "sources": sorted(s for s in loaded.skills if loaded.is_source(s))}.get(what)
    if ids is None:
        raise typer.BadParameter("list skills, scenarios or sources", param_hint="WHAT")
    for item in ids:
        stdout.print(item, markup=False, highlight=False)


@graph_app.command("show")
def graph_show(
    scenario: Annotated[str | None, typer.Option(help="Draw only this scenario's "
                                                      "neighbourhood.")] = None,
    output: Annotated[Path, typer.Option("--out", help="SVG file to write.")] = Path(
        "skill-graph.svg"),
    graph: GraphOption = None,
) -> None:
    """Draw the graph (or a scenario's neighbourhood) as an SVG picture to open in a browser."""
    from taskloom.skill_graph.render import graph_svg, scenario_svg

    loaded = _load_graph(graph)
    try:
        text = scenario_svg(loaded, scenario) if scenario else graph_svg(loaded)
    except TaskloomError as exc:
        raise fail(exc) from exc
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    stdout.print(f"wrote {output} ({len(text) // 1024} KiB); open it in a browser")


@app.command()
def doctor() -> None:
    """Check the sandbox engine, the base image and the optional Python extras."""
    from rich.markup import escape

    from taskloom.doctor import run_checks

    table = Table()
    for column in ("component", "status", "detail", "fix"):
        table.add_column(column, overflow="fold")
    checks = run_checks()
    for check in checks:
        status = {"ok": "[green]ok[/]", "missing": "[red]missing[/]",
                  "optional": "[yellow]not installed[/]",
                  "unavailable": "[yellow]unavailable[/]"}[check.status]
        table.add_row(check.component, status, escape(check.detail), escape(check.fix))
    stdout.print(table)
    if any(check.status == "missing" for check in checks):
        raise typer.Exit(1)
