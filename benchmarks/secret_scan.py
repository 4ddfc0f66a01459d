"""The secret scan's cost: a rotate task's system scan and inputs that stress its decoders.

    .venv/bin/python benchmarks/secret_scan.py [--rounds 3] [--size-mib 1]

The checks of `security.rotate_credential` scan the folders people keep config backups
in (`STASHES`: /etc, /var, /usr/local... of the base image, ~6 MiB). Timed here: the
rendered `SecretsAbsent` check (the code the task's verifier runs) over those folders of
the base image's root filesystem (`taskloom base-image export` makes it), and over one
file of each stressing kind (prose, printable noise, hex digits, a run of one letter,
base64 of zeros, random bytes). The baseline, measured in the same run on the same files,
is the floor of any scan: the same walk reading every file and searching the secret as
it is. Last, the rotation's `Deleted` check over the whole root filesystem (the walk by
directory handles it shares with debugging's world-writable check, hashing the files of
a stale backup's size), beside a bare `os.walk` that stats every entry. Each line prints
the best of `--rounds` for both and their ratio; a check is rendered and compiled once,
before the timed calls.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import tempfile
import time
from pathlib import Path

from taskloom.generators.procedural.checks import HEADER
from taskloom.generators.procedural.primitives.security import STASHES, Deleted, SecretsAbsent
from taskloom.sandbox import rootfs

SECRETS = ("sk_live_Zq8DfX2mPLr4WcT0aNvB7yHe", "Tr0ub4dor&3-horse")


def scanner(tops: list[Path]):
    """The task's check over `tops`, rendered and compiled once; calling it must pass."""
    return compiled(SecretsAbsent("bench", root=str(tops[0]), secrets=SECRETS,
                                  places=tuple(map(str, tops[1:]))))


def deletion(root: Path):
    """`Deleted` over `root` for stale backups of the sizes of its 50 largest files' (so
    they are read and hashed), with bytes no file has; calling it must pass."""
    sizes = sorted(p.lstat().st_size for p in root.rglob("*") if p.is_file()
                   and not p.is_symlink())[-50:]
    return compiled(Deleted("bench", files=tuple((size, "0" * 64) for size in sizes),
                            top=str(root)))


def compiled(check):
    """The rendered test function of `check`, compiled once."""
    space: dict = {}
    exec(compile(HEADER + "\n" + check.render(1), "checks", "exec"), space)
    return space[check.test_name(1)]


def floor(tops: list[Path]):
    """The same walk, each file read and searched for the secrets as they are."""
    wanted = [secret.encode() for secret in SECRETS]

    def walk() -> None:
        for top in tops:
            for folder, _dirs, names in os.walk(top):
                for name in names:
                    path = os.path.join(folder, name)
                    if os.path.isfile(path) and not os.path.islink(path):
                        data = Path(path).read_bytes()
                        if any(secret in data for secret in wanted):
                            raise AssertionError(path)
    return walk


def bare_walk(root: Path):
    """A walk of `root` that stats every entry, no link followed."""
    def walk() -> None:
        for folder, dirs, names in os.walk(root):
            for name in dirs + names:
                os.lstat(os.path.join(folder, name))
    return walk


def best(job, rounds: int) -> float:
    """The fastest of `rounds` calls of `job()`, in seconds."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return min(times)


def stressing_inputs(size: int, seed: int = 0) -> dict[str, bytes]:
    """One input of `size` bytes per kind a decoder may be slow on."""
    rng = random.Random(seed)
    words = ["config", "server", "listen", "value", "the", "of", "path", "user", "error",
             "timeout", "cache", "=", "#", "{", "}", "127.0.0.1", "/var/log/app"]
    prose = " ".join(rng.choice(words) for _ in range(size // 5)).encode()
    printable = bytes(rng.randrange(32, 127) for _ in range(size))
    hexy = bytes(rng.choice(b"0123456789abcdef \n") for _ in range(size))
    return {
        "prose": prose[:size],
        "printable noise": printable,
        "hex digits": hexy,
        "one letter (A...)": b"A" * size,
        "base64 of zeros": base64.b64encode(bytes(size * 3 // 4))[:size],
        "random bytes": rng.randbytes(size),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--size-mib", type=float, default=1.0,
                        help="size of each stressing input")
    args = parser.parse_args()
    root = rootfs.require().path
    tops = [root / place.lstrip("/") for place in STASHES]
    files = [Path(f, n) for top in tops for f, _d, names in os.walk(top) for n in names]
    size = sum(p.stat().st_size for p in files if p.is_file() and not p.is_symlink())
    rows = [(f"base image system scan ({len(files)} entries, {size / 2**20:.1f} MiB)",
             best(scanner(tops), args.rounds), best(floor(tops), args.rounds))]
    with tempfile.TemporaryDirectory() as scratch:
        for kind, data in stressing_inputs(int(args.size_mib * 2**20)).items():
            top = Path(scratch, kind.split()[0])
            top.mkdir()
            (top / "input").write_bytes(data)
            rows.append((f"{args.size_mib:g} MiB of {kind}", best(scanner([top]), args.rounds),
                         best(floor([top]), args.rounds)))
    entries = sum(len(d) + len(n) for _f, d, n in os.walk(root))
    rows.append((f"whole root filesystem, Deleted ({entries} entries)",
                 best(deletion(root), args.rounds), best(bare_walk(root), args.rounds)))
    print(f"{'input':<52} {'scan s':>8} {'floor s':>8} {'ratio':>7}")
    for name, scanned, floored in rows:
        print(f"{name:<52} {scanned:8.3f} {floored:8.3f} {scanned / floored:7.1f}x")


if __name__ == "__main__":
    main()
