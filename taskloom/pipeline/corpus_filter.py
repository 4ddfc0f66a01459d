"""The corpus filter: the last gate between an accepted task and the dataset.

The runner finalizes items strictly in index order and asks `CorpusFilter.admit` about
each accepted one. A task is kept unless it

1. has the same content fingerprint as a kept task (exact duplicate);
2. is, by cosine similarity of its embedding, at or above `diversity.reference_threshold`
   to a task of the reference sets (`--reference DIR`: decontamination against a
   benchmark); or
3. is at or above `diversity.threshold` to a kept task (near-duplicate; with
   `diversity.enabled`).

Because items arrive in index order, the earliest of a group of near-identical tasks is
the one kept, in every run and on every resume. A dropped task gets a failed `duplicate`
verdict naming the task it duplicates. Embeddings (skill path + instruction, see
`taskloom.embedding`) are computed once per task fingerprint and model, in
the driver, one text at a time (so the numbers never depend on what else was ready), and
stored in the run store's `embeddings` table; reference embeddings likewise, once per run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from taskloom.config import DiversityConfig
from taskloom.embedding import TEXT_VERSION, Embedder, embedding_text
from taskloom.generators.protocols import Draft
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.pipeline.stages import draft_fingerprint
from taskloom.pipeline.store import RunStore
from taskloom.validators.near_duplicates import NearDuplicateIndex, NeighbourMatch

if TYPE_CHECKING:
    import numpy as np

# Characters of the embedded text quoted in a duplicate verdict's log.
LOG_EXCERPT = 600


class CorpusFilter:
    """Exact duplicates, near-duplicates and reference matches, decided in item order.

    Args:
        config: The run's diversity settings.
        store: The run store (embeddings are read from and written to it; the driver owns
            it, so only the driver may call this).
        embedder: What embeds texts (needed when `config.embeds` and the store does not
            hold an embedding yet).
    """

    def __init__(self, config: DiversityConfig, store: RunStore,
                 embedder: Embedder | None = None) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.kept: dict[str, str] = {}  # fingerprint -> label of the kept task
        # Embeddings earlier runs of this store computed (read at once: resume is fast).
        self.stored = store.embeddings(config.model, TEXT_VERSION) if config.embeds else {}
        self.index: NearDuplicateIndex | None = None
        self.references: NearDuplicateIndex | None = None
        if config.reference:
            self.references = self._reference_index()

    def admit(self, item: int, draft: Draft) -> Verdict | None:
        """None when the task joins the corpus, else the `duplicate` verdict keeping it out."""
        task = draft.task
        fingerprint = draft_fingerprint(draft)
        vector, excerpt = None, ""
        if self.config.embeds and fingerprint not in self.kept:
            vector = self.vector(fingerprint, task)
            excerpt = embedding_text(task)[:LOG_EXCERPT]
        return self.decide(fingerprint, f"{task.name} (item {item})", vector, excerpt)

    def decide(self, fingerprint: str, label: str, vector: np.ndarray | None,
               excerpt: str = "") -> Verdict | None:
        """The filter's decision on one task, given its fingerprint and embedding.

        Args:
            fingerprint: Content fingerprint of the task.
            label: How verdicts of later tasks name this one if it is kept.
            vector: Its unit embedding (None when the settings need no embeddings).
            excerpt: Start of the embedded text, quoted in a verdict's log.
        """
        if fingerprint in self.kept:
            return _duplicate(f"same content as task {self.kept[fingerprint]}",
                              "exact duplicate: identical content fingerprint "
                              f"{fingerprint}")
        if vector is not None:
            threshold = self.config.reference_threshold or self.config.threshold
            match = self.references.nearest(vector) if self.references is not None else None
            if match is not None and match.similarity >= threshold:
                return _duplicate(f"too similar to reference task {match.label}: cosine "
                                  f"{match.similarity:.4f} >= {threshold}",
                                  _log(match, threshold, excerpt))
            if self.config.enabled:
                match = self.index.nearest(vector) if self.index is not None else None
                if match is not None and match.similarity >= self.config.threshold:
                    return _duplicate(f"near-duplicate of task {match.label}: cosine "
                                      f"{match.similarity:.4f} >= {self.config.threshold}",
                                      _log(match, self.config.threshold, excerpt))
                if self.index is None:
                    self.index = NearDuplicateIndex(len(vector))
                self.index.add(vector, label)
        self.kept[fingerprint] = label
        return None

    def vector(self, fingerprint: str, task: Task) -> np.ndarray:
        """The task's embedding: from the store, else computed (alone) and stored."""
        if fingerprint in self.stored:  # each is needed once: the index keeps kept ones
            return self.stored.pop(fingerprint)
        vector = self._embedder().embed([embedding_text(task)])[0]
        with self.store.transaction():
            self.store.put_embedding(fingerprint, self.config.model, TEXT_VERSION,
                                     vector.tolist())
        return vector

    def _reference_index(self) -> NearDuplicateIndex:
        """Embeddings of every reference task (stored ones reused; the rest in one batch).

        Raises:
            TaskFolderError: A reference path is missing or holds an unreadable task.
        """
        from taskloom.generators.procedural.assemble import task_fingerprint
        from taskloom.harbor import find_task_folders, read_task_folder

        folders = find_task_folders([Path(p) for p in self.config.reference])
        tasks = [(folder, read_task_folder(folder)) for folder in folders]
        fingerprints = [task_fingerprint(task) for _, task in tasks]
        vectors: list = [self.stored.get(f) for f in fingerprints]
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            computed = self._embedder().embed([embedding_text(tasks[i][1]) for i in missing])
            with self.store.transaction():
                for i, vector in zip(missing, computed, strict=True):
                    self.store.put_embedding(fingerprints[i], self.config.model,
                                             TEXT_VERSION, vector.tolist())
                    # Also what a generated task with the same content reuses, as on resume.
                    self.stored[fingerprints[i]] = vectors[i] = vector
        index = NearDuplicateIndex(len(vectors[0]), capacity=len(vectors))
        for (folder, task), vector in zip(tasks, vectors, strict=True):
            index.add(vector, f"{task.name} ({folder})")
        return index


    def _embedder(self) -> Embedder:
        if self.embedder is None:
            raise ValueError("this corpus filter was made without an embedder; pass one")
        return self.embedder


def _duplicate(details: str, log: str) -> Verdict:
    return Verdict(check="duplicate", passed=False, reason=ReasonCode.DUPLICATE,
                   details=details, log=log)


def _log(match: NeighbourMatch, threshold: float, text: str) -> str:
    return (f"most similar: {match.label}\ncosine similarity: {match.similarity:.6f}\n"
            f"threshold: {threshold}\n--- embedded text of this task (start) ---\n{text}")
