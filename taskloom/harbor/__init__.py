"""Harbor task folders (schema 1.4): the task format every other layer reads and writes.

```
<task>/task.toml            configuration and metadata
<task>/instruction.md       what the agent is told
<task>/environment/         Dockerfile and the files it COPYs (or [environment].docker_image)
<task>/solution/solve.sh    reference solution (optional for Harbor, required for validation)
<task>/tests/test.sh        writes /logs/verifier/reward.txt
```

- `read`: a folder into a `Task` (any Harbor task, ours or foreign), with errors that name
  the file, the field and the fix; a folder's files as exact bytes.
- `write`: a `Task` or exact files into a folder, atomically.
- `archive`: Harbor's content digest of a folder, and reproducible tar.gz archives.

This package sits just above `taskloom.models`: validators, generators, the pipeline,
outputs and the CLI all use it, and it uses none of them.
"""

from taskloom.harbor.archive import harbor_digest, pack, unpack
from taskloom.harbor.read import (
    SECTIONS,
    find_task_folders,
    read_files,
    read_task_folder,
    read_task_toml,
)
from taskloom.harbor.write import staged_folder, task_toml_text, write_files, write_task_folder

__all__ = ["SECTIONS", "find_task_folders", "harbor_digest", "pack", "read_files",
           "read_task_folder", "read_task_toml", "staged_folder", "task_toml_text", "unpack",
           "write_files", "write_task_folder"]
