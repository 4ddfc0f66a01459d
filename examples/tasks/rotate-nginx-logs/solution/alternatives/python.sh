#!/bin/bash
# Another correct solution (Python's gzip and os instead of mv, gzip and chown): taskloom
# validate requires it to earn reward 1 too, so the tests cannot demand the reference's way.
set -euo pipefail
python3 - <<'PY'
import gzip
import os
import shutil

os.chdir("/var/log/nginx")
for name in os.listdir("."):  # anything past slot 4 would end beyond 5: drop it first
    parts = name.split(".")
    if name.startswith("access.log.") and name.endswith(".gz") and parts[2].isdigit() \
            and int(parts[2]) >= 5:
        os.remove(name)
for n in range(4, 0, -1):
    if os.path.exists(f"access.log.{n}.gz"):
        os.replace(f"access.log.{n}.gz", f"access.log.{n + 1}.gz")
info = os.stat("access.log")
with open("access.log", "rb") as live, gzip.open("access.log.1.gz", "wb") as archive:
    shutil.copyfileobj(live, archive)
os.truncate("access.log", 0)
os.chown("access.log", info.st_uid, info.st_gid)
os.chmod("access.log", info.st_mode & 0o7777)
PY
