"""The JSON answers agents ask for, validated by pydantic.

Multi-line text (instruction, scripts, tests, file contents) is a list of lines: small
models and grammar-constrained decoding handle one short string per line far better than
one long string full of escaped newlines. Fields have no defaults, so a grammar built from
the schema makes the model write every one of them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Answer(BaseModel):
    """Base of every answer: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanAnswer(Answer):
    """The planner's concrete scenario for a blueprint."""

    title: str = Field(min_length=1, description="A short title of the task.")
    details: list[str] = Field(min_length=1, description="3-6 lines: who asks, which files "
                               "at which paths, record formats, concrete names and numbers.")


class FileAnswer(Answer):
    """One input file of the environment."""

    path: str = Field(min_length=1, description="Absolute path, e.g. /app/data/sales.csv.")
    lines: list[str] = Field(description="The file's lines.")


class StepAnswer(Answer):
    """One step of the reference solution."""

    title: str = Field(min_length=1, description="What the step does, in a few words.")
    commands: list[str] = Field(min_length=1, description="Bash lines of the step.")


class MutantAnswer(Answer):
    """A wrong solution on purpose: the reference solution with one stated rule ignored."""

    ignores: str = Field(min_length=1, description="The instruction's words for the rule "
                         "this solution ignores, quoted, e.g. 'lines starting with # are "
                         "comments'.")
    commands: list[str] = Field(min_length=1, description="Bash lines of the whole reference "
                                "solution with just that rule ignored; the tests must fail.")


class RequirementAnswer(Answer):
    """Instruction words and the test functions that check them."""

    demands: str = Field(min_length=1, description="Words of the instruction, quoted "
                         "verbatim, that ask for what the tests check.")
    tests: list[str] = Field(min_length=1, description="Names of the pytest functions "
                             "(test_...) that check these words.")


class DraftAnswer(Answer):
    """A whole task."""

    instruction: list[str] = Field(min_length=1, description="Lines of what the agent is "
                                   "told: the goal, input paths, output paths and formats.")
    workdir: str = Field(min_length=1, description="Absolute working directory, e.g. /app.")
    files: list[FileAnswer] = Field(description="Input files the environment holds.")
    setup: list[str] = Field(description="Bash lines run as root when the environment is "
                             "built (may be empty).")
    steps: list[StepAnswer] = Field(min_length=1, description="Reference solution steps.")
    alternative: list[str] = Field(description="Bash lines of a second, independent correct "
                                   "solution, written from the instruction alone with other "
                                   "tools than the steps use; the tests must accept it too.")
    tests: list[str] = Field(min_length=1, description="Lines of a pytest file checking "
                             "the results at absolute paths.")
    requirements: list[RequirementAnswer] = Field(min_length=1, description="For each "
                                                  "test function, the instruction words "
                                                  "that demand it; uncited tests are dropped.")
    mutants: list[MutantAnswer] = Field(description="For each rule the instruction states "
                                        "(filter, dedupe, skip malformed lines, sort key, "
                                        "threshold, edge case), the solution with that rule "
                                        "ignored; the data must make each one fail.")
    expected_values: list[str] = Field(description="Exact values the tests expect; the "
                                       "instruction must not state them.")


class RefineAnswer(Answer):
    """A repair: every field null keeps the draft's value, anything else replaces it."""

    diagnosis: str = Field(min_length=1, description="Why the draft failed, in one line.")
    instruction: list[str] | None = Field(description="New instruction lines, or null.")
    files: list[FileAnswer] | None = Field(description="Files to add or replace, or null.")
    setup: list[str] | None = Field(description="New setup lines, or null.")
    steps: list[StepAnswer] | None = Field(description="New solution steps, or null.")
    alternative: list[str] | None = Field(description="New alternative solution lines, or "
                                          "null.")
    tests: list[str] | None = Field(description="New pytest file lines, or null.")
    requirements: list[RequirementAnswer] | None = Field(description="New requirement map "
                                                         "(all of it), or null.")
    mutants: list[MutantAnswer] | None = Field(description="New wrong-on-purpose solutions "
                                               "(all of them), or null.")
    expected_values: list[str] | None = Field(description="New expected values, or null.")


class RewriteAnswer(Answer):
    """A rewritten instruction (hybrid backend)."""

    instruction: list[str] = Field(min_length=1, description="Lines of the new instruction.")
    requirements: list[RequirementAnswer] = Field(description="For each test whose quoted "
                                                  "words the rewrite changed: the new words "
                                                  "that demand it. Empty when every quoted "
                                                  "sentence is kept as it was.")


class JudgeAnswer(Answer):
    """The judge's reading of an instruction against its tests."""

    verdict: Literal["ok", "underspecified", "leak"] = Field(
        description="ok; underspecified: the tests check something the instruction does "
                    "not ask for; leak: the instruction gives away expected outputs.")
    explanation: str = Field(min_length=1, description="One or two sentences: what is "
                             "missing or leaked, naming the test and the value.")


class ActionAnswer(Answer):
    """One action of a request, and the listed skill that does it."""

    words: str = Field(min_length=1, description="The request's words for this action, "
                       "quoted.")
    skill: str | None = Field(description="Id of the listed skill that does it, or null "
                              "when none does.")
    source: str | None = Field(description="Format it reads (a listed format), or null.")
    target: str | None = Field(description="Format it writes (a listed format), or null.")


class IntentAnswer(Answer):
    """A request read as actions in the order they happen, constraints and a refusal."""

    actions: list[ActionAnswer] = Field(description="The actions, in the order they must "
                                        "happen (not the order they are written).")
    constraints: list[str] = Field(description="The request's words for limits and "
                                   "conditions (keep 5, skipping drafts, older than 30 "
                                   "days); may be empty.")
    refusal: str | None = Field(description="Why no task should be made (it reaches the "
                                "network or real hosts, or asks for harm), or null.")


class TurnAnswer(Answer):
    """One turn of the terminal agent (`taskloom.rollouts.agent`)."""

    thought: str = Field(max_length=300, description="What the last output showed and what "
                         "you do now, in a sentence.")
    commands: list[str] = Field(description="Bash lines to run now, as one script (empty "
                                "when done).")
    done: bool = Field(description="True when the task is complete; commands are then not "
                       "run.")
