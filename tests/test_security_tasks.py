"""Security hygiene tasks: what the sandbox validation cannot see.

The registry-wide test validates both steps in the sandbox (nop, oracle, alternative, a
mutant per stated rule, tamper probes). These check the parts it trusts: that the Python
model of the scrub rules is what the sed script does, for the rules and for every rule
ignored; that the look-alikes stay and every planted secret is gone and checked; that the
expected log of a purge is the one git writes after a real filter-branch; determinism.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import hashlib
import io
import lzma
import os
import random
import re
import shutil
import subprocess
import zlib
from dataclasses import fields, replace
from pathlib import Path

import pytest
from endings import rewards, solution_rewards, task_for

from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.checks import HEADER
from taskloom.generators.procedural.domains import DOMAINS
from taskloom.generators.procedural.primitives.base import StepContext
from taskloom.generators.procedural.primitives.security import (
    ELSEWHERE,
    Deleted,
    ObjectStore,
    ScrubRules,
    SecretPurged,
    SecretsAbsent,
    TreeEntries,
    _secret_files,
    elsewhere,
)
from taskloom.generators.procedural.world import World
from taskloom.generators.protocols import Difficulty
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()
LEVELS = [Difficulty(steps=1, data_volume=v, noise=n, edge_cases=e, strictness=2)
          for v, n, e in ((1, 1, 1), (2, 2, 2), (3, 3, 3), (1, 3, 2))]


def _context(seed: int, difficulty: Difficulty) -> StepContext:
    return StepContext(rng=random.Random(seed), difficulty=difficulty,
                       domain=DOMAINS["security"], world=World(), step=1, steps=1)


def _draft(skill: str, seed: int, difficulty: Difficulty):
    return ProceduralGenerator(GRAPH).generate(
        blueprint_for(GRAPH, (skill,), seed=seed, difficulty=difficulty))


FLAGS = [f.name for f in fields(ScrubRules) if f.name != "placeholder"]


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs GNU sed")
@pytest.mark.parametrize("seed", range(4))
def test_the_sed_script_does_what_the_model_says_for_every_rule_ignored(tmp_path, seed):
    context = _context(seed, LEVELS[seed % len(LEVELS)])
    rules = ScrubRules(context.rng.choice(("REDACTED", "<redacted>", "***REMOVED***",
                                           "[SCRUBBED]")))
    files, _ = _secret_files(context, rules)
    files["binary.gz"] = bytes(range(256)).decode("latin-1")  # lines of any bytes
    for variant in [rules, *(replace(rules, **{flag: False}) for flag in FLAGS)]:
        root = tmp_path / f"tree-{len(list(tmp_path.iterdir()))}"
        for relpath, text in files.items():
            path = root / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("latin-1") if relpath == "binary.gz"
                             else text.encode())
        subprocess.run(["bash", "-c", "set -eu\n" + variant.sed(str(root))], check=True)
        for relpath, text in files.items():
            data = text.encode("latin-1") if relpath == "binary.gz" else text.encode()
            assert (root / relpath).read_bytes() == variant.apply(data), (variant, relpath)


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_look_alikes_stay_and_every_planted_secret_goes(level):
    context = _context(10 + level, LEVELS[level])
    rules = ScrubRules("REDACTED")
    files, secrets = _secret_files(context, rules)
    after = {path: rules.apply(text.encode()).decode() for path, text in files.items()}
    text = "\n".join(after.values())
    for secret in secrets:
        assert secret not in text
    env = next(v for k, v in after.items() if k.startswith("deploy/") and "env" in k)
    assert "PASSWORD_MIN_LENGTH=" in env and "=REDACTED" not in env.split(
        "PASSWORD_MIN_LENGTH")[1].split("\n")[0]
    assert any(line.startswith("#") and "REDACTED" not in line for line in env.splitlines())
    assert "TOKEN_TTL=" in env and "TOKEN_TTL=REDACTED" not in env
    ini = after["config/settings.ini"]
    assert "; token = <your-token>" in ini and "password_min_length = REDACTED" not in ini
    assert "secret_rotation_days = REDACTED" not in ini
    assert after["deploy/id_deploy.pub"] == files["deploy/id_deploy.pub"]
    key = after["deploy/id_deploy"].splitlines()
    assert len(key) == 3 and key[1] == "REDACTED" and "PRIVATE KEY" in key[0]
    if "config/tls/bundle.pem" in after:  # the certificate stays, the key goes
        bundle = after["config/tls/bundle.pem"]
        certificate = files["config/tls/bundle.pem"].split("-----END CERTIFICATE-----")[0]
        assert bundle.startswith(certificate) and bundle.count("REDACTED") == 1
    if "poetry.lock" in after:
        assert after["poetry.lock"] == files["poetry.lock"]
    if LEVELS[level].edge_cases >= 2:
        assert "SMTP_PASSWORD=\n" in env and "password =\n" in ini


@pytest.mark.parametrize("seed", range(6))
def test_every_planted_secret_is_checked_and_each_rule_changes_the_result(seed):
    difficulty = LEVELS[seed % len(LEVELS)]
    draft = _draft("security.scrub_secrets", seed, difficulty)
    mutants = [f for f in draft.task.solution if f.path.startswith("mutants/")]
    names = {Path(f.path).stem for f in mutants}
    assert {"step-1-comments", "step-1-key-ends", "step-1-ignore-case", "step-1-quotes",
            "step-1-markers"} <= names
    if difficulty.data_volume >= 2:
        assert "step-1-aws-ids" in names
    if difficulty.edge_cases >= 2:
        assert "step-1-empty" in names
    assert "still holds a secret" in "".join(f.content.decode() for f in draft.task.tests)


def test_the_scrub_and_purge_drafts_are_deterministic():
    for skill in ("security.scrub_secrets", "security.purge_git_secret"):
        one, two = (_draft(skill, 5, LEVELS[2]) for _ in range(2))
        assert one.task.instruction == two.task.instruction
        assert [f.content for f in one.task.environment] == \
            [f.content for f in two.task.environment]
        assert [f.content for f in one.task.tests] == [f.content for f in two.task.tests]


@pytest.mark.parametrize("path", [("security.scrub_secrets", "files.find_by_extension"),
                                  ("security.rotate_credential", "files.find_large"),
                                  ("security.purge_git_secret", "git.file_history")])
def test_the_scan_of_the_whole_system_is_the_last_check_a_wrong_solution_reaches(path):
    # A run meant to earn 0 stops at its first failure: a mutant of the later step failed
    # its own check only after the ~1 s scan, most of a mutant's test run.
    draft = ProceduralGenerator(GRAPH).generate(blueprint_for(GRAPH, path, seed=2))
    source = "".join(f.content.decode() for f in draft.task.tests if f.path.endswith(".py"))
    checks = re.findall(r"^def (test_\w+)\(\):\n    (\".*\")", source, re.MULTILINE)
    scans = [name for name, label in checks if "nor a copy elsewhere" in label]
    assert len(scans) == 1 and len(checks) > 2, checks
    assert checks[-1][0] == scans[0], checks


def test_the_checks_read_what_they_claim():
    assert SecretsAbsent("x", root="/a/b", secrets=("s",)).reads() == ("/a/b",)
    assert SecretsAbsent("x", root="/a/b/c", secrets=("s",),
                         places=elsewhere("/a/b/c")).reads() == ("/a/b/c", "/a/b", *ELSEWHERE)
    assert elsewhere("/srv/repo") == ELSEWHERE  # never a top-level folder as a whole
    assert SecretPurged("x", repo="/r", secret="s").reads() == ("/r",)
    assert TreeEntries.of("x", "/a/b", {"c/d": b""}).reads() == ("/a/b",)
    assert ObjectStore("x", repo="/r").reads() == ("/r",)


def _passes(check) -> bool:
    """Whether the rendered check passes here (the test host's file system)."""
    space: dict = {}
    exec(compile(HEADER + "\n" + check.render(1), "checks", "exec"), space)
    try:
        space[check.test_name(1)]()
    except AssertionError:
        return False
    return True


SECRET = "sk_live_Zq8DfX2mPLr4WcT0aNvB7yHe"


def _scan(root: Path, *places: Path) -> bool:
    return _passes(SecretsAbsent("x", root=str(root), secrets=(SECRET, "other"),
                                 places=tuple(str(p) for p in places)))


def test_the_secret_scan_sees_names_links_attributes_and_compressed_copies(tmp_path):
    import gzip
    import tarfile
    import zipfile

    tree, backups = tmp_path / "tree", tmp_path / "backups"
    (tree / "config").mkdir(parents=True)
    (tree / "config" / "app.env").write_text("TOKEN=REDACTED\n")
    backups.mkdir()
    assert _scan(tree, backups, tmp_path / "missing")
    (tree / "config" / f"old {SECRET}").mkdir()  # a folder's name
    assert not _scan(tree)
    (tree / "config" / f"old {SECRET}").rmdir()
    (tree / "link").symlink_to(f"/nowhere/{SECRET}")  # a link's target
    assert not _scan(tree)
    (tree / "link").unlink()
    try:  # an extended attribute, where the file system has them
        os.setxattr(tree / "config" / "app.env", "user.original", SECRET.encode())
    except OSError:
        pass
    else:
        assert not _scan(tree)
        os.removexattr(tree / "config" / "app.env", "user.original")
    assert _scan(tree, backups)
    original = f"TOKEN={SECRET}\n".encode()
    (backups / "app.env.gz").write_bytes(gzip.compress(original))
    assert not _scan(tree, backups)
    shutil.rmtree(backups)
    backups.mkdir()
    staged = tmp_path / "staged.env"
    staged.write_bytes(original)
    with tarfile.open(backups / "tree.tar.gz", "w:gz") as archive:
        archive.add(staged, "tree/config/app.env")
    assert not _scan(tree, backups)
    (backups / "tree.tar.gz").unlink()
    with zipfile.ZipFile(backups / "tree.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("nested.tar.gz", gzip.compress(original))  # two levels deep
    assert not _scan(tree, backups)
    (backups / "tree.zip").unlink()
    assert _scan(tree, backups)
    # What the usual tools restore though a strict reader refuses it (each forged the purge
    # task's "no backup": a red-team round): a tar with no ustar magic (tar --format=v7), a
    # gzip with bytes after it (gzip -d warns, then restores), a zip behind other bytes.
    staged.write_bytes(gzip.compress(original))  # not in the tar's bytes as they are
    with tarfile.open(backups / "tree.tar", "w", format=tarfile.GNU_FORMAT) as archive:
        archive.add(staged, "app.env.gz")
    header = bytearray((backups / "tree.tar").read_bytes())
    header[257:265] = bytes(8)  # no magic, no version: a v7 header
    header[148:156] = b"%06o\0 " % (sum(header[:148]) + 256 + sum(header[156:512]))
    with tarfile.open(fileobj=io.BytesIO(bytes(header))) as archive:  # still a tar
        assert gzip.decompress(archive.extractfile("app.env.gz").read()) == original
    signed = _signed_tar("fichiers-é.gz", gzip.compress(original))  # GNU tar reads it
    raw = [{"id": lzma.FILTER_LZMA2}]
    for name, data in (("tree.tar", bytes(header)), ("signed.tar", signed),
                       ("app.env.gz", gzip.compress(original) + b"JUNK"),
                       ("tree.zip", b"JUNK" + _zipped(original)),
                       ("app.env.lzma", lzma.compress(original, lzma.FORMAT_ALONE)),
                       ("app.env.raw", lzma.compress(original * 64, lzma.FORMAT_RAW,
                                                     filters=raw)),
                       ("app.cpio", b"070701" + bytes(104) + bz2.compress(original)),
                       # a copy past what the scan reads whole: not proven absent
                       ("zeros.gz", gzip.compress(bytes(1 << 28) + original, 1)),
                       # round 4 of the forgers: encodings and filters the image's tools
                       # write (base64, basenc --base64url, xxd -p, iconv, xz --format=raw
                       # --lzma1 or --delta), and a zip whose member is encrypted (zip -e)
                       ("app.env.b64", base64.encodebytes(gzip.compress(bytes(range(256))
                                                                        + original))),
                       ("app.env.url", b"token: " + base64.urlsafe_b64encode(b"x" + original)),
                       ("app.env.hex", _wrapped(binascii.hexlify(original), 60)),
                       ("app.env.utf16", original.decode().encode("utf-16")),
                       ("app.env.utf16be", original.decode().encode("utf-16-be")),
                       ("app.env.lzma1", lzma.compress(original, lzma.FORMAT_RAW, filters=[
                           {"id": lzma.FILTER_LZMA1}])),
                       ("app.env.delta", lzma.compress(original * 8, lzma.FORMAT_RAW, filters=[
                           {"id": lzma.FILTER_DELTA, "dist": 3}, {"id": lzma.FILTER_LZMA2}])),
                       ("sealed.zip", _sealed(_zipped(b"ciphertext here"))),
                       # round 5: what the tools restore past a bad checksum, streams and
                       # zips found elsewhere, cheap transforms, 33 layers of bzip2
                       ("crc.gz", _flipped(gzip.compress(original), -5)),
                       ("app.env.z", b"JUNK" + zlib.compress(original)),
                       ("app.env.deflate", _deflated(original)),
                       ("crc.zip", _flipped(_zipped(original), 14)),
                       ("trailing.zip", _zipped(original) + bytes(70000)),
                       ("deflate64.zip", _method(_zipped(b"unread method"), 9)),
                       ("magics.gz", b"\x1f\x8b\x08" * 66 + gzip.compress(original)),
                       ("app.env.rot13", original.translate(ROT13)),
                       ("app.env.reversed", original[::-1]),
                       ("app.env.utf32", original.decode().encode("utf-32")),
                       ("app.env.ebcdic", original.decode().encode("cp037")),
                       ("app.env.b32", _wrapped(base64.b32encode(original), 76)),
                       ("app.env.od", b"\n".join(b" ".join(b"%02x" % byte for byte in
                                                           original[at:at + 16])
                                                 for at in range(0, len(original), 16))),
                       ("app.env.spaced", b" ".join(_wrapped(base64.b64encode(original), 4)
                                                    .split())),
                       ("nested.bz2", _nested(original, 33)),
                       # an encoding is read whatever stands between its characters, and
                       # what it holds is read on: a format by its marks, text as text
                       ("app.json", b'{"id": 7, "blob": "' + base64.b64encode(b"z" + original)
                        + b'", "ok": true}'),
                       ("app.env.dotted", b".".join(_wrapped(base64.b64encode(b"ab" + original),
                                                             3).split())),
                       ("app.env.b64b64", base64.b64encode(base64.b64encode(b"xy" + original))),
                       ("app.env.hexgz", b"blob=" + binascii.hexlify(gzip.compress(original))
                        + b";\n"),
                       ("app.env.b32xz", base64.b32encode(lzma.compress(original))),
                       # round 6: a C array (xxd -i), octal between commas, and a copy
                       # behind thousands of archive members (they once spent the budget
                       # of pieces read out of guesses)
                       ("app.env.h", b"unsigned char env[] = {" + b", ".join(
                           b"0x%02x" % byte for byte in original) + b"};"),
                       ("app.env.oct", b",".join(b"%03o" % byte for byte in original)),
                       ("members.tar", _members(4200, base64.b64encode(gzip.compress(
                           original)))),
                       # round 7 (the rotation's forger): a copy sealed by `openssl enc`, as
                       # written, in base64 (-a), behind other bytes, in a tar; age's and
                       # OpenPGP's armor
                       ("app.env.enc", _enciphered(original)),
                       ("app.env.enc.b64", _enciphered(original, armored=True)),
                       ("app.env.enc.late", b"\n" + _enciphered(original)),
                       ("sealed.tar", _members(2, _enciphered(original))),
                       ("app.env.age", b"-----BEGIN AGE ENCRYPTED FILE-----\n" +
                        _wrapped(base64.b64encode(_enciphered(original)[16:]), 64)),
                       ("app.env.asc", b"-----BEGIN PGP MESSAGE-----\n\n" +
                        _wrapped(base64.b64encode(_enciphered(original)[16:]), 64))):
        assert SECRET.encode() not in data, name
        (backups / name).write_bytes(data)
        assert not _scan(tree, backups), name
        (backups / name).unlink()
    assert _scan(tree, backups)
    # A guess (a stream with no marks of its format) that inflates past its bound is noise,
    # not a copy: raw LZMA read from a tar.gz's bytes once made a correct backup a leak.
    (backups / "zeros.deflate").write_bytes(_deflated(bytes(300 << 20)))
    assert _scan(tree, backups)
    (backups / "zeros.deflate").unlink()
    # A place that is a link: what is "below" it is kept elsewhere, unscanned before
    elsewhere = tmp_path / "elsewhere"
    backups.rename(elsewhere)
    backups.symlink_to(elsewhere)
    assert not _scan(tree, backups)


def _enciphered(data: bytes, armored: bool = False) -> bytes:
    """`openssl enc -aes-256-cbc -pbkdf2` output of `data` (`-a`: in base64 lines), made by
    openssl where the host has it. Without it, a stand-in of the same form: the mark, the
    salt, then bytes of the ciphertext's length (the scan reads no cipher)."""
    if shutil.which("openssl"):
        return subprocess.run(["openssl", "enc", "-aes-256-cbc", "-pbkdf2", "-pass", "pass:x",
                               *(["-a"] if armored else [])], input=data, check=True,
                              capture_output=True).stdout
    sealed = b"Salted__" + bytes(range(8)) + hashlib.shake_256(data).digest(
        (len(data) // 16 + 1) * 16)  # padded to whole blocks
    return _wrapped(base64.b64encode(sealed), 64) if armored else sealed


def _members(count: int, last: bytes) -> bytes:
    """A tar of `count` small distinct members, then one holding `last`."""
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for number, data in [*((n, b"%d" % n * 3) for n in range(count)), ("last", last)]:
            member = tarfile.TarInfo(f"member-{number}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _signed_tar(name: str, data: bytes) -> bytes:
    """A tar whose header checksum is the signed sum of its bytes, as old tars wrote it."""
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        member = tarfile.TarInfo(name)
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    tar = bytearray(buffer.getvalue())
    header = tar[:148] + b" " * 8 + tar[156:512]
    signed = sum(byte - 256 if byte > 127 else byte for byte in header)
    assert signed != sum(header)
    tar[148:156] = b"%06o\0 " % signed
    with tarfile.open(fileobj=io.BytesIO(bytes(tar))) as archive:  # Python reads it too
        assert archive.extractfile(name).read() == data
    return bytes(tar)


def _wrapped(text: bytes, width: int) -> bytes:
    """`text` in lines of `width` characters, as `base64` and `xxd -p` write it."""
    return b"".join(text[at:at + width] + b"\n" for at in range(0, len(text), width))


def _sealed(zipped: bytes) -> bytes:
    """A zip whose member is flagged encrypted, in its local and central headers."""
    data = bytearray(zipped)
    data[6] |= 1
    central = data.rindex(b"PK\x01\x02")
    data[central + 8] |= 1
    return bytes(data)


def _zipped(data: bytes) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("app.env", data)
    return buffer.getvalue()


ROT13 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                        b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


def _flipped(data: bytes, at: int) -> bytes:
    """`data` with one bit of byte `at` flipped (a CRC field: the tools warn, then restore)."""
    data = bytearray(data)
    data[at] ^= 1
    return bytes(data)


def _deflated(data: bytes) -> bytes:
    """A raw deflate stream, gzip's body with no header."""
    packer = zlib.compressobj(wbits=-15)
    return packer.compress(data) + packer.flush()


def _method(zipped: bytes, method: int) -> bytes:
    """A zip whose member says it is compressed with `method` (9: deflate64)."""
    data = bytearray(zipped)
    data[8:10] = method.to_bytes(2, "little")
    central = data.rindex(b"PK\x01\x02")
    data[central + 10:central + 12] = method.to_bytes(2, "little")
    return bytes(data)


def _nested(data: bytes, layers: int) -> bytes:
    for _ in range(layers):
        data = bz2.compress(data)
    return data


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_secret_scan_reads_git_objects_packs_and_bundles(tmp_path):
    repo, backups = tmp_path / "repo", tmp_path / "backups"
    backups.mkdir()
    repo.mkdir()

    def git(*args: str, cwd: Path = repo) -> str:
        return subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@b", *args],
                              cwd=cwd, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    (repo / "app.env").write_text(f"TOKEN={SECRET}\n")
    git("add", "-A")
    git("commit", "-q", "-m", "leak")
    assert not _scan(repo)  # the work tree's file, and its loose blob
    (repo / "app.env").write_text("TOKEN=REDACTED\n")
    git("commit", "-q", "-am", "scrub")
    for number in range(120):  # a bundle's ref lines: more than 4 KiB before its pack
        git("tag", f"release-{number:03d}-of-the-old-history-with-a-long-name", "HEAD~1")
    git("bundle", "create", "-q", str(backups / "old.bundle"), "--all")
    assert (backups / "old.bundle").read_bytes().find(b"PACK") > 4096
    git("clone", "-q", "--mirror", str(repo), str(backups / "mirror.git"), cwd=tmp_path)
    git("gc", "-q", cwd=backups / "mirror.git")  # packed, nothing loose
    assert not list((backups / "mirror.git" / "objects").glob("??/*"))
    shutil.rmtree(repo)
    repo.mkdir()
    for name in ("mirror.git", "old.bundle"):  # the bundle alone last
        assert not _scan(repo, backups), name
        target = backups / name
        target.unlink() if target.is_file() else shutil.rmtree(target)
    assert _scan(repo, backups)
    # A pack whose blob is a delta with the secret split across two inserts (a forger's
    # backup): git restores it, and so must the scan's reading of the pack.
    original = f"TOKEN={SECRET}\n".encode()
    pack = _delta_pack(b"placeholder\n", original, original.index(SECRET.encode()) + 5)
    (backups / "old.pack").write_bytes(pack)
    git("init", "-q", "restored", cwd=tmp_path)
    subprocess.run(["git", "index-pack", "--stdin"], input=pack, check=True,
                   cwd=tmp_path / "restored", capture_output=True)
    blob = hashlib.sha1(b"blob %d\0" % len(original) + original).hexdigest()
    assert git("cat-file", "blob", blob, cwd=tmp_path / "restored") == original.decode()
    assert not _scan(repo, backups)


def _delta_pack(base: bytes, target: bytes, cut: int) -> bytes:
    """A pack of `base`, then `target` as a delta on it made of two inserts split at `cut`."""
    def entry(kind: int, size: int) -> bytes:  # type and size, 4 bits then 7 per byte
        out, first, size = bytearray(), kind << 4 | size & 15, size >> 4
        while size:
            out.append(first | 0x80)
            first, size = size & 0x7F, size >> 7
        return bytes(out + bytes([first]))

    parts = (target[:cut], target[cut:])
    assert all(0 < len(part) < 128 for part in parts)
    delta = bytes([len(base), len(target)]) + b"".join(bytes([len(p)]) + p for p in parts)
    base_id = hashlib.sha1(b"blob %d\0" % len(base) + base).digest()
    body = (b"PACK" + (2).to_bytes(4, "big") + (2).to_bytes(4, "big")
            + entry(3, len(base)) + zlib.compress(base)
            + entry(7, len(delta)) + base_id + zlib.compress(delta))
    return body + hashlib.sha1(body).digest()


def test_the_tree_entries_are_exactly_the_files_and_their_folders(tmp_path):
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "c.txt").write_bytes(b"c")
    (root / "d.txt").write_bytes(b"d")
    check = TreeEntries.of("x", str(root), {"a/b/c.txt": b"c", "d.txt": b"d"})
    assert _passes(check)
    (root / "d.txt").write_bytes(b"D")
    assert not _passes(check)
    (root / "d.txt").write_bytes(b"d")
    (root / "a" / "empty").mkdir()  # a new folder, even an empty one
    assert not _passes(check)
    (root / "a" / "empty").rmdir()
    (root / ".hidden").write_bytes(b"")
    assert not _passes(check)
    (root / ".hidden").unlink()
    (root / ".git" / "objects").mkdir(parents=True)  # a repository's own folder
    assert not _passes(check)
    assert _passes(replace(check, git=True))
    (root / "a" / ".git").mkdir()  # only at the top
    assert not _passes(replace(check, git=True))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_object_store_holds_only_what_git_keeps_there(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=A", "-c", "user.email=a@b", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f").write_text("x\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    check = ObjectStore("x", repo=str(repo))
    assert _passes(check)  # loose objects
    subprocess.run([*git, "gc", "-q", "--prune=now"], check=True)
    assert _passes(check)  # packs, info/packs, a commit-graph
    objects = repo / ".git" / "objects"
    (objects / "info" / "alternates").write_text("/elsewhere/objects\n")
    assert not _passes(check)
    (objects / "info" / "alternates").unlink()
    hidden = objects / "tmp_objdir-incoming-abc123" / "pack"
    hidden.mkdir(parents=True)
    assert not _passes(check)
    shutil.rmtree(hidden.parent)
    assert _passes(check)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_real_filter_branch_gives_the_expected_log_and_purges_the_secret(tmp_path, seed):
    """Build the task's repository, run the reference and the alternative solutions, and
    run the rendered checks on the result (git in the test host, not the sandbox)."""
    difficulty = LEVELS[seed % len(LEVELS)]
    draft = _draft("security.purge_git_secret", seed, difficulty)
    task = draft.task
    setup = next(f for f in task.environment if f.path == "setup.sh").content.decode()
    root = tmp_path / "root"
    files = {f.path.removeprefix("files"): f.content for f in task.environment
             if f.path.startswith("files/")}
    for name in ("solve.sh", "alternatives/other-tools.sh"):
        shutil.rmtree(root, ignore_errors=True)
        script = "\n".join(line for line in setup.splitlines() if "chown" not in line)
        for path, content in files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        # run everything below tmp_path: the absolute paths get the root as prefix
        for path in ("tmp", "srv"):  # tmp first: the root itself is below /tmp
            script = script.replace(f" /{path}/", f" {root}/{path}/")
        solution = next(f for f in task.solution if f.path.endswith(name)).content.decode()
        for path in ("srv",):
            solution = solution.replace(f" /{path}/", f" {root}/{path}/")
        subprocess.run(["bash", "-c", "set -eu\n" + script], check=True, cwd=tmp_path)
        subprocess.run(["bash", "-c", solution], check=True, cwd=tmp_path)
        tests = next(f for f in task.tests if f.path == "test_outputs.py").content.decode()
        tests = tests.replace("'/srv/", f"'{root}/srv/")
        for place in ELSEWHERE:  # the places copies are looked for in: the test's own
            tests = tests.replace(repr(place), repr(f"{root}{place}"))
        module = tmp_path / f"check_{name.split('/')[0].split('.')[0]}.py"
        module.write_text(tests)
        done = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(module)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:]


# --- rotate_credential ---------------------------------------------------------------------

def _rotation(tmp_path: Path, seed: int, difficulty: Difficulty, *, steps: int = 2):
    """The rotation step on a small tree below tmp_path (not the last step: no chown)."""
    from taskloom.generators.procedural.artifacts import FileTree, TreeFile
    from taskloom.generators.procedural.primitives.security import rotate_credential

    root = str(tmp_path / "share")
    world = World()
    tree_files = (TreeFile("docs/notes.txt", b"audit notes\n"),
                  TreeFile("report-01.txt.bak", b"an editor's backup\n"))
    for item in tree_files:
        world.add(f"{root}/{item.relpath}", item.content)
    context = StepContext(rng=random.Random(seed), difficulty=difficulty,
                          domain=DOMAINS["security"], world=world, step=1, steps=steps)
    tree = FileTree(path=root, phrase=f"the directory `{root}`", files=tree_files)
    return rotate_credential(context, tree), world


def _build(tmp_path: Path, world: World) -> None:
    """Write the world's files, those outside tmp_path below tmp_path/outside."""
    shutil.rmtree(tmp_path / "share", ignore_errors=True)
    shutil.rmtree(tmp_path / "outside", ignore_errors=True)
    for path, spec in world.files.items():
        target = Path(path) if path.startswith(str(tmp_path)) else \
            tmp_path / "outside" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(spec.content)


def _local(script: str, tmp_path: Path) -> str:
    """The script on the test host: paths outside the tree below tmp_path/outside (a
    mutant moves the stale backups to /root)."""
    (tmp_path / "outside" / "root").mkdir(parents=True, exist_ok=True)
    local = script.replace("/var/lib/vault/", f"{tmp_path}/outside/var/lib/vault/").replace(
        " -t /root ", f" -t {tmp_path}/outside/root ")
    assert "/root" not in local.replace(f"{tmp_path}/outside/", ""), "a host path: /root"
    return local


def _holds(check) -> bool:
    """Whether the rendered check passes (a missing file fails it, as in pytest)."""
    try:
        return _passes(check)
    except OSError:
        return False


def _rotation_checks(result, tmp_path: Path):
    """The checks on the test host: copies and kept backups are looked for below tmp_path."""
    return [replace(c, places=(str(tmp_path / "outside"),)) if isinstance(c, SecretsAbsent)
            else replace(c, top=str(tmp_path)) if isinstance(c, Deleted)
            else c for c in result.checks]


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs GNU sed")
@pytest.mark.parametrize("seed", range(6))
def test_the_rotation_solutions_reach_the_expected_bytes_and_each_mutant_fails(tmp_path,
                                                                                seed):
    """The reference (sed) and the alternative (python) make the bytes the checks expect;
    each rule's mutant fails a check (on the test host, below tmp_path)."""
    result, world = _rotation(tmp_path, seed, LEVELS[seed % len(LEVELS)])
    checks = _rotation_checks(result, tmp_path)
    assert _build(tmp_path, world) is None and not all(_holds(c) for c in checks)  # nop
    for script in (result.solution, result.alternative):
        _build(tmp_path, world)
        subprocess.run(["bash", "-c", "set -eu\n" + _local(script, tmp_path)], check=True)
        assert all(_holds(c) for c in checks), script[:200]
    assert {r.name for r in result.rules} >= {"delete-backups", "moved-backups", "same-key",
                                               "url-encoded", "keep-clean-backups"}
    for rule in result.rules:
        _build(tmp_path, world)
        subprocess.run(["bash", "-c", "set -eu\n" + _local(rule.ignored, tmp_path)],
                       check=True)
        assert not all(_holds(c) for c in checks), rule.name


def test_the_url_form_is_what_urllib_quotes_and_what_the_bash_function_writes():
    from urllib.parse import quote

    from taskloom.generators.procedural.primitives.security import (
        PASSWORD_MARKS,
        _rotation_password,
        url_encoded,
    )
    context = _context(3, LEVELS[0])
    values = [_rotation_password(context) for _ in range(20)] + ["a-b.c_d~e", "ü@x"]
    for value in values:
        assert url_encoded(value) == quote(value, safe="")
        if any(c in PASSWORD_MARKS for c in value):
            assert url_encoded(value) != value
    script = ("urlenc() { local s=$1 out='' c i\n"
              "  for ((i = 0; i < ${#s}; i++)); do c=${s:i:1}\n"
              "    case $c in [A-Za-z0-9._~-]) out+=$c ;; *) printf -v c '%%%02X' \"'$c\"; "
              "out+=$c ;; esac\n"
              "  done; printf '%s' \"$out\"; }\n"
              'for v in "$@"; do urlenc "$v"; echo; done')
    ascii = values[:-1]
    done = subprocess.run(["bash", "-c", script, "x", *ascii], capture_output=True,
                          text=True, check=True, env={"LC_ALL": "C", "PATH": os.environ["PATH"]})
    assert done.stdout.splitlines() == [url_encoded(v) for v in ascii]
    result, _ = _rotation(Path("/nonexistent"), 1, LEVELS[0])
    assert script.split("\n  done")[0].split("\n")[1] in result.solution  # the same function


def test_every_syntax_backup_and_look_alike_occurs_across_seeds(tmp_path):
    from taskloom.generators.procedural.primitives.security import Credential, url_encoded

    seen: set[str] = set()
    for seed in range(40):
        difficulty = LEVELS[seed % len(LEVELS)]
        result, world = _rotation(tmp_path, seed, difficulty)
        files = {p.rsplit("/share/", 1)[1]: s.content.decode() for p, s in world.files.items()
                 if "/share/" in p}
        text = result.instruction
        old = (text.split("current value is `")[1].split("`")[0]
               if "current value is `" in text else None)
        ini = next(t for p, t in files.items() if p.endswith(".ini") and "logging" not in p)
        values = re.findall(r"^(?:password|api_key) = (.*)$", ini, re.M)
        old = old or values[0]
        assert old == values[0] and len(values) == 2
        assert values[1] != old and old not in values[1]  # the same key, another value
        kinds = {
            "ini": f" = {old}\n" in ini,
            "env": any(f"={old}\n" in t for p, t in files.items() if p.endswith(".env")),
            "dotenv": "deploy/.env" in files,
            "yaml": any(f': "{old}"' in t or f": '{old}'" in t for p, t in files.items()
                        if p.endswith(".yaml")),
            "json": any(f'": "{old}"' in t for p, t in files.items() if p.endswith(".json")),
            "url-env": any(f":{url_encoded(old)}@" in t for p, t in files.items()
                           if p.endswith(".env")),
            "url-yaml": any(f":{url_encoded(old)}@" in t for p, t in files.items()
                            if p.endswith(".yaml")),
            "systemd": any(p.endswith(".service") and f"={old}\n" in t
                           for p, t in files.items()),
            "systemd-quoted": any(p.endswith(".service") and f'={old}"' in t
                                  for p, t in files.items()),
            "api-key": "API key" in text,
            "look-alike": any(old[:10] in t.replace(old, "") for t in files.values()),
            "bak": any(p.endswith(".ini.bak") and old in t for p, t in files.items()),
            "orig": any(p.endswith(".orig") and old in t for p, t in files.items()),
            "tilde": any(p.endswith("~") and old in t for p, t in files.items()),
            "clean-backup": "config/logging.ini.bak" in files,
            "spaced-name": any(" " in p for p in files),
            "vault-file": "/var/lib/vault/" in text,
            "stated-new": "the new value is `" in text,
            "read-old": "setting of the `[" in text,
        }
        seen |= {name for name, there in kinds.items() if there}
        assert kinds["ini"] and kinds["bak"] and (kinds["url-env"] or kinds["url-yaml"])
        cred = Credential("database password", "database", "password", "X", old, "N3w!x")
        for content in files.values():  # every occurrence goes, in its URL form too
            after = cred.rotate(content.encode())
            assert old.encode() not in after and url_encoded(old).encode() not in after
            assert after.count(b"N3w!x") + after.count(b"N3w%21x") == \
                content.count(old) + content.count(url_encoded(old))
    assert seen == {"api-key", "ini", "env", "dotenv", "yaml", "json", "url-env", "url-yaml",
                    "systemd", "systemd-quoted", "look-alike", "bak", "orig", "tilde",
                    "clean-backup", "spaced-name", "vault-file", "stated-new", "read-old"}


def test_the_rotation_tightens_modes_only_on_the_last_step_and_is_deterministic(tmp_path):
    final = [_rotation(tmp_path, seed, LEVELS[1], steps=1)[0] for seed in range(12)]
    assert any(any(c.label.startswith("the files holding") for c in r.checks) for r in final)
    assert any("chown" in r.solution and "step" not in r.solution for r in final)
    middle = [_rotation(tmp_path, seed, LEVELS[1])[0] for seed in range(12)]
    assert not any("chown" in r.solution for r in middle)
    one, two = (_draft("security.rotate_credential", 7, LEVELS[2]) for _ in range(2))
    assert one.task.instruction == two.task.instruction
    assert [f.content for f in one.task.environment] == [f.content for f in two.task.environment]
    assert [f.content for f in one.task.tests] == [f.content for f in two.task.tests]


# What a rotation plants (its config and deploy folders) opened to everyone after the work.
OPENED = ("for folder in {root}/config {root}/deploy; do\n"
          "  [ -d \"$folder\" ] && {change} \"$folder\"\n"
          "done\n")


@pytest.mark.bwrap
@pytest.mark.parametrize(("first", "change"), [("perms.set_modes", "chmod 2777"),
                                               ("perms.chown_tree", "chown nobody:nogroup")])
def test_what_a_rotation_plants_is_held_to_the_earlier_steps_rule(bwrap_runtime, first,
                                                                  change):
    """A rotation after a mode or owner step: its config files are in the tree from the
    start, so the earlier step's rule holds for them too. The earlier step's check listed
    the tree as it was before the rotation planted them, so leaving the planted folders
    2777 or `nobody:nogroup` earned 1 (red team, the permissions chain)."""
    task = task_for((first, "security.rotate_credential"), 0)
    root = re.search(r"root = Path\('([^']+)'\)", task.file("tests", "test_outputs.py")
                     .content.decode()).group(1)
    found = rewards(bwrap_runtime, (first, "security.rotate_credential"), 0, endings={
        "reference": "", "planted-folders-left-open": OPENED.format(root=root,
                                                                    change=change)})
    assert found == {"reference": 1.0, "planted-folders-left-open": 0.0}, found


@pytest.mark.bwrap
def test_stale_backups_moved_anywhere_are_not_deleted(bwrap_runtime):
    """Stale backups moved out of the tree are kept, not deleted: the tree's listing and the
    scan of the usual places passed them (moved to `/root`, `/run`, `/boot` or `/`, then
    below a path too long for os.walk: each earned 1 in a red-team round of the
    rotation)."""
    task = task_for(("security.rotate_credential",), 0)
    reference = task.file("solution", "solve.sh").content.decode()
    assert reference.count("xargs -0 -r rm -f --") == 1
    kept = {f"moved-to-{place.strip('/') or 'top'}": reference.replace(
        "xargs -0 -r rm -f --", f"xargs -0 -r mv --backup=numbered -t {place} --")
        for place in ("/root", "/run", "/boot", "/")}
    # below a path longer than PATH_MAX (4096), which os.walk skipped without a word
    kept["moved-below-a-long-path"] = reference.replace(
        "xargs -0 -r rm -f --", "xargs -0 -r python3 -c 'import os, sys\n"
        "os.chdir(\"/root\")\nfor _ in range(20):\n    os.mkdir(\"x\" * 240)\n"
        "    os.chdir(\"x\" * 240)\nfor path in sys.argv[1:]:\n"
        "    os.rename(path, os.path.basename(path))'")
    found = solution_rewards(bwrap_runtime, task, {"reference": reference, **kept})
    assert found == {"reference": 1.0, **dict.fromkeys(kept, 0.0)}, found


@pytest.mark.bwrap
def test_modes_set_on_a_chains_tree_hold_for_a_planted_script_and_hidden_file(bwrap_runtime):
    """A mode step after an owner step plants a `.sh` script and a hidden file in the tree
    (there from the start, handed over by the owner step too), so its rules for them are
    exercised: the tree the chain got had neither, and a solution giving every file one
    mode earned 1 (00019, the pinned chain)."""
    chain = ("perms.chown_tree", "perms.set_modes")
    task = task_for(chain, 0)
    planted = [f.path for f in task.environment if f.path.startswith("files/")
               and (f.path.endswith(".sh") or "/." in f.path)]
    assert len(planted) == 2, planted
    scripts = {f.path.removeprefix("mutants/").removesuffix(".sh"): f.content.decode()
               for f in task.solution if f.path.startswith(("mutants/step-2", "alternatives/"))}
    assert set(scripts) == {"step-2-scripts", "step-2-hidden", "alternatives/other-tools"}
    reference = task.file("solution", "solve.sh").content.decode()
    found = solution_rewards(bwrap_runtime, task, {"reference": reference, **scripts})
    assert found == {"reference": 1.0, "step-2-scripts": 0.0, "step-2-hidden": 0.0,
                     "alternatives/other-tools": 1.0}, found


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_purge_check_reads_every_object_as_git_does(tmp_path):
    """No object holds the secret: a binary blob is read as bytes (it failed the check
    before, text decoding), and a tag object holding the secret in its message, left
    unreachable, is found (only blobs were read; a forger kept the old file there in a
    pack the file scan could not walk)."""
    repo = tmp_path / "repo"

    def git(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@b", *args],
                              cwd=repo, check=True, capture_output=True, input=data
                              ).stdout.decode()

    repo.mkdir()
    git("init", "-q", "-b", "main")
    (repo / "app.env").write_text("TOKEN=REDACTED\n")
    git("add", "-A")
    git("commit", "-q", "-m", "settings")
    check = SecretPurged("x", repo=str(repo), secret=SECRET)
    assert _passes(check)
    git("hash-object", "-w", "--stdin", data=bytes(range(256)) * 4)  # a binary blob
    assert _passes(check)
    git("tag", "-a", "old", "-m", f"TOKEN={SECRET}")
    git("tag", "-d", "old")  # the tag object stays, unreachable
    assert not _passes(check)
