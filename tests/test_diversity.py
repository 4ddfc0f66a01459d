"""Embeddings, the near-duplicate filter, decontamination and coverage steering, without a
sandbox: the real all-MiniLM-L6-v2 model, real procedural drafts, real DuckDB run stores."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from taskloom.config import DiversityConfig, load_run_config
from taskloom.embedding import (
    DEFAULT_MODEL,
    TEXT_VERSION,
    SentenceTransformerEmbedder,
    embedding_text,
    load_embedder,
)
from taskloom.errors import ConfigError, NoDraft, TaskFolderError
from taskloom.generators.backends import backend_for
from taskloom.harbor import write_task_folder
from taskloom.models import ReasonCode
from taskloom.pipeline import stages
from taskloom.pipeline.corpus_filter import CorpusFilter
from taskloom.pipeline.store import RunStore
from taskloom.skill_graph.steering import CoverageSnapshot, CoverageTracker
from taskloom.validators.near_duplicates import NearDuplicateIndex, greedy_near_duplicates


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


@pytest.fixture(scope="module")
def drafts():
    """Procedural drafts of items 0..39 (plan + generate; not validated)."""
    backend = backend_for(load_run_config(None, ["seed=11", "diversity.steering=false"]))
    made = []
    for index in range(40):
        try:
            made.append(backend.generator.generate(backend.planner.plan(index)))
        except NoDraft:
            continue
    assert len(made) >= 30
    return made


@pytest.fixture(scope="module")
def vectors(drafts, embedder):
    return np.stack([embedder.embed([embedding_text(d.task)])[0] for d in drafts])


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_embedder_gives_unit_vectors_that_rank_paraphrases_first(embedder):
    texts = ["Count the lines of /var/log/app.log that contain ERROR and write the number "
             "to /tmp/out.txt",
             "Write to /tmp/out.txt how many lines in /var/log/app.log contain ERROR",
             "Create a git branch named release and tag its last commit v1.0"]
    found = embedder.embed(texts)
    assert found.shape == (3, 384) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(found[0] @ found[1]), float(found[0] @ found[2])
    assert paraphrase > 0.8 and paraphrase - unrelated > 0.4
    again = embedder.embed(texts[:1])[0]
    assert again.tobytes() == embedder.embed(texts[:1])[0].tobytes()  # resume-safe


def test_embedding_text_puts_the_skill_path_first(drafts):
    draft = drafts[0]
    text = embedding_text(draft.task)
    assert text.startswith("skills: " + " -> ".join(draft.blueprint.path) + "\n\n")
    assert text.endswith(draft.task.instruction.strip())


def test_a_model_that_is_not_there_says_how_to_fix(tmp_path):
    with pytest.raises(ConfigError) as caught:
        SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))
    assert "diversity.model" in str(caught.value) and "fix:" in str(caught.value)


def brute_force(vectors: np.ndarray, threshold: float) -> list[int | None]:
    """Keep-the-earliest from the full similarity matrix: the kept row a row duplicates."""
    similarities = vectors @ vectors.T
    kept: list[int] = []
    decisions: list[int | None] = []
    for j in range(len(vectors)):
        best = max(kept, key=lambda i: (similarities[j, i], -i), default=None)
        if best is not None and similarities[j, best] >= threshold:
            decisions.append(best)
        else:
            kept.append(j)
            decisions.append(None)
    return decisions


def test_greedy_filter_equals_the_full_matrix_on_real_embeddings(vectors):
    pairs = sorted(float(vectors[i] @ vectors[j])
                   for i, j in itertools.combinations(range(len(vectors)), 2))
    dropped_counts = set()
    for quantile in (0.5, 0.9, 0.99, 0.999):
        # Between two observed similarities: the index and the full matrix sum the dot
        # products in different orders, so a pair exactly at the threshold is a coin flip.
        k = int(quantile * (len(pairs) - 1))
        threshold = (pairs[k] + pairs[k + 1]) / 2
        ours = greedy_near_duplicates(vectors, threshold)
        expected = brute_force(vectors, threshold)
        assert [None if m is None else int(m.label) for m in ours] == expected
        for j, match in enumerate(ours):
            if match is not None:
                assert int(match.label) < j and match.similarity >= threshold
        kept = [j for j, m in enumerate(ours) if m is None]
        assert all(float(vectors[a] @ vectors[b]) < threshold
                   for a, b in itertools.combinations(kept, 2))
        dropped_counts.add(sum(m is not None for m in ours))
    assert len(dropped_counts) > 1  # the thresholds made a difference


def test_index_grows_past_its_capacity_and_keeps_order(vectors):
    index = NearDuplicateIndex(vectors.shape[1], capacity=2)
    for position, vector in enumerate(vectors):
        index.add(vector, f"t{position}")
    assert len(index) == len(vectors)
    for position in (0, 7, len(vectors) - 1):
        match = index.nearest(vectors[position])
        assert match.label == f"t{position}" and match.similarity == pytest.approx(1.0)


def test_corpus_filter_decides_in_order_and_reuses_stored_embeddings(tmp_path, drafts,
                                                                      vectors, embedder):
    nearest = [max(float(vectors[j] @ vectors[i]) for i in range(j)) for j in
               range(1, len(vectors))]
    # About half the later ones collide; the threshold lies halfway between two observed
    # similarities, so float rounding (a matrix product here, dot products there) cannot
    # put one on either side.
    ordered = sorted(set(nearest))
    middle = len(ordered) // 2
    threshold = (ordered[middle - 1] + ordered[middle]) / 2
    config = DiversityConfig(enabled=True, threshold=threshold)
    counting = Counting(embedder)
    with RunStore(tmp_path / "run.duckdb") as store:
        corpus_filter = CorpusFilter(config, store, counting)
        verdicts = [corpus_filter.admit(i, d) for i, d in enumerate(drafts)]
        assert counting.texts == len(drafts)
        rows = dict(store.query("SELECT fingerprint, vector FROM embeddings WHERE model = ? "
                                "AND recipe = ?", [DEFAULT_MODEL, TEXT_VERSION]))
    expected = brute_force(vectors, threshold)
    assert [v is not None for v in verdicts] == [e is not None for e in expected]
    assert any(verdicts) and not all(verdicts)
    for verdict, match in zip(verdicts, expected, strict=True):
        if verdict is None:
            continue
        assert verdict.check == "duplicate" and verdict.reason == ReasonCode.DUPLICATE
        assert not verdict.passed
        assert f"{drafts[match].task.name} (item {match})" in verdict.details
        assert "near-duplicate of task" in verdict.details and "cosine" in verdict.log
    for draft, vector in zip(drafts, vectors, strict=True):  # stored bit-for-bit
        stored = np.asarray(rows[stages.draft_fingerprint(draft)], dtype=np.float32)
        assert stored.tobytes() == vector.tobytes()

    counting = Counting(embedder)  # a resumed run: same decisions, nothing embedded again
    with RunStore(tmp_path / "run.duckdb") as store:
        corpus_filter = CorpusFilter(config, store, counting)
        again = [corpus_filter.admit(i, d) for i, d in enumerate(drafts)]
    assert counting.texts == 0
    assert again == verdicts


def test_exact_duplicates_are_dropped_without_embeddings(tmp_path, drafts):
    with RunStore(tmp_path / "run.duckdb") as store:
        # The near-duplicate filter off (its default is on wherever the embed extra is):
        # fingerprints need no embedder.
        corpus_filter = CorpusFilter(DiversityConfig(enabled=False), store)
        assert corpus_filter.admit(0, drafts[0]) is None
        assert corpus_filter.admit(1, drafts[1]) is None
        verdict = corpus_filter.admit(2, drafts[0])
        assert store.query("SELECT count(*) FROM embeddings")[0][0] == 0
    assert verdict.reason == ReasonCode.DUPLICATE
    assert f"same content as task {drafts[0].task.name} (item 0)" == verdict.details


def test_reference_tasks_decontaminate(tmp_path, drafts, embedder):
    reference = tmp_path / "benchmark"
    write_task_folder(drafts[3].task, reference / drafts[3].task.name)
    write_task_folder(drafts[5].task, reference / drafts[5].task.name)
    config = DiversityConfig(reference=(str(reference),), reference_threshold=0.999)
    counting = Counting(embedder)
    with RunStore(tmp_path / "run.duckdb") as store:
        corpus_filter = CorpusFilter(config, store, counting)
        assert counting.texts == 2  # the reference set, embedded once
        verdicts = {i: corpus_filter.admit(i, d) for i, d in enumerate(drafts)}
        stored = store.query("SELECT count(*) FROM embeddings")[0][0]
    assert counting.texts == 2 + len(drafts) - 2  # reference copies reuse their vectors
    assert stored == len(drafts)
    flagged = {i for i, v in verdicts.items() if v is not None}
    assert flagged == {3, 5}
    verdict = verdicts[3]
    assert verdict.reason == ReasonCode.DUPLICATE and verdict.check == "duplicate"
    assert f"too similar to reference task {drafts[3].task.name}" in verdict.details
    assert str(reference / drafts[3].task.name) in verdict.details
    assert "cosine 1.0000" in verdict.details


def test_a_missing_reference_folder_is_named(tmp_path, embedder):
    missing = tmp_path / "nope"
    with RunStore(tmp_path / "run.duckdb") as store, \
            pytest.raises(TaskFolderError, match=str(missing)):
        CorpusFilter(DiversityConfig(reference=(str(missing),)), store, embedder)


# -- coverage steering ---------------------------------------------------------------------

def test_tracker_counts_tasks_not_repeats():
    tracker = CoverageTracker()
    tracker.add(("a", "b", "a"), "s1")
    tracker.add(("b", "c"), "s2")
    snapshot = tracker.snapshot(before=7)
    assert snapshot.before == 7 and snapshot.tasks == 2
    assert snapshot.skills == {"a": 1, "b": 2, "c": 1}
    assert snapshot.transition_uses("a", "b") == 1 and snapshot.transition_uses("b", "a") == 1
    assert snapshot.transition_uses("b", "c") == 1 and snapshot.transition_uses("c", "b") == 0
    assert snapshot.scenarios == {"s1": 1, "s2": 1}


def test_steering_moves_plans_away_from_covered_skills():
    config = load_run_config(None, ["seed=4"])
    items = range(60)
    planner = backend_for(config).planner
    plain = [planner.plan(i) for i in items]
    usage = Counter(s for blueprint in plain for s in set(blueprint.path))
    common = [skill for skill, _ in usage.most_common(12)]
    tracker = CoverageTracker()
    for blueprint in plain:  # pretend the corpus already holds these paths many times
        for _ in range(20):
            tracker.add(blueprint.path, blueprint.scenario)
    snapshot = tracker.snapshot(before=0)
    steered = [planner.plan(i, snapshot) for i in items]
    plain_common = sum(s in common for b in plain for s in b.path)
    steered_common = sum(s in common for b in steered for s in b.path)
    assert steered_common < 0.85 * plain_common
    plain_pairs = {p for b in plain for p in itertools.pairwise(b.path)}
    steered_new = {p for b in steered for p in itertools.pairwise(b.path)} - plain_pairs
    assert len(steered_new) > 30  # transitions the corpus lacked
    # steering chooses among equally good paths: it does not shorten workflows
    assert sum(len(b.path) for b in steered) >= 0.95 * sum(len(b.path) for b in plain)
    assert [planner.plan(i, snapshot) for i in items[:5]] == steered[:5]


def test_the_snapshot_is_part_of_the_plan_key():
    keys = stages.StageKeys(load_run_config(None, ["seed=4"]))
    empty = CoverageSnapshot(before=0, tasks=0)
    some = CoverageSnapshot(before=3, tasks=1, skills={"csv.sort_rows": 1})
    assert keys.plan(5) == keys.plan(5, None)  # steering off: the key of earlier versions
    assert len({keys.plan(5), keys.plan(5, empty), keys.plan(5, some)}) == 3
    assert keys.plan(5, some) == keys.plan(5, CoverageSnapshot.model_validate(
        some.model_dump(mode="json")))
    stronger = stages.StageKeys(load_run_config(None, ["seed=4",
                                                       "diversity.steering_strength=2"]))
    assert stronger.plan(5, some) != keys.plan(5, some)


def test_diversity_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"diversity\.threshold"):
        load_run_config(None, ["diversity.threshold=1.5"])
    with pytest.raises(ConfigError, match=r"diversity\.steering_lag"):
        load_run_config(None, ["diversity.steering_lag=0"])
    config = load_run_config(None, ["diversity.reference=['/data/bench']"])
    assert config.diversity.reference == ("/data/bench",) and config.diversity.embeds


def test_the_filter_is_on_by_default_exactly_where_the_embed_extra_is_installed(monkeypatch):
    import importlib.util

    from taskloom.config import load_run_config

    assert DiversityConfig().enabled == (importlib.util.find_spec("sentence_transformers")
                                         is not None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert DiversityConfig().enabled is False
    config = load_run_config(None)  # what a run stores: the decision, not "auto"
    assert config.model_dump()["diversity"]["enabled"] is False
    assert load_run_config(None, stored=config.model_dump(mode="json")).diversity.enabled \
        is False
