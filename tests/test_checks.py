"""Generated checks accept every output the instruction allows below strictness 3, and only
those: the rendered test functions run here, in this interpreter, on files in tmp_path."""

from __future__ import annotations

import pytest

from taskloom.generators.procedural.checks import HEADER, FileText

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
    replace ref (an agent's commit standing in for main's tip), a commit-graph claiming
    other parents and trees (a forger's, which passed for a rewritten history), and index
    flags that hide a changed file from `git status` (assume-unchanged, skip-worktree).
    Plain git shows each forged view here, so the test sees them work. A ref that is a
    relative link reads as git reads it, from the repository, not from the checks' copy
    (a forger's `main` led to another commit from there), and a tag named as the branch
    the checks name is refused (git would read the tag)."""
    import subprocess
    import tempfile

    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@example.com"]

    def plain(*args: str) -> str:
        return subprocess.run([*git, *args], check=True, capture_output=True,
                              text=True).stdout

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for message in ("first", "second"):
        (repo / f"{message}.txt").write_text(message + "\n")
        plain("add", f"{message}.txt")
        plain("commit", "-qm", message)
    namespace: dict = {}
    exec(HEADER, namespace)
    run = namespace["_run"]
    log = ["git", "-C", str(repo), "log", "--format=%s", "main"]

    tip, first = plain("rev-parse", "main", "main~1").split()
    stand_in = plain("commit-tree", "main^{tree}", "-p", first, "-m", "forged").strip()
    plain("replace", tip, stand_in)
    assert plain("log", "--format=%s", "main") == "forged\nfirst\n"
    assert run(log) == "second\nfirst\n"
    plain("replace", "-d", tip)

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
