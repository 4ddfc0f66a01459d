"""The export row schema: one definition, derived into Arrow and documented in the README."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from taskloom.outputs.card import schema_markdown, schema_rows
from taskloom.outputs.rows import TaskRow, arrow_schema

README = Path(__file__).resolve().parents[1] / "README.md"


def test_arrow_schema_follows_the_row_model():
    schema = arrow_schema()
    assert schema.names == list(TaskRow.model_fields)
    assert schema.field("archive").type == pa.binary()
    assert schema.field("skills").type == pa.list_(pa.string())
    assert schema.field("verdicts").type.value_type.field("reason").nullable
    files = schema.field("environment_files").type.value_type
    assert [files.field(i).name for i in range(files.num_fields)] == ["path", "content", "mode"]
    assert schema.field("difficulty").type.field("steps").type == pa.int64()
    assert schema.field("task_id").metadata[b"description"].startswith(b"Task id")


def test_readme_documents_every_column():
    text = README.read_text(encoding="utf-8")
    assert schema_markdown() in text, "README's column table is stale: paste schema_markdown()"
    assert len(list(schema_rows())) > len(TaskRow.model_fields)  # struct fields too
