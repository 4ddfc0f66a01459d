"""Task model and Harbor folder reader/writer: round trips and error messages."""

from __future__ import annotations

import shutil

import pytest
from taskfactory import TWO_STEPS, make_multi_step_task, make_task

from taskloom.errors import TaskFolderError
from taskloom.harbor import find_task_folders, read_task_folder, staged_folder, write_task_folder
from taskloom.models import Task, TaskConfig


def test_read_write_read_is_identical(tmp_path):
    folder = make_task(tmp_path, "round", environment={"data.txt": "hello\n",
                                                       "nested/dir/file.csv": "a,b\n1,2\n"})
    (folder / "solution" / "helper.py").write_bytes(b"\x00\x01binary\xff")
    first = read_task_folder(folder)
    written = write_task_folder(first, tmp_path / "copy" / "round")
    second = read_task_folder(written)
    assert second == first
    assert second.file("solution", "solve.sh").mode == 0o755
    assert second.file("solution", "helper.py").content == b"\x00\x01binary\xff"
    # Writing again gives the same bytes: folders are deterministic.
    again = write_task_folder(second, tmp_path / "again" / "round")
    for path in sorted(p.relative_to(written) for p in written.rglob("*") if p.is_file()):
        assert (again / path).read_bytes() == (written / path).read_bytes()


def test_crlf_and_unicode_instruction_survive(tmp_path):
    folder = make_task(tmp_path, "unicode", instruction="Trouvez «café» ☕\r\nligne 2\r\n")
    task = read_task_folder(folder)
    assert task.instruction == "Trouvez «café» ☕\r\nligne 2\r\n"
    assert read_task_folder(write_task_folder(task, tmp_path / "w" / "unicode")) == task


def test_a_killed_writers_staging_folder_is_removed_and_a_failed_write_changes_nothing(tmp_path):
    task = read_task_folder(make_task(tmp_path / "src", "t"))
    out = tmp_path / "out"
    (out / ".t.partial-999" / "tests").mkdir(parents=True)  # a writer killed mid-way
    (out / ".tt.partial-5").mkdir()  # another task's, kept
    write_task_folder(task, out / "t")
    assert sorted(p.name for p in out.iterdir()) == [".tt.partial-5", "t"]
    with pytest.raises(RuntimeError), staged_folder(out / "t") as staging:
        (staging / "task.toml").write_text("half")
        raise RuntimeError("killed")
    assert sorted(p.name for p in out.iterdir()) == [".tt.partial-5", "t"]
    assert read_task_folder(out / "t") == task


def test_task_is_frozen(tmp_path):
    task = read_task_folder(make_task(tmp_path, "frozen"))
    with pytest.raises(ValueError):
        task.instruction = "changed"  # type: ignore[misc]


def test_unknown_keys_are_kept_and_listed(tmp_path):
    toml = ('schema_version = "1.4"\ncustom_top = 1\n[verifier]\ntimeout_sec = 5.0\n'
            'flavour = "x"\n[environment]\nmemory = "1G"\n')
    task = read_task_folder(make_task(tmp_path, "unknown", toml=toml))
    assert task.config.unknown_keys() == ["custom_top", "verifier.flavour"]
    assert task.config.environment.memory_mb == 1024
    assert read_task_folder(write_task_folder(task, tmp_path / "w" / "unknown")) == task


def test_legacy_version_key(tmp_path):
    toml = 'version = "1.0"\n[verifier]\ntimeout_sec = 5.0\n'
    task = read_task_folder(make_task(tmp_path, "legacy", toml=toml))
    assert task.config.schema_version == "1.0"


@pytest.mark.parametrize(("toml", "field", "words"), [
    ("schema_version = \n", None, "not valid TOML"),
    ('[verifier]\ntimeout_sec = "soon"\n', "verifier.timeout_sec", "valid number"),
    ("[verifier]\ntimeout_sec = -1\n", "verifier.timeout_sec", "greater than 0"),
    ('[environment]\nos = "windows"\n', "environment.os", "Linux"),
    ("[task]\ndescription = \"no name\"\n", "task.name", "Field required"),
    ('[[steps]]\nname = "../a"\n', "steps.0.name", "should match pattern"),
    ('[[steps]]\nname = "a"\n[[steps]]\nname = "A"\n', None, "step names must be unique"),
    ('[[steps]]\nname = "a"\nmin_reward = "high"\n', "steps.0.min_reward", "valid number"),
])
def test_bad_task_toml_names_file_field_and_fix(tmp_path, toml, field, words):
    folder = make_task(tmp_path, "bad", toml=toml)
    with pytest.raises(TaskFolderError) as caught:
        read_task_folder(folder)
    message = str(caught.value)
    assert str(folder / "task.toml") in message
    assert words in message
    assert "fix:" in message
    assert caught.value.field == field


@pytest.mark.parametrize(("remove", "mentions"), [
    ("task.toml", "task.toml"),
    ("instruction.md", "instruction.md"),
    ("tests/test.sh", "tests/test.sh"),
    ("environment/Dockerfile", "Dockerfile"),
])
def test_missing_parts(tmp_path, remove, mentions):
    folder = make_task(tmp_path, "missing")
    (folder / remove).unlink()
    with pytest.raises(TaskFolderError) as caught:
        read_task_folder(folder)
    assert mentions in str(caught.value)
    assert caught.value.fix


def test_docker_image_replaces_dockerfile(tmp_path):
    toml = '[environment]\ndocker_image = "python:3.12-slim"\n'
    folder = make_task(tmp_path, "prebuilt", toml=toml, dockerfile=None, environment={})
    assert read_task_folder(folder).config.environment.docker_image == "python:3.12-slim"


def test_empty_instruction_and_symlink_rejected(tmp_path):
    empty = make_task(tmp_path, "empty", instruction="  \n")
    with pytest.raises(TaskFolderError, match="is empty"):
        read_task_folder(empty)
    linked = make_task(tmp_path, "linked")
    (linked / "environment" / "link").symlink_to("/etc/passwd")
    with pytest.raises(TaskFolderError, match="symbolic links"):
        read_task_folder(linked)


def test_find_task_folders(tmp_path):
    make_task(tmp_path / "set", "a")
    broken = make_task(tmp_path / "set", "b")
    (broken / "task.toml").unlink()
    (tmp_path / "set" / "notes").mkdir()
    found = find_task_folders([tmp_path / "set"])
    assert [p.name for p in found] == ["a", "b"]
    with pytest.raises(TaskFolderError, match="does not exist"):
        find_task_folders([tmp_path / "nope"])
    with pytest.raises(TaskFolderError, match="no task folder"):
        find_task_folders([tmp_path / "set" / "notes"])


def test_files_must_be_sorted():
    from taskloom.models import TaskFile

    files = (TaskFile(path="b", content=b""), TaskFile(path="a", content=b""))
    with pytest.raises(ValueError, match="sorted"):
        Task(name="x", config=TaskConfig(), instruction="x", environment=files, tests=())


def test_a_multi_step_task_reads_and_writes_back(tmp_path):
    """[[steps]] with per-step folders; no instruction.md or tests/ of the task's own."""
    folder = make_multi_step_task(tmp_path, "steps", settings={
        "write": "min_reward = 1.0\n[steps.verifier]\ntimeout_sec = 9.0\nflavour = 1\n"},
        strategy="final")
    task = read_task_folder(folder)
    assert [s.name for s in task.steps] == ["write", "join"] and task.instruction == ""
    assert task.instructions == (TWO_STEPS["write"]["instruction"],
                                 TWO_STEPS["join"]["instruction"])
    assert task.steps[1].workdir[0].path == "setup.sh"
    assert task.config.steps[0].thresholds == {"reward": 1.0}
    assert task.config.steps[0].verifier.timeout_sec == 9.0
    assert task.config.reward_strategy == "final"
    assert task.config.unknown_keys() == ["steps.write.verifier.flavour"]
    copy = write_task_folder(task, tmp_path / "copy" / "steps")
    assert not (copy / "instruction.md").exists()
    assert read_task_folder(copy) == task


@pytest.mark.parametrize(("remove", "mentions", "fix"), [
    ("steps/join", "missing the folder of step 'join'", "steps/join/"),
    ("steps/join/tests/test.sh", "step 'join' has no test script", "tests/test.sh"),
    ("steps/join/instruction.md", "missing instruction.md", "instruction.md"),
])
def test_a_broken_step_names_its_file_and_fix(tmp_path, remove, mentions, fix):
    folder = make_multi_step_task(tmp_path, "broken")
    shutil.rmtree(folder / remove) if (folder / remove).is_dir() else (folder / remove).unlink()
    with pytest.raises(TaskFolderError) as caught:
        read_task_folder(folder)
    assert mentions in str(caught.value) and fix in caught.value.fix
    assert str(folder / "steps" / "join") in str(caught.value)
