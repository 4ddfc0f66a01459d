"""judge: a model reads whether the instruction specifies what the tests check, and no more.

Optional (`--checks +judge`, `validation.checks = ["+judge"]`); it runs last, only on a
task that passed every other check, because it is the one check that costs money. Verdicts:

- passed: the model found the instruction complete and free of answers;
- `underspecified`: a test checks a path, name, format or rule the instruction omits;
- `leak`: the instruction gives away the expected outputs;
- `verifier`: the model gave no usable answer twice, so the task was not judged.
"""

from __future__ import annotations

import time

from taskloom.models import ReasonCode, Task, Verdict
from taskloom.validators.protocol import Evidence

NAME = "judge"
SHOWN_TESTS_CHARS = 6000
ATTEMPTS = 2


class LLMJudge:
    """The judge prompt on a `ChatModel` (in a run: the validation stage's session).

    Example:
        >>> LLMJudge(chat).judge(task).reason   # doctest: +SKIP
        'underspecified'
    """

    def __init__(self, chat) -> None:
        self.chat = chat

    def judge(self, task: Task) -> Verdict:
        """A `judge` verdict; a server that is down raises `ModelUnavailable`."""
        from taskloom.errors import InvalidAnswer, RequestRejected
        from taskloom.generators.llm.answers import JudgeAnswer
        from taskloom.generators.llm.client import ask
        from taskloom.generators.llm.prompts import prompt

        started = time.monotonic()
        tests = "\n\n".join(f"# tests/{f.path}\n" + f.content.decode("utf-8", "replace")
                            for f in task.tests if f.path.endswith(".py"))
        if not tests:
            tests = "\n\n".join(f"# tests/{f.path}\n" + f.content.decode("utf-8", "replace")
                                for f in task.tests)
        problem = ""
        for attempt in range(ATTEMPTS):
            request = prompt("judge").request(JudgeAnswer, attempt=attempt, seed=attempt,
                                              instruction=task.instruction.strip(),
                                              tests=tests[:SHOWN_TESTS_CHARS])
            try:
                answer = ask(self.chat, request, JudgeAnswer)
            except (InvalidAnswer, RequestRejected) as exc:
                problem = str(exc)
                continue
            seconds = round(time.monotonic() - started, 3)
            if answer.verdict == "ok":
                return Verdict(check=NAME, passed=True, seconds=seconds,
                               details=f"the judge found the instruction complete: "
                                       f"{answer.explanation}")
            reason = ReasonCode.UNDERSPECIFIED if answer.verdict == "underspecified" \
                else ReasonCode.LEAK
            fix = "say in the instruction what the tests check" \
                if reason is ReasonCode.UNDERSPECIFIED else \
                "remove the expected outputs from the instruction"
            return Verdict(check=NAME, passed=False, reason=reason, seconds=seconds,
                           details=f"the LLM judge says the instruction is {answer.verdict}: "
                                   f"{answer.explanation}; {fix}",
                           log=answer.model_dump_json())
        return Verdict(check=NAME, passed=False, reason=ReasonCode.VERIFIER,
                       seconds=round(time.monotonic() - started, 3),
                       details=f"the LLM judge gave no usable answer in {ATTEMPTS} tries "
                               f"({problem}); the instruction was not judged",
                       log=problem)


class JudgeCheck:
    """The run's model reads the instruction against the tests (`LLMJudge`)."""

    name = NAME
    reasons = (ReasonCode.UNDERSPECIFIED, ReasonCode.LEAK, ReasonCode.VERIFIER)
    needs = ("structure",)
    default = False
    needs_model = True

    def check(self, evidence: Evidence) -> Verdict | None:
        """The judge's verdict, asked only when every earlier check passed."""
        if evidence.chat is None or not all(v.passed for v in evidence.verdicts):
            return None
        return LLMJudge(evidence.chat).judge(evidence.task)
