"""Generated checks accept every output the instruction allows below strictness 3, and only
those: the rendered test functions run here, in this interpreter, on files in tmp_path."""

from __future__ import annotations

import pytest

from taskloom.generators.procedural.checks import HEADER, CommandText, FileText, render_tests

EXPECTED_CSV = "id,name,city\n7,Ann Lee,Oslo\n9,\"Bo, Jr\",Lima\n"


def passes(check: FileText) -> bool:
    namespace: dict = {}
    exec(HEADER + "\n" + check.render(1), namespace)
    test = next(value for name, value in namespace.items() if name.startswith("test_01"))
    try:
        test()
    except AssertionError:
        return False
    return True


def written(tmp_path, text: str) -> str:
    path = tmp_path / "out.csv"
    path.write_bytes(text.encode())
    return str(path)


@pytest.mark.parametrize(("actual", "compare", "accepted"), [
    (EXPECTED_CSV, "lines", True),
    # every field quoted, CRLF line ends: the same rows for RFC 4180
    ('"id","name","city"\r\n"7","Ann Lee","Oslo"\r\n"9","Bo, Jr","Lima"\r\n', "lines", True),
    ("id,name,city\n7,Ann Lee,Oslo\n9,\"Bo, Jr\",Lima", "lines", True),  # no final newline
    ("id,name,city\n9,\"Bo, Jr\",Lima\n7,Ann Lee,Oslo\n", "lines", False),  # order stated
    ("id,name,city\n9,\"Bo, Jr\",Lima\n7,Ann Lee,Oslo\n", "set", True),  # order left open
    ("id,name,city\n7,Ann Lee,Oslo\n9,Bo,Jr,Lima\n", "set", False),  # a field split in two
    ("id,name,city\n7,Ann Lee,Oslo\n", "set", False),  # a row missing
    ('"id","name","city"\n"7","Ann Lee","Oslo"\n"9","Bo, Jr","Lima"\n', "exact", False),
    (EXPECTED_CSV, "exact", True),
])
def test_csv_form_compares_rows_as_rfc_4180_reads_them(tmp_path, actual, compare, accepted):
    check = FileText("the rows", path=written(tmp_path, actual), expected=EXPECTED_CSV,
                     compare=compare, form="csv")
    assert passes(check) is accepted


@pytest.mark.parametrize(("form", "actual", "accepted"), [
    ("paths", "./docs/a.md\n./b.txt\n", True),
    ("paths", "docs/a.md\nb.txt\n", True),
    ("paths", "/docs/a.md\nb.txt\n", False),
    ("text", "./docs/a.md\n./b.txt\n", False),
    ("text", "docs/a.md  \nb.txt", True),  # blanks at line ends and the final newline
])
def test_paths_form_lets_a_relative_path_start_with_dot_slash(tmp_path, form, actual,
                                                               accepted):
    check = FileText("the paths", path=written(tmp_path, actual),
                     expected="docs/a.md\nb.txt\n", compare="lines", form=form)
    assert passes(check) is accepted


@pytest.mark.parametrize(("actual", "accepted"), [
    ("120 ./docs/a.md\n7 ./b.txt\n", True),  # after a field, like `find -printf '%s %p'`
    ("120 docs/a.md\n7 b.txt\n", True),
    ("120 ../docs/a.md\n7 b.txt\n", False),  # another path
    ("120 docs/./a.md\n7 b.txt\n", False),  # only a leading ./ is free
    ("120 .docs/a.md\n7 b.txt\n", False),
])
def test_paths_form_lets_a_path_after_a_field_start_with_dot_slash(tmp_path, actual,
                                                                    accepted):
    check = FileText("the sizes", path=written(tmp_path, actual),
                     expected="120 docs/a.md\n7 b.txt\n", compare="lines", form="paths")
    assert passes(check) is accepted


def test_a_git_check_reads_the_objects_in_place_and_none_of_the_repository_config(tmp_path):
    """`_git` reads the object database where it is, loose or packed, and nothing the
    repository could name a program in: a hook or an fsmonitor planted in .git does not
    run. A .git/objects that is a link (to another database) is not read: an empty one
    stands in, and the check fails."""
    import subprocess

    repo, marker = tmp_path / "repo", tmp_path / "ran"
    git = ["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for message in ("first", "second"):
        (repo / "notes.txt").write_text(message + "\n")
        subprocess.run([*git, "add", "notes.txt"], check=True)
        subprocess.run([*git, "commit", "-qm", message], check=True)
    subprocess.run([*git, "gc", "-q"], check=True)  # the first two commits packed
    (repo / "notes.txt").write_text("third\n")
    subprocess.run([*git, "commit", "-qam", "third"], check=True)  # a loose one
    program = tmp_path / "planted.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    with open(repo / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {program}\n\thooksPath = {tmp_path}\n")
    namespace: dict = {}
    exec(HEADER, namespace)
    run = namespace["_run"]
    assert run(["git", "-C", str(repo), "log", "--format=%s", "main"]) == "third\nsecond\nfirst\n"
    assert run(["git", "-C", str(repo), "status", "--porcelain"]) == ""
    assert not marker.exists()
    (repo / ".git" / "objects").rename(tmp_path / "elsewhere")
    (repo / ".git" / "objects").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(AssertionError):
        run(["git", "-C", str(repo), "log", "--format=%s", "main"])


def _committed(tmp_path, *messages: str):
    """A repository on `main` with one commit per message (each adds MESSAGE.txt), and a
    function running plain git in it."""
    import subprocess

    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@example.com"]

    def plain(*args: str) -> str:
        return subprocess.run([*git, *args], check=True, capture_output=True,
                              text=True).stdout

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for message in messages:
        (repo / f"{message}.txt").write_text(message + "\n")
        plain("add", f"{message}.txt")
        plain("commit", "-qm", message)
    return repo, plain


def _commit_graph(commits: list[tuple[str, str, str | None, int]]) -> bytes:
    """A commit-graph file (format 1, SHA-1) claiming these (commit, tree, parent, time)."""
    import hashlib
    import struct

    commits = sorted(commits)
    ids = [bytes.fromhex(commit) for commit, *_ in commits]
    fanout = b"".join(struct.pack(">I", sum(oid[0] <= byte for oid in ids))
                      for byte in range(256))
    position = {commit: number for number, (commit, *_) in enumerate(commits)}
    none = 0x70000000
    data = b"".join(bytes.fromhex(tree)
                    + struct.pack(">IIII", position[parent] if parent else none, none,
                                  1 << 2, when)  # generation 1: nothing is checked
                    for _, tree, parent, when in commits)
    chunks = [(b"OIDF", fanout), (b"OIDL", b"".join(ids)), (b"CDAT", data)]
    offset, table = 8 + 12 * (len(chunks) + 1), b""
    for name, body in chunks:
        table += name + struct.pack(">Q", offset)
        offset += len(body)
    body = b"CGPH" + bytes([1, 1, len(chunks), 0]) + table + b"\0" * 4 \
        + struct.pack(">Q", offset) + b"".join(body for _, body in chunks)
    return body + hashlib.sha1(body).digest()


def test_a_git_check_sees_the_commits_and_files_themselves_not_a_view_over_them(tmp_path,
                                                                               monkeypatch):
    """What git can be told to show in place of the commits is not what a check reads: a
    replace ref (an agent's commit standing in for main's tip) fails the check, loose or
    packed, since plain git would show it; a commit-graph claiming
    other parents and trees (a forger's, which passed for a rewritten history), and index
    flags that hide a changed file from `git status` (assume-unchanged, skip-worktree).
    Plain git shows each forged view here, so the test sees them work. A ref that is a
    relative link reads as git reads it, from the repository, not from the checks' copy
    (a forger's `main` led to another commit from there), and a tag named as the branch
    the checks name is refused (git would read the tag)."""
    import tempfile

    repo, plain = _committed(tmp_path, "first", "second")
    namespace: dict = {}
    exec(HEADER, namespace)
    run = namespace["_run"]
    log = ["git", "-C", str(repo), "log", "--format=%s", "main"]

    tip, first = plain("rev-parse", "main", "main~1").split()
    stand_in = plain("commit-tree", "main^{tree}", "-p", first, "-m", "forged").strip()
    plain("replace", tip, stand_in)
    assert plain("log", "--format=%s", "main") == "forged\nfirst\n"
    with pytest.raises(AssertionError, match="replace ref"):  # plain git shows another
        run(log)
    (repo / ".git" / "refs" / "replace" / tip).unlink()  # packed, too
    (repo / ".git" / "packed-refs").write_text(f"{stand_in} refs/replace/{tip}\n")
    assert plain("log", "--format=%s", "main") == "forged\nfirst\n"
    with pytest.raises(AssertionError, match="replace ref"):
        run(log)
    (repo / ".git" / "packed-refs").unlink()
    assert run(log) == "second\nfirst\n"

    tree = plain("rev-parse", "main~1^{tree}").strip()  # main's tip as a root, first's tree
    graph = repo / ".git" / "objects" / "info" / "commit-graph"
    graph.write_bytes(_commit_graph([(tip, tree, None, 1700000000)]))
    assert plain("log", "--format=%s %T", "main") == f"second {tree}\n"
    assert run(log) == "second\nfirst\n"
    graph.unlink()

    scratch = tmp_path / "scratch"  # the checks' copy: scratch/tmp*/git/refs/heads/main
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    (tmp_path / "main").write_text(tip + "\n")  # where the link leads from the repository
    (scratch / "main").write_text(first + "\n")  # and from the copy
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    (repo / ".git" / "refs" / "heads" / "main").symlink_to("../../../../main")
    assert plain("log", "--format=%s", "main") == "second\nfirst\n"
    assert run(log) == "second\nfirst\n"

    plain("tag", "main", first)  # a tag named as the branch: git would read the tag
    assert plain("log", "--format=%s", "main") == "first\n"
    with pytest.raises(AssertionError, match="ambiguous"):
        run(log)
    plain("tag", "-d", "main")

    status = ["git", "-C", str(repo), "status", "--porcelain"]
    for flag, name in (("--assume-unchanged", "first.txt"), ("--skip-worktree", "second.txt")):
        (repo / name).write_text("changed\n")
        plain("update-index", flag, name)
    assert plain("status", "--porcelain") == ""
    assert run(status) == " M first.txt\n M second.txt\n"


def test_a_lineage_check_holds_the_generated_commits_and_the_tip_tree_not_only_subjects(
        tmp_path):
    """`Lineage` compares what subjects alone let through (round 4 of the forgers): main's
    generated commits rewritten with their subjects and trees kept (a new author date), a
    commit added on top that undoes the work, the task's own commit amended to hold other
    files, and a merge. The honest repository, built with the generated dates, passes."""
    import os
    import subprocess

    from taskloom.generators.procedural.artifacts import Commit, GitRepo
    from taskloom.generators.procedural.primitives._history import NewCommit
    from taskloom.generators.procedural.primitives.git import Lineage

    commits = (Commit("Initial commit", "Ann", "ann@example.com", 1700000000,
                      (("README.md", "# demo\n"),)),
               Commit("Add notes (#12)", "Bo", "bo@example.com", 1700003600,
                      (("docs/notes.md", "one\n"),)),
               NewCommit("Bump version to 1.2.3", "Cy", "cy@example.com", 0,
                         (("VERSION", "1.2.3\n"),)))
    repo = tmp_path / "repo"

    def git(*args: str, date: int | None = None, who: tuple[str, str] = ("Cy", "cy@example.com")
            ) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1],
               "GIT_COMMITTER_NAME": who[0], "GIT_COMMITTER_EMAIL": who[1]}
        if date is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
        return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                              capture_output=True, text=True).stdout

    def build(shift: int = 0) -> None:
        subprocess.run(["rm", "-rf", str(repo)], check=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        for commit in commits:
            for path, content in commit.files:
                (repo / path).parent.mkdir(parents=True, exist_ok=True)
                (repo / path).write_text(content)
                git("add", path)
            known = not isinstance(commit, NewCommit)
            git("commit", "-qm", commit.message, who=(commit.author, commit.email),
                date=commit.date + shift if known else None)

    check = Lineage.of("main holds the commits", GitRepo(path=str(repo), phrase="repo",
                                                       commits=commits),
                       "main")
    build()
    assert passes(check)
    build(shift=1)  # every generated commit rewritten: same subjects, same trees
    assert not passes(check)
    build()
    git("rm", "-q", "VERSION")
    git("commit", "-qm", "Tidy")  # a commit on top that undoes the work
    assert not passes(check)
    build()
    (repo / "VERSION").write_text("9.9.9\n")
    git("commit", "-qa", "--amend", "--no-edit")  # the task's commit, other content
    assert not passes(check)
    build()
    tip = git("rev-parse", "main").strip()
    merge = git("commit-tree", "main^{tree}", "-p", "main~1", "-p", "main~2", "-m",
                "Bump version to 1.2.3").strip()  # same subject and tree, two parents
    git("update-ref", "refs/heads/main", merge, tip)
    assert not passes(check)


@pytest.mark.parametrize("forged", ["commondir", "shallow", "grafts", "alternates",
                                    "extension", "include", "worktree", "bare", "version",
                                    "object", "commit-graph"])
def test_a_git_check_refuses_a_repository_plain_git_shows_otherwise(tmp_path, forged):
    """Each way round 5 of the forgers made plain git show another repository than the
    checks read (files git obeys that the checks never copy, config that changes what git
    opens), or changed an object in place under its old name (git checks few objects'
    hashes as it reads them): the check fails, where before it passed. The repository as
    git made it passes."""
    import zlib

    repo, plain = _committed(tmp_path, "first", "second", "third")
    namespace: dict = {}
    exec(HEADER, namespace)
    run, intact = namespace["_run"], namespace["_intact"]
    log = ["git", "-C", str(repo), "log", "--format=%s", "main"]
    assert run(log) == "third\nsecond\nfirst\n"
    intact(str(repo))
    dot = repo / ".git"
    tip, older = plain("rev-parse", "main", "main~1").split()
    if forged == "commondir":
        (dot / "commondir").write_text("common\n")
    elif forged == "shallow":
        (dot / "shallow").write_text(older + "\n")
    elif forged == "grafts":
        (dot / "info").mkdir(exist_ok=True)
        (dot / "info" / "grafts").write_text(tip + "\n")
    elif forged == "alternates":
        (dot / "objects" / "info" / "alternates").write_text(str(tmp_path) + "\n")
    elif forged == "object":  # an old commit rewritten in place, under its own name
        body = plain("cat-file", "commit", older).replace("second", "forged").encode()
        path = dot / "objects" / older[:2] / older[2:]
        path.chmod(0o644)
        path.write_bytes(zlib.compress(b"commit %d\0" % len(body) + body))
        assert plain("log", "--format=%s", "main") == "third\nforged\nfirst\n"
    elif forged == "commit-graph":
        plain("commit-graph", "write", "--reachable")
        graph = dot / "objects" / "info" / "commit-graph"
        graph.write_bytes(graph.read_bytes()[:-1] + b"\0")
    else:
        setting = {"extension": "[extensions]\n\tforged = yes\n",
                   "include": f"[include]\n\tpath = {tmp_path}/more\n",
                   "worktree": "[core]\n\tworktree = /elsewhere\n",
                   "bare": "[core]\n\tbare\n",
                   "version": "[core]\n\trepositoryformatversion = 1\n"}[forged]
        with open(dot / "config", "a") as config:
            config.write(setting)
    with pytest.raises(AssertionError):
        run(log)
        intact(str(repo))


def test_a_checks_file_imports_and_defines_only_what_its_checks_use(tmp_path):
    """Importing unused modules cost each run of the checks ~15 ms (every phase runs them)."""
    out = tmp_path / "out.txt"
    out.write_text("a\nb\n")
    plain = render_tests([FileText("out.txt holds two lines", path=str(out), expected="a\nb\n")],
                         ({"root": 0}, {"root": 0}))
    git = render_tests([CommandText("the log", argv=("git", "-C", str(tmp_path), "log"),
                                    expected="")], ({"root": 0}, {"root": 0}))
    assert "import subprocess" not in plain and "def _git(" not in plain
    assert "GIT_DATA" not in plain and "What git keeps as data" not in plain  # its comment
    assert "IMAGE_USERS" not in plain and "from pathlib import Path" in plain
    assert "\n\n\n\n" not in plain and plain.startswith('"""Checks for this task')
    assert "import subprocess" in git and "def _git(" in git and "GIT_DATA = (" in git
    assert "# What git keeps as data" in git
    namespace: dict = {}
    exec(compile(plain, "test_outputs.py", "exec"), namespace)
    namespace["test_01_out_txt_holds_two_lines"]()  # runs with what was kept
    out.write_text("b\n")
    with pytest.raises(AssertionError):
        namespace["test_01_out_txt_holds_two_lines"]()
