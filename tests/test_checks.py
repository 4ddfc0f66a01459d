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
