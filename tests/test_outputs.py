"""Exports (Harbor, JSONL, Parquet, Hugging Face), import round trips, the Hub push boundary
and the HTML report rendered in headless Chromium, on a real run.

The run is made by the real runner (Docker sandboxes, a DuckDB store, task folders). The
procedural generator's drafts all pass validation, so the fixture adds what a real corpus
also has: a rejected item (a copy of a task whose solution does nothing, validated for
real) and a duplicate, both recorded through the store API the runner writes with.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from taskloom.config import ValidationConfig, load_run_config
from taskloom.errors import InfrastructureError, InputError
from taskloom.models import ReasonCode
from taskloom.outputs.dataset import (
    HubUpload,
    hub_token,
    hub_upload,
    import_dataset,
    push_to_hub,
    read_rows,
)
from taskloom.outputs.export import export_run
from taskloom.outputs.rows import TaskRow, arrow_schema
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore

pytestmark = pytest.mark.docker
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]
# No test here may reach the Hugging Face Hub: offline mode, and an endpoint on loopback
# where nothing listens, in case a library ignored offline mode.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_ENDPOINT": "http://127.0.0.1:9"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root: bytes and permission bits."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file()}


def items_left_out(run_dir: Path) -> int:
    """Items of the run that are not exported (over-target, rejected, duplicate)."""
    with RunStore(run_dir / "run.duckdb", read_only=True) as store:
        return store.query("SELECT count(*) FROM items WHERE item NOT IN "
                           "(SELECT item FROM tasks)")[0][0]


def harbor_digest_of(folder: Path) -> str:
    """Harbor's task content hash, computed from the folder on disk (independently of
    taskloom's implementation): sha256 over sorted `path NUL sha256 LF` records."""
    records = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and (relative in ("task.toml", "instruction.md", "README.md") or
                               relative.split("/")[0] in ("environment", "solution", "tests")):
            records.append(f"{relative}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return "sha256:" + hashlib.sha256("".join(sorted(records)).encode()).hexdigest()


def assert_pinned_copies(manifest_path: Path, folders: Path, tasks: Path) -> None:
    """`folders` holds a byte-identical copy of every task folder of `tasks` and nothing
    else but the manifest, which pins each by Harbor's content hash of the copy."""
    names = {p.name for p in tasks.iterdir()}
    assert {p.name for p in folders.iterdir() if p.is_dir()} == names
    for name in names:
        assert snapshot(folders / name) == snapshot(tasks / name), name
    manifest = tomllib.loads(manifest_path.read_text())
    assert manifest["schema_version"] == "1.0"
    assert manifest["dataset"]["name"] == "acme/terminal-demo"
    pinned = {entry["name"]: entry["digest"] for entry in manifest["tasks"]}
    assert len(pinned) == len(names) == 3
    for name in names:
        package = tomllib.loads((folders / name / "task.toml").read_text())["task"]["name"]
        assert pinned[package] == harbor_digest_of(folders / name)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, docker_client_ready) -> Path:
    from taskloom.sandbox.docker_runtime import DockerRuntime
    from taskloom.validators.engine import validate_folder

    root = tmp_path_factory.mktemp("outputs")
    out = root / "run"
    summary = Runner(load_run_config(None, ["count=3", "seed=21", "workers=2"]), out).run()
    assert summary.exported == 3
    source = sorted((out / "tasks").iterdir())[0]
    broken = root / "broken" / "broken-copy"
    shutil.copytree(source, broken)
    (broken / "solution" / "solve.sh").write_text("#!/bin/bash\nexit 0\n")
    runtime = DockerRuntime(docker_client_ready)
    try:
        report = validate_folder(broken, runtime, ValidationConfig(repeats=1))
    finally:
        runtime.close()
    assert not report.accepted and ReasonCode.ORACLE_FAILS in report.reasons
    meta = tomllib.loads((source / "task.toml").read_text())["metadata"]
    rejected, duplicate = summary.items, summary.items + 1
    with RunStore(out / "run.duckdb") as store, store.transaction():
        store.put_verdicts(rejected, 0, report.task, report.verdicts)
        common = {"task_id": report.task, "scenario": meta["scenario"],
                  "skills": meta["skills"], "difficulty": meta["difficulty"], "rounds": 0}
        store.put_item(rejected, stage="validate", status="rejected",
                       reason=", ".join(str(r) for r in report.reasons), **common)
        store.put_item(duplicate, stage="validate", status="duplicate",
                       reason="same content as an earlier task", **common)
    return out


@pytest.fixture(scope="module")
def exports(run_dir, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    return {fmt: export_run(run_dir, fmt, root / fmt, name="acme/terminal-demo").out
            for fmt in ("harbor", "jsonl", "parquet", "hf")}


def test_harbor_export_is_the_task_folders_plus_a_pinned_manifest(run_dir, exports):
    out = exports["harbor"]
    tasks = run_dir / "tasks"
    exported = {p.name for p in out.iterdir() if p.is_dir()}
    assert exported == {p.name for p in tasks.iterdir()}
    assert "broken-copy" not in exported
    assert_pinned_copies(out / "dataset.toml", out, tasks)
    header = (out / "dataset.toml").read_text().split("schema_version")[0]
    assert "1 rejected: oracle-fails" in header and "1 duplicate" in header
    card = (out / "README.md").read_text()
    assert "| rejected | oracle-fails | 1 |" in card
    assert "| duplicate | same content as an earlier task | 1 |" in card
    assert "harbor run -p . -a oracle" in card


def test_harbor_export_passes_the_validation_protocol(exports):
    """Harbor's oracle must score 1 and its nop agent 0: exactly what `validate` proves."""
    result = subprocess.run([*TASKLOOM, "validate", str(exports["harbor"]), "-w", "2",
                             "--report", str(exports["harbor"].parent / "validation.json")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 accepted, 0 rejected of 3" in result.stdout


def test_every_format_has_one_schema(run_dir, exports):
    import datasets
    import pyarrow.parquet as pq

    schema = arrow_schema()
    assert schema.field("archive").type == "binary"
    assert schema.field("difficulty").type.num_fields == 7
    shards = sorted((exports["parquet"] / "data").glob("*.parquet"))
    assert shards and pq.read_schema(shards[0]).remove_metadata().equals(
        schema.remove_metadata(), check_metadata=False)
    hf = datasets.load_from_disk(str(exports["hf"]))
    assert hf.features == datasets.Features.from_arrow_schema(schema)
    assert hf.features["archive"] == datasets.Value("binary")
    assert hf.num_rows == 3
    hf_shards = sorted((exports["hf"] / "data").glob("*.parquet"))
    assert pq.read_table(hf_shards[0]).num_rows == 3
    lines = (exports["jsonl"] / "tasks.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert list(json.loads(lines[0])) == list(TaskRow.model_fields)
    rows = {fmt: [row for _, row in read_rows(exports[fmt])] for fmt in ("jsonl", "parquet",
                                                                          "hf")}
    assert rows["jsonl"] == rows["parquet"] == rows["hf"]
    first = rows["hf"][0]
    assert first.provenance.item == 0 and first.skills and first.instruction.strip()
    assert [v.check for v in first.verdicts][:3] == ["structure", "build", "nop"]
    assert all(v.passed for v in first.verdicts)
    assert first.solution_commands > 0 and first.solution_tools
    assert hashlib.sha256(first.archive).hexdigest() == first.archive_sha256
    card = (exports["hf"] / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n")
    assert "path: data/train-*.parquet" in card
    for column in TaskRow.model_fields:
        assert f"| `{column}` |" in card
    assert "## Skill coverage" in card and "## Difficulty" in card
    assert "| tasks in this dataset | 3 |" in card
    assert f"| items left out | {items_left_out(run_dir)} |" in card


def test_hf_export_holds_the_task_tree_trainers_read(run_dir, exports):
    """TRL and OpenEnv read `tasks/<task_id>/` from the dataset repo, beside the rows."""
    out = exports["hf"]
    assert_pinned_copies(out / "dataset.toml", out / "tasks", run_dir / "tasks")
    assert [p.name for p in (out / "tasks").iterdir() if not p.is_dir()] == []
    rows = [row for _, row in read_rows(out)]
    assert {row.task_id for row in rows} == {p.name for p in (out / "tasks").iterdir()}
    assert all(row.skills and row.scenario and row.difficulty for row in rows)
    card = (out / "README.md").read_text()
    for line in ("harbor run -p tasks/ -a <agent> -m <model>",
                 'HarborSpec("acme/terminal-demo", agent="bash")',
                 "data.train_data=", "gym eval run tasks/",
                 'HarborEnv(run_command=..., dataset_path="tasks/")',
                 "hf download acme/terminal-demo --repo-type dataset"):
        assert line in card, line


@pytest.mark.slow
def test_harbor_reads_the_manifests_and_pins_what_it_hashes(exports):
    """Harbor's own DatasetManifest loads each dataset.toml, and its publisher's content
    hash of every folder is the digest pinned for it."""
    from harbor_env import harbor_reads_manifest

    for manifest, folders in ((exports["harbor"] / "dataset.toml", exports["harbor"]),
                              (exports["hf"] / "dataset.toml", exports["hf"] / "tasks")):
        read = harbor_reads_manifest(manifest, folders)
        assert read["dataset"] == "acme/terminal-demo"
        assert len(read["hashed"]) == 3
        assert read["pinned"] == read["hashed"], manifest


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize("fmt", ["harbor", "hf"])
def test_harbor_runs_each_export_oracle_1_nop_0(exports, tmp_path, bwrap_rootfs, fmt):
    """`harbor run -p` on the export as written (the hf export's tasks/ tree), through
    taskloom's bwrap environment plugin: Harbor's oracle earns 1 on every task, its nop 0."""
    from harbor_env import harbor_dataset_rewards, harbor_exceptions

    folders = exports[fmt] / "tasks" if fmt == "hf" else exports[fmt]
    oracle = harbor_dataset_rewards(folders, "oracle", tmp_path / "jobs", plugin=True)
    nop = harbor_dataset_rewards(folders, "nop", tmp_path / "jobs", plugin=True)
    assert harbor_exceptions(tmp_path / "jobs", "oracle") == []
    assert len(oracle) == len(nop) == 3
    assert set(oracle.values()) == {1.0}, oracle
    assert set(nop.values()) == {0.0}, nop


def test_export_images_names_prebuilt_images_that_validate_after_docker_load(
        run_dir, tmp_path, docker_client_ready):
    """`--images`: every task.toml names its image, images.tar holds them; after the images
    are removed and loaded back, validation runs the named images (as Harbor would) and
    accepts every task; a second export builds nothing."""
    out = tmp_path / "with-images"
    done = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "harbor", "--out",
                           str(out), "--images"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    names = {tomllib.loads((folder / "task.toml").read_text())["environment"]["docker_image"]
             for folder in out.iterdir() if folder.is_dir()}
    assert len(names) == 3 and all(n.startswith("taskloom/") for n in names)
    assert done.stdout.count("built taskloom/") + done.stdout.count("cached taskloom/") == 3
    manifest = tomllib.loads((out / "dataset.toml").read_text())
    for folder in (p for p in out.iterdir() if p.is_dir()):
        package = tomllib.loads((folder / "task.toml").read_text())["task"]["name"]
        assert {"name": package, "digest": harbor_digest_of(folder)} in manifest["tasks"]
    for name in names:
        docker_client_ready.images.remove(name, force=True)
    subprocess.run(["docker", "load", "-i", str(out / "images.tar")], check=True,
                   capture_output=True)
    report = tmp_path / "validation.json"
    shown = subprocess.run([*TASKLOOM, "validate", str(out), "-w", "2", "--report",
                            str(report)], capture_output=True, text=True, timeout=900)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "3 accepted, 0 rejected of 3" in shown.stdout
    assert report.read_text().count("prebuilt image taskloom/") >= 3
    again = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "hf", "--out",
                            str(tmp_path / "again"), "--images"], capture_output=True,
                           text=True, timeout=900)
    assert again.returncode == 0 and again.stdout.count("cached taskloom/") == 3, again.stdout
    for _, row in read_rows(tmp_path / "again"):  # the rows are the folders as exported
        folder = tmp_path / "again" / "tasks" / row.task_id
        assert "docker_image = " in (folder / "task.toml").read_text()
        assert row.digest == harbor_digest_of(folder)


def test_export_images_to_an_unreachable_registry_says_so_and_keeps_the_export(
        run_dir, tmp_path, docker_client_ready):
    out = tmp_path / "pushed"
    done = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "harbor", "--out",
                           str(out), "--images", "--registry", "127.0.0.1:9/acme"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode != 0
    assert "cannot push 127.0.0.1:9/acme/taskloom/" in done.stdout + done.stderr
    images = {tomllib.loads((folder / "task.toml").read_text())["environment"]["docker_image"]
              for folder in out.iterdir() if folder.is_dir()}
    assert len(images) == 3 and all(i.startswith("127.0.0.1:9/acme/taskloom/") for i in images)
    assert not (out / "images.tar").exists()
    for image in images:
        docker_client_ready.images.remove(image)  # the tag only: the local build stays
    bad = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "jsonl", "--out",
                          str(tmp_path / "rows"), "--images"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "--format harbor or --format hf" in bad.stdout + bad.stderr


@pytest.mark.parametrize("fmt", ["hf", "jsonl", "parquet"])
def test_import_gives_back_byte_identical_folders(run_dir, exports, tmp_path, fmt):
    written = import_dataset(exports[fmt], tmp_path / "tasks")
    assert len(written) == 3
    assert snapshot(tmp_path / "tasks") == snapshot(run_dir / "tasks")
    with pytest.raises(InputError, match="task folder exists"):
        import_dataset(exports[fmt], tmp_path / "tasks")


def test_import_refuses_a_damaged_archive(exports, tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    lines = (exports["jsonl"] / "tasks.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["archive_sha256"] = "0" * 64
    lines[1] = json.dumps(row)
    (damaged / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"tasks.jsonl:2: archive does not match"):
        import_dataset(damaged, tmp_path / "out")
    with pytest.raises(InputError, match="Harbor export"):
        import_dataset(exports["harbor"], tmp_path / "out")


def test_cli_export_says_what_was_left_out(run_dir, tmp_path):
    result = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "jsonl", "--out",
                             str(tmp_path / "j")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "exported 3 tasks as jsonl" in result.stdout
    assert f"left out {items_left_out(run_dir)} items" in result.stdout
    assert "1 rejected: oracle-fails" in result.stdout
    again = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "jsonl", "--out",
                            str(tmp_path / "j")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "--force" in again.stderr
    shown = subprocess.run([*TASKLOOM, "runs", "show", str(run_dir)], capture_output=True,
                           text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    for metric in ("skill coverage", "transition coverage", "scenario entropy",
                   "skill-category entropy", "action complexity", "near-duplicate rate"):
        assert metric in shown.stdout
    assert "(1 dropped)" in shown.stdout  # the duplicate item


class RecordingHub:
    """Stands in for huggingface_hub.HfApi at the network boundary: records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def create_repo(self, *args, **kwargs):
        self.calls.append(("create_repo", args, kwargs))

    def upload_folder(self, *args, **kwargs):
        self.calls.append(("upload_folder", args, kwargs))


def test_push_builds_the_hub_calls(exports):
    upload = hub_upload(exports["hf"], "acme/terminal-demo", private=True)
    assert upload == HubUpload(repo_id="acme/terminal-demo", folder=exports["hf"].resolve(),
                               private=True,
                               commit_message="Upload acme/terminal-demo (taskloom export)")
    hub = RecordingHub()
    url = push_to_hub(upload, "hf_test", api=hub)
    assert url.endswith("/datasets/acme/terminal-demo")
    (create, create_args, create_kwargs), (upload_call, _, upload_kwargs) = hub.calls
    assert create == "create_repo" and create_args == ("acme/terminal-demo",)
    assert create_kwargs == {"repo_type": "dataset", "private": True, "exist_ok": True,
                             "token": "hf_test"}
    assert upload_call == "upload_folder"
    assert upload_kwargs["repo_type"] == "dataset"
    assert upload_kwargs["folder_path"] == str(exports["hf"].resolve())
    from huggingface_hub.utils import filter_repo_objects

    out = exports["hf"]
    files = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    sent = set(filter_repo_objects(files, allow_patterns=upload_kwargs["allow_patterns"]))
    assert sent == {"README.md", "dataset.toml",
                    *(f for f in files if f.startswith(("data/", "tasks/")))}
    assert any(f.endswith("/environment/Dockerfile") for f in sent)
    assert "state.json" not in sent
    with pytest.raises(InputError, match="not ORG/NAME"):
        hub_upload(exports["hf"], "no-slash")
    with pytest.raises(InputError, match="not an hf export"):
        hub_upload(exports["jsonl"], "acme/x")


def test_push_fails_clearly_offline_and_without_token(exports, monkeypatch, tmp_path):
    upload = hub_upload(exports["hf"], "acme/terminal-demo")
    with pytest.raises(InfrastructureError, match="cannot push to the Hugging Face Hub"):
        push_to_hub(upload, "hf_not_a_real_token")  # offline mode: nothing is sent
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved login here
    with pytest.raises(InputError, match="no Hugging Face token"):
        hub_token()


def test_cli_push_without_token_fails_before_exporting(run_dir, tmp_path):
    env = {**os.environ, **OFFLINE, "HF_HOME": str(tmp_path / "hf-home")}
    env.pop("HF_TOKEN", None)
    result = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "hf", "--out",
                             str(tmp_path / "hf"), "--push", "acme/demo"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "no Hugging Face token" in result.stderr and "HF_TOKEN" in result.stderr
    assert not (tmp_path / "hf").exists()
    env["HF_TOKEN"] = "hf_not_a_real_token"
    offline = subprocess.run([*TASKLOOM, "export", str(run_dir), "--format", "hf", "--out",
                              str(tmp_path / "hf"), "--push", "acme/demo"], env=env,
                             capture_output=True, text=True, timeout=300)
    assert offline.returncode == 2
    assert "cannot push to the Hugging Face Hub" in offline.stderr
    assert (tmp_path / "hf" / "README.md").is_file()  # the local export is complete


# -- the HTML report in a real browser --------------------------------------------------------

class Marks(HTMLParser):
    """Collects element ids, and the bars (with their labels) of each chart."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.bars: dict[str, list[str]] = {}
        self.tags: set[str] = set()
        self.circles: dict[str, int] = {}
        self._svg: list[str] = []
        self._figure: str | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.add(tag)
        if "id" in attributes:
            self.ids[attributes["id"]] = tag
            if tag == "figure":
                self._figure = attributes["id"]
        for key in ("src", "href"):
            if key in attributes:
                self.external.append(attributes[key])
        if tag == "svg":
            self._svg.append(attributes.get("id") or self._figure or "")
        elif tag == "rect" and "bar" in (attributes.get("class") or "").split() and self._svg:
            self.bars.setdefault(self._svg[-1], []).append(attributes.get("data-label", ""))
        elif tag == "circle" and self._svg:
            self.circles[self._svg[-1]] = self.circles.get(self._svg[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "svg" and self._svg:
            self._svg.pop()
        if tag == "figure":
            self._figure = None


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("Debian's chromium is not installed: run scripts/setup.sh --dev")
    profile.mkdir()
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def test_report_renders_every_plot_in_chromium(run_dir, tmp_path):
    page = tmp_path / "report.html"
    result = subprocess.run([*TASKLOOM, "report", str(run_dir), "--out", str(page)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert "<script" not in html.lower() and "url(" not in html
    dumped = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    marks = Marks()
    marks.feed(dumped.stdout)
    assert marks.external == []  # no external asset of any kind
    for chart in ("funnel", "cost", "scenarios", "difficulty", "rejections", "complexity",
                  "tools"):
        assert marks.ids.get(chart) == "svg", chart
    assert marks.ids.get("skill-coverage") == "figure"
    assert marks.circles.get("skill-coverage", 0) >= 74  # a dot per skill of the graph
    funnel = marks.bars["funnel"]
    assert "plan in" in funnel and "export out" in funnel
    scenarios = {tomllib.loads((p / "task.toml").read_text())["metadata"]["scenario"]
                 for p in (run_dir / "tasks").iterdir()}
    assert sorted(marks.bars["scenarios"]) == sorted(scenarios)
    assert len(marks.bars["difficulty"]) == 7 * 3
    assert "oracle-fails" in marks.bars["rejections"]
    assert 'data-reason="oracle-fails"' in dumped.stdout  # the example log
    assert "near-duplicates dropped" in dumped.stdout and "metrics" in marks.ids
    assert marks.ids.get("requirements") == "table"  # what the tests are held to
    assert 'class="requirement-map"' in dumped.stdout and "checked by" in dumped.stdout

    shot = tmp_path / "report.png"
    taken = chromium(f"--screenshot={shot}", "--window-size=1280,3000", page.as_uri(),
                     profile=tmp_path / "profile-shot")
    assert taken.returncode == 0, taken.stderr[-2000:]
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1280, 3000)
    assert shot.stat().st_size > 50_000  # a blank page is a few kilobytes


def test_parquet_shards_stream_and_still_round_trip(run_dir, tmp_path, monkeypatch):
    import taskloom.outputs.dataset as dataset

    monkeypatch.setattr(dataset, "SHARD_BYTES", 1)  # one task per shard
    out = export_run(run_dir, "hf", tmp_path / "hf").out
    shards = sorted(p.name for p in (out / "data").iterdir())
    assert shards == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    import_dataset(out, tmp_path / "tasks")
    assert snapshot(tmp_path / "tasks") == snapshot(run_dir / "tasks")
