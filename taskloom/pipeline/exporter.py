"""Writing a run's dataset: accepted tasks into `tasks/` and the store's `tasks` table.

A resumed run may decide an item differently than an earlier run of the same store did
(another config, a changed filter): the exporter then removes that earlier export (its
row and its folder) or the earlier duplicate verdict, so the dataset on disk is always the
one this run decided.
"""

from __future__ import annotations

import os
import shutil

from taskloom.harbor import write_task_folder
from taskloom.models import Verdict
from taskloom.pipeline.items import ItemState
from taskloom.pipeline.records import ItemStatus
from taskloom.pipeline.store import RunDirectory, RunStore


class Exporter:
    """Exports items of one run, undoing what earlier runs of the store exported otherwise."""

    def __init__(self, directory: RunDirectory, store: RunStore) -> None:
        self.directory = directory
        self.store = store
        self.stored_folders = store.task_folders()
        self.stored_duplicates = store.duplicate_items()

    def export(self, item: ItemState, fingerprint: str) -> None:
        """Write the item's task folder (with its `[metadata.calibration]`) and record it."""
        task = item.draft.task
        if item.calibration is not None:
            metadata = {**task.config.metadata, "calibration": item.calibration.metadata()}
            task = task.model_copy(update={"config": task.config.model_copy(
                update={"metadata": metadata})})
        folder = self.directory.tasks / task.name
        write_task_folder(task, folder)
        relative = os.path.relpath(folder, self.directory.root)
        self._drop_stale_export(item.index, keep=relative)
        self.keep(item.index)
        blueprint = item.blueprint
        with self.store.transaction():
            self.store.put_task(item=item.index, task_id=task.name, folder=relative,
                                fingerprint=fingerprint, scenario=blueprint.scenario,
                                skills=list(blueprint.path),
                                categories=list(task.config.metadata.get("categories", [])),
                                difficulty=blueprint.difficulty.model_dump(),
                                round_=item.round)

    def duplicate(self, item: ItemState, verdict: Verdict) -> None:
        """Record that the corpus filter dropped the item, and forget an earlier export."""
        with self.store.transaction():
            self.store.put_item(item.index, status=ItemStatus.DUPLICATE, reason=verdict.details)
            self.store.put_filter_verdict(item.index, item.round, item.draft.task.name, verdict)
        self._drop_stale_export(item.index)

    def left_out(self, index: int) -> None:
        """An item that is not in the dataset: forget its earlier export or duplicate verdict."""
        self._drop_stale_export(index)
        self.keep(index)

    def keep(self, index: int) -> None:
        """Forget an earlier duplicate verdict of an item the filter did not drop now."""
        if index in self.stored_duplicates:
            self.stored_duplicates.discard(index)
            with self.store.transaction():
                self.store.put_filter_verdict(index, 0, "", None)

    def _drop_stale_export(self, index: int, keep: str | None = None) -> None:
        """Forget an earlier run's export of an item: its tasks row and folder.

        `keep` is the folder the item is exported to now: its row is then replaced by the
        caller and only a folder of another name is removed.
        """
        folder = self.stored_folders.pop(index, None)
        if folder is None:
            return
        if keep is None:
            with self.store.transaction():
                self.store.drop_task(index)
        if folder != keep:
            stale = (self.directory.root / folder).resolve()
            if stale.parent == self.directory.tasks.resolve() and stale.is_dir():
                shutil.rmtree(stale)
