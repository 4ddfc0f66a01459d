"""Programs: a working tool of the catalogue, installed where the domain keeps its tools."""

from __future__ import annotations

from taskloom.generators.procedural.artifacts import ProgramFile
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.programs import program_for
from taskloom.generators.procedural.sources.common import data_dir


@source("python_program")
def python_program(ctx: StepContext) -> ProgramFile:
    """A small Python program of a random shape, executable, in the domain's words."""
    program = program_for(ctx.rng, ctx.domain)
    path = ctx.world.add(f"{data_dir(ctx, 'tools')}/{program.name}", program.source,
                         mode=0o755)
    return ProgramFile(path=path, phrase=f"the program {path}", program=program)
