"""The default sentence encoder, all-MiniLM-L6-v2, run in numpy: ready in under a second.

`taskloom make` embeds one request per process; loading the model through
sentence-transformers imports torch first, which takes seconds. `NumpyMiniLM` reads the same
weights (`model.safetensors`) and runs the same BERT forward pass in float32 numpy, then the
same mean pooling and L2 normalization, so its vectors match the torch model's to about 1e-6
per component (tests/test_minilm.py; benchmarks/request_encoder.py times both). It is an
`Embedder`, usable wherever one is.

It runs any BERT folder saved by sentence-transformers with mean pooling (sizes are read from
its `config.json`); other architectures need `SentenceTransformerEmbedder`.

Example:
    >>> embedder = load_fast_embedder()                      # doctest: +SKIP
    >>> embedder.embed(["sort a CSV by price"]).shape         # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from scipy.special import erf
from threadpoolctl import ThreadpoolController
from tokenizers import Tokenizer

from taskloom.embedding import DEFAULT_MODEL, resolve_model
from taskloom.errors import ConfigError


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's weights, each matrix stored (inputs, outputs) for `x @ w`."""

    qkv: np.ndarray
    qkv_bias: np.ndarray
    attention_out: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    output_norm: tuple[np.ndarray, np.ndarray]


class NumpyMiniLM:
    """A BERT sentence-transformers model (mean pooling, unit vectors) in numpy on the CPU.

    Args:
        model: `all-MiniLM-L6-v2` (the packaged model) or the path of a model folder.
        threads: BLAS threads while embedding. One, as `SentenceTransformerEmbedder`: the
            same numbers everywhere, the other cores left to the sandboxes, and no threads
            waiting on each other on a busy machine (on two busy cores, two threads made the
            first call on 40 texts 4-8x slower than one thread did).
        batch_size: Texts per forward pass; texts are grouped by token count, so a batch
            pads little.

    Raises:
        MissingExtra: The packaged model is asked for and its package is not installed.
        ConfigError: The folder is missing or holds a model this encoder cannot run.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, threads: int = 1,
                 batch_size: int = 32) -> None:
        folder = Path(resolve_model(model))
        config = _read_json(folder / "config.json")
        _check_supported(folder, config, _read_json(folder / "1_Pooling" / "config.json"))
        self.name = model
        self.threads = threads
        self.batch_size = batch_size
        self.thread_pools = ThreadpoolController()
        self.max_length = int(_read_json(folder / "sentence_bert_config.json")["max_seq_length"])
        self.heads = int(config["num_attention_heads"])
        self.eps = np.float32(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # batches are padded here, to their longest text
        self.tokenizer.enable_truncation(max_length=self.max_length)
        weights = load_file(str(folder / "model.safetensors"))
        self.word_embeddings = weights["embeddings.word_embeddings.weight"]
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]
        # Every text is a single segment: its tokens all have type 0.
        self.type_embedding = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = _norm(weights, "embeddings.LayerNorm")
        self.layers = [_layer(weights, f"encoder.layer.{i}")
                       for i in range(int(config["num_hidden_layers"]))]

    @property
    def dimensions(self) -> int:
        """Length of each vector."""
        return int(self.word_embeddings.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 unit vector per text, as an (n, dim) array, in input order."""
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        vectors = np.empty((len(ids), self.dimensions), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        with self.thread_pools.limit(limits=self.threads, user_api="blas"):
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                vectors[batch] = self._encode([ids[i] for i in batch])
        return vectors

    def _encode(self, batch: list[list[int]]) -> np.ndarray:
        """Unit vectors of a batch of token id lists (mean of the unpadded tokens' states)."""
        length = max(len(ids) for ids in batch)
        token_ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, ids in enumerate(batch):
            token_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1.0
        states = (self.word_embeddings[token_ids] + self.position_embeddings[:length]
                  + self.type_embedding)
        # One row per token: the linear maps are then one matrix product each, not one per text.
        states = _layer_norm(states.reshape(-1, self.dimensions), self.embedding_norm, self.eps)
        # Added to the attention scores: padding gets no weight (as in transformers).
        padding = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            states = self._layer(states, padding, layer)
        summed = np.einsum("btd,bt->bd", states.reshape(len(batch), length, -1), mask)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, np.float32(1e-12))

    def _layer(self, states: np.ndarray, padding: np.ndarray, layer: _Layer) -> np.ndarray:
        """One encoder layer on (tokens, hidden) states: self-attention, then feed-forward."""
        batch, length = padding.shape[0], padding.shape[-1]
        hidden = states.shape[1]
        size = hidden // self.heads
        qkv = (states @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, self.heads, size)
        query, key, value = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, length, size)
        scores = (query @ key.transpose(0, 1, 3, 2)) * np.float32(1.0 / math.sqrt(size))
        scores += padding
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ value).transpose(0, 2, 1, 3).reshape(-1, hidden)
        attended = context @ layer.attention_out + layer.attention_out_bias
        states = _layer_norm(states + attended, layer.attention_norm, self.eps)
        inner = states @ layer.up + layer.up_bias
        inner = 0.5 * inner * (1.0 + erf(inner * np.float32(1.0 / math.sqrt(2.0))))  # exact GELU
        return _layer_norm(states + inner @ layer.down + layer.down_bias, layer.output_norm,
                           self.eps)


def _layer_norm(x: np.ndarray, norm: tuple[np.ndarray, np.ndarray],
                eps: np.float32) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    weight, bias = norm
    return centred / np.sqrt(variance + eps) * weight + bias


def _norm(weights: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    return weights[f"{name}.weight"], weights[f"{name}.bias"]


def _layer(weights: dict[str, np.ndarray], name: str) -> _Layer:
    """A layer's weights; torch stores a linear map as (outputs, inputs), so each is transposed."""
    def linear(part: str) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(weights[f"{name}.{part}.weight"].T), \
            weights[f"{name}.{part}.bias"]

    parts = [linear(f"attention.self.{p}") for p in ("query", "key", "value")]
    attention_out, attention_out_bias = linear("attention.output.dense")
    up, up_bias = linear("intermediate.dense")
    down, down_bias = linear("output.dense")
    return _Layer(qkv=np.ascontiguousarray(np.concatenate([w for w, _ in parts], axis=1)),
                  qkv_bias=np.concatenate([b for _, b in parts]),
                  attention_out=attention_out, attention_out_bias=attention_out_bias,
                  attention_norm=_norm(weights, f"{name}.attention.output.LayerNorm"),
                  up=up, up_bias=up_bias, down=down, down_bias=down_bias,
                  output_norm=_norm(weights, f"{name}.output.LayerNorm"))


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("not a sentence-transformers model folder (file missing)", path=path,
                          field="diversity.model",
                          fix="pass a folder saved by sentence-transformers") from exc


def _check_supported(folder: Path, config: dict, pooling: dict) -> None:
    """Fails unless the folder holds what the forward pass here computes."""
    wanted = {"model_type": "bert", "hidden_act": "gelu",
              "position_embedding_type": "absolute"}
    for field, value in wanted.items():
        if config.get(field, value) != value:
            raise ConfigError(f"{field} is {config[field]!r}; the numpy encoder runs {value!r} "
                              "only", path=folder / "config.json", field=field,
                              fix="use SentenceTransformerEmbedder for this model")
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        raise ConfigError(f"pooling is {modes}; the numpy encoder does mean pooling only",
                          path=folder / "1_Pooling" / "config.json", field="pooling_mode",
                          fix="use SentenceTransformerEmbedder for this model")


_ENCODER: NumpyMiniLM | None = None
_LOCK = threading.Lock()


def load_fast_embedder() -> NumpyMiniLM:
    """The process's numpy encoder of the packaged all-MiniLM-L6-v2 (loaded once)."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            _ENCODER = NumpyMiniLM()
        return _ENCODER
