"""Validate Harbor task folders and write the JSON report: what `taskloom validate` does.

`validate_folders` validates task folders (`taskloom.harbor.find_task_folders` expands
paths into them) on a pool of workers in a sandbox runtime and returns the reports in
folder order; `ValidationRun.write` writes the report file:

```json
{"summary": {"tasks": 3, "accepted": 2, "rejected": 1, "reasons": {"trivial": 1},
             "seconds": 12.3},
 "config": {...the ValidationConfig...},
 "tasks": [{...a TaskReport..., "accepted": true}, ...]}
```
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from taskloom.config import ValidationConfig
from taskloom.models import TaskReport
from taskloom.sandbox.runtime import Runtime
from taskloom.validators.engine import selected_checks, validate_all, validate_folder

if TYPE_CHECKING:
    from taskloom.generators.llm.client import ChatModel


@dataclass(frozen=True)
class ValidationRun:
    """The reports of one `validate` call, in the order the folders were given."""

    reports: tuple[TaskReport, ...]
    config: ValidationConfig
    seconds: float

    @property
    def accepted(self) -> int:
        """Tasks every check accepted."""
        return sum(report.accepted for report in self.reports)

    @property
    def reasons(self) -> dict[str, int]:
        """How many failed verdicts each reason code has, most frequent first."""
        return dict(Counter(r for report in self.reports for r in report.reasons)
                    .most_common())

    def document(self) -> dict:
        """The JSON report."""
        return {
            "summary": {"tasks": len(self.reports), "accepted": self.accepted,
                        "rejected": len(self.reports) - self.accepted,
                        "reasons": self.reasons, "seconds": round(self.seconds, 2)},
            "config": self.config.model_dump(mode="json"),
            "tasks": [{**r.model_dump(mode="json"), "accepted": r.accepted}
                      for r in self.reports],
        }

    def write(self, path: Path) -> Path:
        """Write the JSON report to `path`."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.document(), indent=2) + "\n", encoding="utf-8")
        return path


def validate_folders(folders: list[Path], runtime: Runtime, config: ValidationConfig, *,
                     workers: int = 2, chat: ChatModel | None = None,
                     on_report: Callable[[TaskReport], None] | None = None) -> ValidationRun:
    """Validate task folders; the reports come back in the folders' order.

    `on_report` sees each report as it finishes (for progress). On Ctrl-C the runtime is
    closed first, so no sandbox is left.

    Raises:
        ConfigError: The check selection is wrong, or needs a model and has none.
    """
    selected_checks(config, chat)  # before any sandbox starts
    started = time.monotonic()
    reports = []
    jobs = (lambda f=folder: validate_folder(f, runtime, config, chat=chat)
            for folder in folders)
    for report in validate_all(jobs, runtime, workers=workers):
        reports.append(report)
        if on_report is not None:
            on_report(report)
    order = {str(folder): index for index, folder in enumerate(folders)}
    reports.sort(key=lambda r: order.get(r.source, 0))
    return ValidationRun(reports=tuple(reports), config=config,
                         seconds=time.monotonic() - started)
