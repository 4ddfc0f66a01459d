"""The numpy all-MiniLM-L6-v2 against the real sentence-transformers (torch) model, and its
start-up in a fresh process without torch."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from taskloom.embedding import SentenceTransformerEmbedder
from taskloom.errors import ConfigError
from taskloom.minilm import NumpyMiniLM, load_fast_embedder

LONG_LOG = " ".join(f"2024-05-{d:02d} 12:{d:02d}:07 ERROR payment-service timeout after "
                    f"{d * 37} ms (order #{d * 1009})" for d in range(1, 29))
TEXTS = [
    "",
    " ",
    "a",
    "OK",
    "sort a CSV by price",
    "rotate nginx logs and keep 5",
    "Find the 3 busiest client IPs in /var/log/nginx/access.log",
    "count HTTP status codes in the access log",
    "Extract the ERROR lines from the payment service log!!!",
    "merge the service logs in time order",
    "deduplicate the rows of a research CSV export",
    "convert the JSON sensor readings to CSV with jq",
    "DELETE FROM inventory WHERE updated_at < now() - interval '90 days';",
    "find . -type f -size +100M -exec ls -lh {} \\;",
    "git bisect start && git bisect bad HEAD && git bisect good v1.2.0",
    "chmod 600 data/*.csv; chmod +x scripts/*.sh",
    "?!...,;:--()[]{}<>/\\|@#$%^&*~`'\"",
    "!!!",
    "...",
    "Ünïcödé façade naïve café résumé — “smart quotes” and ‘apostrophes’",
    "日志轮转并保留五个文件",
    "ログファイルを圧縮してください",
    "Сортировать CSV по цене",
    "رتب ملف CSV حسب السعر",
    "emoji 🚀🔥 in a backup task 📦 ✅",
    "tab\tseparated\tvalues\nand a newline",
    "   leading and trailing whitespace   ",
    "MiXeD CaSe ReQuEsT To ReNaMe FiLeS",
    "3.14159 2.71828 1.41421 42 1e-9 0xFF",
    "user@example.com https://example.com/path?q=1&r=2#frag",
    "Create accounts for the new hires listed in new_hires.csv, with home folders and "
    "the groups given in its third column.",
    "change the port setting of a service in its INI config from 8080 to 9090",
    "verify the backup files against their checksum manifest (sha256sum -c)",
    "load a CSV into SQLite and report totals per category, sorted descending",
    "word " * 300,
    LONG_LOG,
    "skills: logs.read -> logs.filter -> files.write\n\n" + LONG_LOG,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    "The quick brown fox jumps over the lazy dog. " * 60,
]


@pytest.fixture(scope="module")
def torch_model():
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def numpy_model():
    return NumpyMiniLM()


def test_the_numpy_encoder_matches_the_torch_model(numpy_model, torch_model):
    assert len(TEXTS) == 40
    assert max(len(numpy_model.tokenizer.encode(t).ids) for t in TEXTS) == 256  # truncated
    found, expected = numpy_model.embed(TEXTS), torch_model.embed(TEXTS)
    assert found.shape == (40, 384) and found.dtype == np.float32
    assert numpy_model.dimensions == torch_model.dimensions == 384
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(found - expected).max()) <= 2e-4
    assert float((found * expected).sum(axis=1).min()) >= 0.9999


def test_nearest_neighbours_rank_the_same(numpy_model, torch_model):
    skills, requests = TEXTS[4:16], TEXTS[28:34]
    ranks = [np.argsort(-(m.embed(requests) @ m.embed(skills).T), axis=1)
             for m in (numpy_model, torch_model)]
    assert (ranks[0] == ranks[1]).all()


def test_batching_and_padding_do_not_change_a_text_s_vector(numpy_model):
    small_batches = NumpyMiniLM(batch_size=7).embed(TEXTS)
    one_by_one = np.concatenate([numpy_model.embed([text]) for text in TEXTS])
    assert float(np.abs(small_batches - one_by_one).max()) <= 1e-5
    assert numpy_model.embed([]).shape == (0, 384)


def test_the_process_wide_encoder_is_loaded_once():
    assert load_fast_embedder() is load_fast_embedder()


def test_a_folder_that_is_not_a_model_says_how_to_fix(tmp_path):
    with pytest.raises(ConfigError) as caught:
        NumpyMiniLM(str(tmp_path / "no-such-model"))
    assert "config.json" in str(caught.value) and "fix:" in str(caught.value)


FRESH = """
import json, sys
from taskloom.minilm import load_fast_embedder
vector = load_fast_embedder().embed(["rotate nginx logs and keep 5"])
print(json.dumps({"shape": vector.shape, "loaded": sorted(
    m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)}))
"""


def test_a_fresh_process_embeds_without_torch(capsys):
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          check=True, timeout=120)
    seconds = time.perf_counter() - started
    report = json.loads(done.stdout)
    assert report == {"shape": [1, 384], "loaded": []}
    with capsys.disabled():
        print(f"\nfresh process: import taskloom.minilm + load + embed one request: "
              f"{seconds:.2f} s wall")
