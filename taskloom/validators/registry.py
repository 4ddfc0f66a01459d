"""The table of checks: every validator, in the order they run, with its reason codes.

| check | needs | reasons | what passes |
|---|---|---|---|
| structure | - | structure | task.toml, instruction, tests, solution present; sizes sane |
| build | structure | build | the environment builds (or is set up) within its limit |
| nop | build | trivial, timeout, verifier | the untouched environment gets reward 0 |
| oracle | build | oracle-fails, flaky, timeout, verifier | solve.sh gets reward 1, R times |
| alternatives | build | over-specified, timeout, verifier | each alternatives/*.sh gets 1 |
| mutations | build | weak-tests, verifier | solve.sh minus any marked step gets 0 |
| tamper | build | hackable | no probe that does no part of the task earns a reward |
| leakage | structure | leak | no test/solution file in context or image; no answer given away |
| judge | structure | underspecified, leak, verifier | a model finds the instruction complete |

`select` turns a selection (`--checks`, `validation.checks`) into validators: empty means
the defaults (every check but the judge); names prefixed with `+` or `-` edit the defaults;
plain names are the exact set. Every selected check brings the checks it needs. A new
check is one module with one `Validator` and a `register` call (or a line here).
"""

from __future__ import annotations

from taskloom.errors import ConfigError
from taskloom.validators.alternatives import AlternativesCheck
from taskloom.validators.build import BuildCheck
from taskloom.validators.judge import JudgeCheck
from taskloom.validators.leakage import LeakageCheck
from taskloom.validators.mutations import MutationCheck
from taskloom.validators.nop import NopCheck
from taskloom.validators.oracle import OracleCheck
from taskloom.validators.protocol import Validator
from taskloom.validators.structure import StructureCheck
from taskloom.validators.tamper import TamperCheck

_TABLE: dict[str, Validator] = {}


def register(validator: Validator, *, before: str | None = None) -> None:
    """Add a check to the table (after the others, or before the check named `before`).

    Raises:
        ValueError: A check of that name is registered already.
    """
    if validator.name in _TABLE:
        raise ValueError(f"a check named {validator.name!r} is registered already")
    entries = list(_TABLE.items())
    position = next((i for i, (name, _) in enumerate(entries) if name == before), len(entries))
    entries.insert(position, (validator.name, validator))
    _TABLE.clear()
    _TABLE.update(entries)


def unregister(name: str) -> None:
    """Remove a check from the table (a test that registered one cleans up)."""
    _TABLE.pop(name, None)


def registered() -> tuple[Validator, ...]:
    """Every check, in the order they run."""
    return tuple(_TABLE.values())


def default_checks() -> tuple[str, ...]:
    """Names of the checks that run when nothing is selected."""
    return tuple(name for name, validator in _TABLE.items() if validator.default)


def select(checks: tuple[str, ...] | list[str] = (), *,
           field: str = "validation.checks") -> tuple[Validator, ...]:
    """The validators a selection names, with what they need, in table order.

    Args:
        checks: Empty for the defaults; `+name` / `-name` items edit the defaults; plain
            names are the exact set.
        field: How the selection is named in errors (`--checks` on the command line).

    Raises:
        ConfigError: An unknown check, a mix of plain and +/- names, or a removed check
            that a selected one needs.
    """
    items = [item.strip() for item in checks if item.strip()]
    edits = [item for item in items if item[0] in "+-"]
    if edits and len(edits) != len(items):
        raise ConfigError(f"mixes check names with +/- edits: {', '.join(items)}",
                          field=field, fix="either name every check to run "
                          "(structure,build,nop) or edit the defaults (+judge,-mutations)")
    for item in items:
        _known(item.lstrip("+-"), field)
    if edits:
        chosen = set(default_checks()) | {e[1:] for e in edits if e[0] == "+"}
        removed = {e[1:] for e in edits if e[0] == "-"}
        chosen -= removed
    else:
        chosen, removed = set(items or default_checks()), set()
    pending = list(chosen)
    while pending:
        for need in _TABLE[pending.pop()].needs:
            if need in removed:
                raise ConfigError(f"cannot drop {need}: a selected check needs it",
                                  field=field, fix=f"keep {need}, or drop the checks that "
                                  "need it too")
            if need not in chosen:
                chosen.add(need)
                pending.append(need)
    return tuple(validator for name, validator in _TABLE.items() if name in chosen)


def _known(name: str, field: str) -> None:
    if name not in _TABLE:
        raise ConfigError(f"unknown check {name!r}", field=field,
                          fix=f"use some of: {', '.join(_TABLE)}")


for _builtin in (StructureCheck(), BuildCheck(), NopCheck(), OracleCheck(),
                 AlternativesCheck(), MutationCheck(), TamperCheck(), LeakageCheck(), JudgeCheck()):
    register(_builtin)
