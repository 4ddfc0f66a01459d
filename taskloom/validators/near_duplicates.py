"""Near-duplicate search over unit embedding vectors, in linear memory.

The corpus filter keeps the earliest task of every group of near-identical tasks: items
arrive in index order, and an item whose cosine similarity to some *kept* task reaches the
threshold is dropped, naming the most similar kept task. `NearDuplicateIndex` holds the
kept vectors (n x dim float32, grown by doubling) and answers "which kept vector is closest
to this one" with one matrix-vector product, so no n x n similarity matrix ever exists:
10,000 tasks of all-MiniLM-L6-v2 take 15 MiB.

Example:
    >>> import numpy as np
    >>> index = NearDuplicateIndex(dimensions=2)
    >>> index.add(np.array([1.0, 0.0], dtype=np.float32), "task-a")
    >>> index.nearest(np.array([0.6, 0.8], dtype=np.float32))
    NeighbourMatch(label='task-a', position=0, similarity=0.6000000238418579)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from taskloom.models import Frozen

if TYPE_CHECKING:
    import numpy as np


class NeighbourMatch(Frozen):
    """The stored vector most similar to a query."""

    label: str = Field(description="What the stored vector belongs to (a task id).")
    position: int = Field(ge=0, description="Insertion order of the stored vector.")
    similarity: float = Field(description="Cosine similarity to the query.")


class NearDuplicateIndex:
    """Unit vectors in insertion order, searched exhaustively by cosine similarity.

    Args:
        dimensions: Length of every vector.
        capacity: Rows allocated up front (the buffer doubles when full).
    """

    def __init__(self, dimensions: int, capacity: int = 1024) -> None:
        import numpy as np

        self.dimensions = dimensions
        self._vectors = np.zeros((max(1, capacity), dimensions), dtype=np.float32)
        self._labels: list[str] = []

    def __len__(self) -> int:
        return len(self._labels)

    @property
    def nbytes(self) -> int:
        """Bytes held by the vector buffer."""
        return int(self._vectors.nbytes)

    def add(self, vector: np.ndarray, label: str) -> None:
        """Store a unit vector under `label`."""
        import numpy as np

        count = len(self._labels)
        if count == len(self._vectors):
            grown = np.zeros((2 * count, self.dimensions), dtype=np.float32)
            grown[:count] = self._vectors
            self._vectors = grown
        self._vectors[count] = vector
        self._labels.append(label)

    def nearest(self, vector: np.ndarray) -> NeighbourMatch | None:
        """The most similar stored vector (the earliest on a tie), or None when empty."""
        count = len(self._labels)
        if count == 0:
            return None
        similarities = self._vectors[:count] @ vector
        position = int(similarities.argmax())
        return NeighbourMatch(label=self._labels[position], position=position,
                     similarity=float(similarities[position]))


def greedy_near_duplicates(vectors: np.ndarray, threshold: float,
                           labels: Sequence[str] | None = None) -> list[NeighbourMatch | None]:
    """Filter rows in order, as the run's corpus filter does.

    Args:
        vectors: (n, dim) unit vectors, in item order.
        threshold: Cosine similarity at or above which a row duplicates a kept row.
        labels: A name per row (default: the row number).

    Returns:
        Per row: None when it is kept, else the kept row it duplicates.
    """
    index = NearDuplicateIndex(vectors.shape[1], capacity=max(1, len(vectors)))
    names = list(labels) if labels is not None else [str(i) for i in range(len(vectors))]
    decisions: list[NeighbourMatch | None] = []
    for name, vector in zip(names, vectors, strict=True):
        match = index.nearest(vector)
        if match is not None and match.similarity >= threshold:
            decisions.append(match)
            continue
        index.add(vector, name)
        decisions.append(None)
    return decisions
