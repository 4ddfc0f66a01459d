import gzip
import hashlib
import os
import stat
from pathlib import Path

LOG_DIR = Path("/var/log/nginx")
# sha256 of the access.log the environment ships (computed when the task was written).
ORIGINAL_SHA256 = "b7c9a8b35472cff4d7adf6b8b9c34e1069bee72a2b441221473c9aeddde49580"


def test_live_log_is_empty_with_same_owner_and_mode():
    info = (LOG_DIR / "access.log").stat()
    assert info.st_size == 0
    assert stat.S_IMODE(info.st_mode) == 0o640
    # www-data's id in the Debian base image. By number: the agent may edit /etc/passwd, and
    # a line naming uid 0 www-data, put first, would make a root-owned file look right.
    assert info.st_uid == 33


def test_newest_archive_holds_the_old_log():
    data = gzip.decompress((LOG_DIR / "access.log.1.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == ORIGINAL_SHA256


def test_archives_shifted_and_oldest_dropped():
    for n in range(2, 6):
        content = gzip.decompress((LOG_DIR / f"access.log.{n}.gz").read_bytes())
        assert content == f"archive {n - 1}\n".encode()
    assert sorted(p.name for p in LOG_DIR.glob("access.log.*")) == [
        f"access.log.{n}.gz" for n in range(1, 6)]


def test_other_files_untouched():
    assert (LOG_DIR / "error.log").read_text().startswith("2026/11/29 10:00:00 [warn]")
    assert os.listdir(LOG_DIR).count("error.log") == 1
