"""Security hygiene primitives: secrets scrubbed from files, a leaked secret purged from git.

Secrets are realistic but fake, drawn from `ctx.rng`: passwords, API tokens (`ghp_...`,
`sk_live_...`), AWS access key ids and secret keys, private key blocks. Beside them sit
what only looks like one (`password_min_length = 12`, a commented example
`# token = <your-token>`, a certificate, a lockfile hash), which must stay.

What counts as a secret is stated as rules (`ScrubRules`) that one Python model and one
sed script both follow, flag by flag: the expected bytes come from the model, the
reference solution and each rule's mutant from the script with the same flags, so a
mutant's output is known before it runs (`differs` on every file of the tree).

The purge rewrites history. The commits a rewrite makes get new committer dates with
some tools (rebase), so from the commit that introduced the secret on they are the git
family's `NewCommit`s, whose hashes no later step relies on; the commits before it keep
their hashes, and the checks see each commit's tree id, author and subject, which every
correct rewrite keeps. Whether the secret is gone is read from the object database
itself (every blob, reachable or not), never from a listing the agent could curate.

A secret kept anywhere earns nothing, as far as the checks can look cheaply: the tree (or
the repository's working tree) must hold exactly the expected files and their folders,
no other entry (ignored, empty or hidden ones included), and `.git/objects` nothing but
git's own loose objects, packs and `info/` files; every entry below the tree or repository
is scanned for the secrets in its name, link target, extended attributes and bytes, as
they are and decompressed (gzip, bzip2, xz, zlib, zip and tar members, git packs and
bundles, a few levels deep). The same scan covers the places a copy is usually left: the
folder around the tree or repository and `/tmp`, `/var/tmp`, `/var/backups` (`ELSEWHERE`),
all of which the instruction names. Its limit: a copy elsewhere on the disk (`/root`,
where the agent's own tooling and package caches live, `/opt`, ...), or one encoded in a
way the scan does not undo (base64, encryption, a split secret), is not seen; the
instruction forbids copies anywhere, but only these places are checked.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import string
from dataclasses import dataclass, replace

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Commit, FileTree, GitRepo, TreeFile
from taskloom.generators.procedural.checks import Assertion, CommandText, FileDigests
from taskloom.generators.procedural.primitives._history import (  # a rewritten commit is
    NewCommit,  # a NewCommit to every later git step
    commit_hashes,
    tree_at,
    tree_id,
)
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.sources.git import committed
from taskloom.generators.procedural.world import DAY, lines_text, q

PLACEHOLDERS = ("REDACTED", "<redacted>", "***REMOVED***", "[SCRUBBED]")
SUFFIXES = ("password", "secret", "token", "api_key", "secret_access_key")
ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"
KEY_CHARS = "A-Za-z0-9_.-"


def _random(ctx: StepContext, alphabet: str, size: int) -> str:
    return "".join(ctx.rng.choice(alphabet) for _ in range(size))


def _password(ctx: StepContext) -> str:
    """A strong password: letters and digits with a few safe punctuation marks."""
    while True:
        text = _random(ctx, ALNUM + "-_.!@%+", ctx.rng.randint(14, 22))
        if text[0] in ALNUM and any(c.isdigit() for c in text):
            return text


def _token(ctx: StepContext) -> str:
    """An API token in one of the common vendor formats."""
    kind = ctx.rng.choice(("github", "stripe", "slack", "hex"))
    if kind == "github":
        return "ghp_" + _random(ctx, ALNUM, 36)
    if kind == "stripe":
        return "sk_live_" + _random(ctx, ALNUM, 24)
    if kind == "slack":
        return (f"xoxb-{ctx.rng.randint(10**10, 10**11 - 1)}-"
                f"{ctx.rng.randint(10**11, 10**12 - 1)}-{_random(ctx, ALNUM, 24)}")
    return _random(ctx, "0123456789abcdef", 40)


def _aws_id(ctx: StepContext) -> str:
    return "AKIA" + _random(ctx, string.ascii_uppercase + "234567", 16)


def _aws_secret(ctx: StepContext) -> str:
    return _random(ctx, BASE64, 40)


@dataclass(frozen=True)
class ScrubRules:
    """What a scrub treats as a secret; each flag off is one stated rule ignored."""

    placeholder: str
    anchored: bool = True  # a setting line starts with its key (comments are no settings)
    ends: bool = True  # the key ends with a sensitive word (not merely contains it)
    folded: bool = True  # keys are matched ignoring case
    quotes: bool = True  # a quoted value keeps its quotes
    empty: bool = True  # an empty value stays empty
    aws: bool = True  # AWS access key ids are secrets wherever they appear
    markers: bool = True  # a private key block keeps its BEGIN and END lines
    private: bool = True  # only private key blocks, not certificates or public keys

    def _key(self) -> str:
        tail = f"[{KEY_CHARS}]*" if not self.ends else ""
        return f"[{KEY_CHARS}]*({'|'.join(SUFFIXES)}){tail}"

    def _block(self, word: str) -> str:
        return f"-----{word} [A-Z ]*{'PRIVATE KEY' if self.private else ''}-----"

    def sed(self, root: str) -> str:
        """The bash fragment applying these rules to every file below `root`."""
        blank = "[[:blank:]]"
        prefix = (f"^({blank}*" if self.anchored else "(") + \
            f"{self._key()}{blank}*[=:]{blank}*)"
        flag = "I" if self.folded else ""
        place = self.placeholder
        block = f"/^{self._block('BEGIN')}$/,/^{self._block('END')}$/{{"
        script = [block, *(["/^-----BEGIN /b"] if self.markers else []),
                  f"/^-----END /i {place}", *(["/^-----END /b"] if self.markers else []),
                  "d", "}"]
        if self.aws:
            script.append(f"s/\\bAKIA[0-9A-Z]{{16}}\\b/{place}/g")
        if self.quotes:
            script += [f"s/{prefix}\"[^\"]*\"$/\\1\"{place}\"/{flag}",
                       f"s/{prefix}'[^']*'$/\\1'{place}'/{flag}",
                       f"s/{prefix}[^\"'[:blank:]].*$/\\1{place}/{flag}"]
        else:
            script.append(f"s/{prefix}.+$/\\1{place}/{flag}")
        if not self.empty:
            script.append(f"s/{prefix}$/\\1{place}/{flag}")
        words = " ".join(f"-e {q(part)}" for part in script)
        return (f"find {q(root)} -type f -print0 |\n"
                f"  LC_ALL=C xargs -0 -r sed -E -i {words}")

    def apply(self, data: bytes) -> bytes:
        """The file's bytes once these rules are applied (what the sed script makes)."""
        flags = re.IGNORECASE if self.folded else 0
        start = r"^([ \t]*" if self.anchored else "("
        prefix = f"{start}{self._key().replace('(', '(?:', 1)}[ \\t]*[=:][ \\t]*)".encode()
        place = self.placeholder.encode()
        begin, end = (re.compile(self._block(w).encode()) for w in ("BEGIN", "END"))
        aws = re.compile(rb"\bAKIA[0-9A-Z]{16}\b")
        subs = ([(prefix + rb'"[^"]*"$', rb'\1"' + place + rb'"'),
                 (prefix + rb"'[^']*'$", rb"\1'" + place + rb"'"),
                 (prefix + rb"[^\"' \t].*$", rb"\1" + place)] if self.quotes else
                [(prefix + rb".+$", rb"\1" + place)])
        if not self.empty:
            subs.append((prefix + rb"$", rb"\1" + place))
        out: list[bytes] = []
        inside = False
        for line in data.split(b"\n"):
            if inside:
                if end.fullmatch(line):
                    out += [place, line] if self.markers else [place]
                    inside = False
                continue
            if begin.fullmatch(line):
                inside = True
                out += [line] if self.markers else []
                continue
            if self.aws:
                line = aws.sub(lambda _: place, line)
            for pattern, repl in subs:
                line = re.sub(pattern, lambda m, r=repl: m.expand(r), line, count=1,
                              flags=flags)
            out.append(line)
        return b"\n".join(out)


# The body of a secret scan: `leaks(data)` is True when the bytes hold a secret, as they
# are or once decompressed (gzip, bzip2, xz, zlib as git's loose objects, a zip's or a
# tar's members, a git pack or bundle's objects), a few levels deep.
_LEAKS = [
    "import bz2, gzip, io, lzma, zlib",
    "CAP = 1 << 28",
    "def _zlib(view):",
    "    d = zlib.decompressobj()",
    "    return d.decompress(view, CAP), d",
    "def _pack(data):",
    "    start = data.find(b'PACK')",
    "    view, out = memoryview(data), []",
    "    if start < 0 or len(data) < start + 12:",
    "        return out",
    "    pos = start + 12",
    "    for _ in range(int.from_bytes(data[start + 8:start + 12], 'big')):",
    "        byte = data[pos]",
    "        kind, pos = byte >> 4 & 7, pos + 1",
    "        while byte & 0x80:",
    "            byte, pos = data[pos], pos + 1",
    "        if kind == 6:",
    "            byte, pos = data[pos], pos + 1",
    "            while byte & 0x80:",
    "                byte, pos = data[pos], pos + 1",
    "        elif kind == 7:",
    "            pos += 20",
    "        text, d = _zlib(view[pos:])",
    "        out.append(text)",
    "        if not d.eof:",
    "            break",
    "        pos = len(data) - len(d.unused_data)",
    "    return out",
    "def _inner(data):",
    "    out = []",
    "    if data[:2] == b'\\x1f\\x8b':",
    "        out.append(gzip.GzipFile(fileobj=io.BytesIO(data)).read(CAP))",
    "    elif data[:3] == b'BZh':",
    "        out.append(bz2.BZ2Decompressor().decompress(data, CAP))",
    "    elif data[:6] == b'\\xfd7zXZ\\x00':",
    "        out.append(lzma.LZMADecompressor().decompress(data, CAP))",
    "    elif len(data) > 2 and data[0] & 15 == 8 and (data[0] << 8 | data[1]) % 31 == 0:",
    "        out.append(_zlib(data)[0])",
    "    if data[:4] == b'PK\\x03\\x04':",
    "        with zipfile.ZipFile(io.BytesIO(data)) as archive:",
    "            out += [archive.read(info) for info in archive.infolist()]",
    "    if data[257:262] == b'ustar':",
    "        with tarfile.open(fileobj=io.BytesIO(data)) as archive:",
    "            out += [archive.extractfile(m).read() for m in archive if m.isfile()]",
    "    if b'PACK\\x00\\x00\\x00' in data[:4096]:",
    "        out += _pack(data)",
    "    return out",
    "def leaks(data, depth=0):",
    "    if any(secret in data for secret in secrets):",
    "        return True",
    "    try:",
    "        inner = _inner(data) if depth < 4 else []",
    "    except Exception:",
    "        inner = []",
    "    return any(leaks(part, depth + 1) for part in inner)",
]


def _scan(tops: str) -> list[str]:
    """Lines scanning every entry below the directories of the expression `tops`.

    Its path, link target, extended attributes and bytes (decompressed too); no link
    is followed.
    """
    return [
        *_LEAKS,
        f"for top in {tops}:",
        "    if not os.path.isdir(top) or os.path.islink(top):",
        "        continue",
        "    for folder, dirs, names in os.walk(top):",
        "        for name in dirs + names:",
        "            path = os.path.join(folder, name)",
        "            found = [os.fsencode(path)]",
        "            if os.path.islink(path):",
        "                found.append(os.fsencode(os.readlink(path)))",
        "            try:",
        "                keys = os.listxattr(path, follow_symlinks=False)",
        "            except OSError:",
        "                keys = []",
        "            found += [os.getxattr(path, key, follow_symlinks=False) for key in keys]",
        "            assert not any(leaks(data) for data in found), (path, 'holds a secret')",
        "            if stat.S_ISREG(os.lstat(path).st_mode):",
        "                assert not leaks(Path(path).read_bytes()), (path, 'holds a secret')",
    ]


# Where a copy of a secret is looked for besides the tree or repository itself: the folder
# around it and the usual scratch and backup folders. Not /root (the agent's own tooling
# lives there, caches of compressed packages) nor the rest of the disk.
ELSEWHERE = ("/tmp", "/var/tmp", "/var/backups")


def elsewhere(path: str) -> tuple[str, ...]:
    """The folders a copy of `path`'s secrets is looked for in.

    Its parent (unless that is a top-level folder) and `ELSEWHERE`.
    """
    parent = posixpath.dirname(path.rstrip("/"))
    return ((parent,) if parent.count("/") >= 2 else ()) + ELSEWHERE


def places_words(places: tuple[str, ...]) -> str:
    """`/a`, `/b` or `/c`."""
    named = [f"`{p}`" for p in places]
    return ", ".join(named[:-1]) + f" or {named[-1]}" if len(named) > 1 else named[0]


@dataclass(frozen=True)
class SecretsAbsent(Assertion):
    """No entry below a directory, nor below the places a copy could be kept in, holds a secret.

    Not in its name, link target, extended attributes or bytes, as they are or
    decompressed (archives, gzip files, git objects, packs and bundles).
    """

    root: str = ""
    secrets: tuple[str, ...] = ()
    places: tuple[str, ...] = ()

    def body(self) -> list[str]:
        """Scan the root, then the places."""
        return [f"root = {self.root!r}",
                "assert os.path.isdir(root) and not os.path.islink(root), root",
                f"secrets = [s.encode() for s in {list(self.secrets)!r}]",
                *_scan(f"[root, *{list(self.places)!r}]")]

    def reads(self) -> tuple[str, ...]:
        """The tree and the places."""
        return (self.root, *self.places)


@dataclass(frozen=True)
class TreeEntries(Assertion):
    """The entries below a directory are exactly these files and the folders holding them.

    Each with these bytes; no other file, folder, link or device (`.git` at the top left
    out for a repository's working tree).
    """

    root: str = ""
    digests: tuple[tuple[str, str], ...] = ()  # (relpath, sha256)
    git: bool = False

    @staticmethod
    def of(label: str, root: str, files: dict[str, bytes], git: bool = False) -> TreeEntries:
        """An assertion that `root` holds exactly these files (relpath -> bytes)."""
        return TreeEntries(label=label, root=root, git=git, digests=tuple(
            (path, hashlib.sha256(data).hexdigest()) for path, data in sorted(files.items())))

    def body(self) -> list[str]:
        """Walk the tree (no link followed), reading each regular file's digest."""
        folders = sorted({posixpath.dirname(p) for p, _ in self.digests} - {""})
        folders = sorted({"/".join(f.split("/")[:n]) for f in folders
                          for n in range(1, f.count("/") + 2)})
        return [f"root = {self.root!r}",
                "assert os.path.isdir(root) and not os.path.islink(root), root",
                "files, folders = {}, []",
                "for folder, dirs, names in os.walk(root):",
                *(["    if folder == root and '.git' in dirs:",
                   "        dirs.remove('.git')"] if self.git else []),
                "    for name in dirs + names:",
                "        path = os.path.join(folder, name)",
                "        relpath = os.path.relpath(path, root)",
                "        mode = os.lstat(path).st_mode",
                "        if stat.S_ISDIR(mode):",
                "            folders.append(relpath)",
                "        elif stat.S_ISREG(mode):",
                "            files[relpath] = hashlib.sha256(Path(path).read_bytes()).hexdigest()",
                "        else:",
                "            files[relpath] = 'not a regular file'",
                f"assert sorted(folders) == {folders!r}, 'other folders'",
                f"expected = {dict(self.digests)!r}",
                "assert sorted(files) == sorted(expected), 'other files'",
                "for relpath, digest in expected.items():",
                "    assert files[relpath] == digest, (relpath, 'other bytes')"]

    def reads(self) -> tuple[str, ...]:
        """The tree."""
        return (self.root,)


@dataclass(frozen=True)
class ObjectStore(Assertion):
    """A repository's `.git/objects` holds nothing but what git itself keeps there.

    Loose objects, packs with their indexes, `info/packs` and commit-graphs (no
    alternates, no quarantine or other folder git does not read).
    """

    repo: str = ""

    def body(self) -> list[str]:
        """Match every entry below .git/objects against git's own names."""
        allowed = (r"[0-9a-f]{2}(/[0-9a-f]{38})?|pack|pack/pack-[0-9a-f]{40}"
                   r"\.(pack|idx|rev|bitmap|mtimes)|info|info/packs|info/commit-graph|"
                   r"info/commit-graphs|info/commit-graphs/(commit-graph-chain|"
                   r"graph-[0-9a-f]{40}\.graph)")
        return ["import re",
                f"objects = os.path.join({self.repo!r}, '.git', 'objects')",
                "assert os.path.isdir(objects) and not os.path.islink(objects), objects",
                "for folder, dirs, names in os.walk(objects):",
                "    for name in dirs + names:",
                "        path = os.path.join(folder, name)",
                "        mode = os.lstat(path).st_mode",
                "        assert stat.S_ISDIR(mode) or stat.S_ISREG(mode), path",
                f"        assert re.fullmatch({allowed!r}, os.path.relpath(path, objects)), "
                "(path, 'is not one of git objects')"]

    def reads(self) -> tuple[str, ...]:
        """The repository."""
        return (self.repo,)


@dataclass(frozen=True)
class SecretPurged(Assertion):
    """No blob of a repository's object database, reachable or not, holds the secret."""

    repo: str = ""
    secret: str = ""

    def body(self) -> list[str]:
        """List every object git has, then read all the blobs in one `git show`."""
        return [f"repo = {self.repo!r}",
                "listing = _git(repo, ['cat-file', '--batch-all-objects', "
                "'--batch-check=%(objecttype) %(objectname)'])",
                "blobs = [line.split()[1] for line in listing.splitlines() "
                "if line.startswith('blob ')]",
                "assert blobs, 'the repository has no files'",
                "for start in range(0, len(blobs), 500):",
                "    text = _git(repo, ['show', *blobs[start:start + 500]])",
                f"    assert {self.secret!r} not in text, 'a blob still holds the secret'"]

    def reads(self) -> tuple[str, ...]:
        """The repository."""
        return (self.repo,)


# --- scrub_secrets -------------------------------------------------------------------------

def _key_block(ctx: StepContext, kind: str, rules: ScrubRules) -> list[str]:
    """A PEM block whose body lines are no setting line and hold no AWS key id."""
    while True:
        body = [_random(ctx, BASE64, 64) for _ in range(ctx.rng.randint(4, 9))]
        body.append(_random(ctx, BASE64, ctx.rng.randint(8, 60)) + "=" * ctx.rng.randint(0, 2))
        probe = "\n".join(body).encode()
        loose = ScrubRules(rules.placeholder, anchored=False, ends=False, empty=False)
        if loose.apply(probe) == probe:
            return [f"-----BEGIN {kind}-----", *body, f"-----END {kind}-----"]


def _planted(ctx: StepContext, rules: ScrubRules) -> tuple[dict[str, str], list[str]]:
    """Config and source files holding secrets and look-alikes: relpath -> text, secrets."""
    svc = ctx.rng.choice(ctx.domain.services)
    edge, noise = ctx.difficulty.edge_cases, ctx.difficulty.noise
    secrets: list[str] = []

    def keep(value: str) -> str:
        secrets.append(value)
        return value

    quote = (lambda v: f'"{v}"') if ctx.rng.random() < 0.5 else (lambda v: f"'{v}'")
    env = [f"# {svc} service environment", "APP_ENV=production",
           f"DB_HOST=db.{ctx.domain.name}.internal", f"DB_USER={svc}",
           f"DB_PASSWORD={keep(_password(ctx))}",
           f"{svc.upper().replace('-', '_')}_API_TOKEN={quote(keep(_token(ctx)))}",
           f"PASSWORD_MIN_LENGTH={ctx.rng.choice((10, 12, 14, 16))}",
           f"TOKEN_TTL={ctx.rng.choice((900, 3600, 86400))}"]
    if edge >= 2:
        env.append("SMTP_PASSWORD=")
    env.insert(ctx.rng.randint(1, len(env)), ctx.rng.choice(
        ["# API_TOKEN=<your-token>", "#DB_PASSWORD=changeme", "# token = <paste token here>"]))
    ini = ["[database]", f"host = db.{ctx.domain.name}.internal", "port = 5432",
           f"password = {keep(_password(ctx))}", "", "[auth]",
           f"client_secret = {quote(keep(_token(ctx)))}",
           f"password_min_length = {ctx.rng.choice((8, 12))}",
           f"secret_rotation_days = {ctx.rng.choice((30, 90))}",
           "; token = <your-token>"]
    if edge >= 2:
        ini += ["", "[smtp]", "user = mailer", "password ="]
    yaml = [f"service: {svc}", "database:", f"  user: {svc}",
            f"  Password: {keep(_password(ctx))}", "payments:",
            f"  api_key: {keep(_token(ctx))}", "  api_key_path: /run/secrets/payments",
            "  # api_key: <set in the vault>", "  timeout: 30"]
    kind = ctx.rng.choice(("OPENSSH PRIVATE KEY", "RSA PRIVATE KEY", "PRIVATE KEY"))
    key = _key_block(ctx, kind, rules)
    secrets.append(key[1])
    files = {"deploy/.env" if edge >= 2 else "deploy/app.env": lines_text(env),
             "config/settings.ini": lines_text(ini),
             f"config/{svc}.yaml": lines_text(yaml),
             "deploy/id_deploy": lines_text(key),
             "deploy/id_deploy.pub": f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
                                     f"{_random(ctx, BASE64, 43)} deploy@{svc}\n"}
    if ctx.difficulty.data_volume >= 2 or ctx.rng.random() < 0.5:  # AWS keys
        aws_id = keep(_aws_id(ctx))
        files["config/aws/credentials"] = lines_text([
            "[default]", f"aws_access_key_id = {aws_id}",
            f"aws_secret_access_key = {keep(_aws_secret(ctx))}", "region = eu-west-1"])
        files["src/storage_client.py"] = lines_text([
            '"""Client settings."""', "", "import os", "",
            f'AWS_ACCESS_KEY_ID = "{aws_id}"', f'BUCKET = "{ctx.domain.name}-exports"',
            f'AWS_SECRET_ACCESS_KEY = "{keep(_aws_secret(ctx))}"',
            'TOKEN_HEADER = "X-Auth-Token"', "",
            "def region():", '    return os.environ.get("AWS_REGION", "eu-west-1")'])
    if noise >= 2 or ctx.rng.random() < 0.5:  # a certificate and a key in one bundle
        cert = _key_block(ctx, "CERTIFICATE", rules)
        second = _key_block(ctx, "EC PRIVATE KEY", rules)
        secrets.append(second[1])
        files["config/tls/bundle.pem"] = lines_text(cert + second)
    if noise >= 2:  # a lockfile full of hashes
        lock = ["# This file is generated; do not edit.", ""]
        for name in ctx.rng.sample(("requests", "urllib3", "idna", "certifi", "click",
                                    "jinja2"), 3):
            lock += ["[[package]]", f'name = "{name}"',
                     f'version = "{ctx.rng.randint(1, 3)}.{ctx.rng.randint(0, 30)}.0"',
                     f'hash = "sha256:{_random(ctx, "0123456789abcdef", 64)}"', ""]
        files["poetry.lock"] = lines_text(lock)
    return files, secrets


_SCRUB = r"""import os, re, sys
root, place = sys.argv[1], sys.argv[2].encode()
SUFFIX = (b'secret_access_key', b'password', b'secret', b'token', b'api_key')
setting = re.compile(rb'([ \t]*([A-Za-z0-9_.-]+)[ \t]*[=:][ \t]*)(.*)')
aws = re.compile(rb'(?<![A-Za-z0-9_])AKIA[A-Z0-9]{16}(?![A-Za-z0-9_])')
begin = re.compile(rb'-----BEGIN [A-Z ]*PRIVATE KEY-----')
end = re.compile(rb'-----END [A-Z ]*PRIVATE KEY-----')
def line_of(line):
    line = aws.sub(place, line)
    match = setting.fullmatch(line)
    if not match or not match.group(2).lower().endswith(SUFFIX):
        return line
    head, value = match.group(1), match.group(3)
    if not value:
        return line
    if len(value) >= 2 and value[:1] in (b'"', b"'") and value[-1:] == value[:1] \
            and value[:1] not in value[1:-1]:
        return head + value[:1] + place + value[:1]
    if value[:1] in (b'"', b"'"):
        return line
    return head + place
for folder, _, names in os.walk(root):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, 'rb') as handle:
            data = handle.read()
        out, block = [], False
        for line in data.split(b'\n'):
            if block:
                if end.fullmatch(line):
                    out += [place, line]
                    block = False
            elif begin.fullmatch(line):
                out.append(line)
                block = True
            else:
                out.append(line_of(line))
        new = b'\n'.join(out)
        if new != data:
            with open(path, 'wb') as handle:
                handle.write(new)
"""


@primitive("security.scrub_secrets")
def scrub_secrets(ctx: StepContext, source) -> StepResult:
    """Replace every secret in a tree of config and source files by a placeholder."""
    if not isinstance(source, FileTree) or not source.files:
        raise NotApplicable("needs a directory tree with files")
    if ctx.step != 1:
        raise NotApplicable("the secrets are planted in the source tree; only as the first step")
    tree = source
    rules = ScrubRules(ctx.rng.choice(PLACEHOLDERS))
    planted, secrets = _planted(ctx, rules)
    taken = {f.relpath for f in tree.files}
    files = list(tree.files)
    for relpath, text in sorted(planted.items()):
        if relpath in taken or any(t.startswith(relpath + "/") or relpath.startswith(t + "/")
                                   for t in taken):
            raise NotApplicable(f"the tree already has {relpath}")
        ctx.world.add(f"{tree.path}/{relpath}", text)
        files.append(TreeFile(relpath, text.encode()))
    files.sort(key=lambda f: f.relpath)
    after = {f.relpath: rules.apply(f.content) for f in files}
    if any(s.encode() in data for s in secrets for data in after.values()):
        raise NotApplicable("a planted secret escapes the rules")  # never, by construction
    place = rules.placeholder
    words = "`, `".join(SUFFIXES)
    rule = (
        f"A secret is (1) the value of a setting line whose key ends, ignoring case, in "
        f"`{words}`: a setting line starts (after optional spaces or tabs) with a key made of "
        "letters, digits, `_`, `.` and `-`, then `=` or `:` with optional spaces or tabs "
        "around it, and its value is the rest of the line; a value enclosed in double or "
        "single quotes keeps its quotes (only the text between them is replaced), an empty "
        "value stays empty, and comment lines (starting with `#` or `;`) are no setting "
        "lines; (2) every AWS access key id, wherever it appears: `AKIA` followed by 16 "
        "capital letters or digits, with no letter, digit or `_` right before or after it; "
        "(3) the body of every private key block: all the lines between a line "
        "`-----BEGIN ...PRIVATE KEY-----` (such as `-----BEGIN RSA PRIVATE KEY-----` or "
        "`-----BEGIN PRIVATE KEY-----`) and the next `-----END ...PRIVATE KEY-----` line "
        "become one single line holding only the placeholder, and both marker lines stay. "
        "Other blocks (certificates, public keys) are no secrets.")
    places = places_words(elsewhere(tree.path))
    copies = (
        "Keep no copy of the secrets anywhere: add no file or folder to the tree (not even "
        "an empty one), keep the original text in no file name, folder name or extended "
        "attribute, and leave no backup, archive or other copy of the original files, "
        f"compressed or not, below {places}.")
    sentence = ctx.phrase([
        f"Scrub the secrets from every file below {tree.phrase} (all subfolders, hidden "
        f"files included), editing the files in place: replace each secret by the "
        f"placeholder `{place}` and leave every other byte of every file as it was; create "
        f"no other files (no backup copies). {rule} {copies}",
        f"Before {tree.phrase} is shared, redact it in place: in every file below it "
        f"(subfolders and hidden files too), each secret becomes `{place}`, and nothing else "
        f"changes, byte for byte; leave no backup or temporary copies behind. {rule} {copies}",
        f"Remove the credentials that leaked into {tree.phrase}: rewrite each file below it "
        f"(recursively, dot files included) with every secret replaced by `{place}` and all "
        f"other bytes untouched, without creating any other file. {rule} {copies}",
    ]) + ctx.hint("find -print0 | xargs -0 sed -E -i with s///I and a /BEGIN/,/END/ range")
    candidates = [
        ("comments", "that comment lines are no setting lines", replace(rules, anchored=False)),
        ("key-ends", "that only keys ending in a sensitive word are secrets",
         replace(rules, ends=False)),
        ("ignore-case", "that keys match ignoring case", replace(rules, folded=False)),
        ("quotes", "that a quoted value keeps its quotes", replace(rules, quotes=False)),
        ("empty", "that an empty value stays empty", replace(rules, empty=False)),
        ("aws-ids", "that AWS access key ids are secrets wherever they appear",
         replace(rules, aws=False)),
        ("markers", "that the BEGIN and END lines of a private key block stay",
         replace(rules, markers=False)),
        ("private-only", "that only private key blocks are secrets",
         replace(rules, private=False)),
    ]
    wrong = tuple(Rule(name, stated, naive.sed(tree.path)) for name, stated, naive in candidates
                  if any(naive.apply(f.content) != after[f.relpath] for f in files))
    changed = {f"{tree.path}/{f.relpath}": after[f.relpath] for f in files
               if after[f.relpath] != f.content}
    kept = {f"{tree.path}/{f.relpath}": f.content for f in files
            if after[f.relpath] == f.content}
    checks: list[Assertion] = [
        FileDigests.of("the files holding secrets are scrubbed", changed),
        FileDigests.of("every other file is unchanged", kept),
        TreeEntries.of("the tree holds no other file or folder", tree.path, after),
        SecretsAbsent("no file of the tree, nor a copy elsewhere, still holds a secret",
                      root=tree.path, secrets=tuple(sorted(set(secrets))),
                      places=elsewhere(tree.path)),
    ]
    output = FileTree(path=tree.path, phrase=f"{tree.phrase} once its secrets are scrubbed",
                      files=tuple(replace(f, content=after[f.relpath], mtime=None)
                                  for f in files))
    return StepResult(
        output=output, instruction=sentence, solution=rules.sed(tree.path),
        alternative=ctx.python([tree.path, place], _SCRUB), checks=checks,
        tools=("find", "xargs", "sed"), side_effect=True, rules=wrong)


# --- purge_git_secret ----------------------------------------------------------------------

_REWRITE = r"""import os, subprocess, sys
repo, branch, secret, place, base, tags = sys.argv[1:7]
def git(*args, data=None, env=None):
    return subprocess.run(['git', '-C', repo, *args], input=data, capture_output=True,
                          check=True, env={**os.environ, **(env or {})}).stdout
secret, place = secret.encode(), place.encode()
todo = git('rev-list', '--reverse', '--topo-order', base + '..' + branch).decode().split()
mapped = {base: base}
for commit in todo:
    raw = git('cat-file', 'commit', commit)
    head, _, message = raw.partition(b'\n\n')
    fields = dict(line.split(b' ', 1) for line in head.split(b'\n') if b' ' in line)
    entries = []
    for entry in git('ls-tree', '-r', '-z', commit).split(b'\0'):
        if not entry:
            continue
        info, _, path = entry.partition(b'\t')
        mode, kind, blob = info.split()
        data = git('cat-file', 'blob', blob.decode())
        if secret in data:
            blob = git('hash-object', '-w', '--stdin', data=data.replace(secret, place)).strip()
        entries.append(mode + b' ' + blob + b'\t' + path + b'\0')
    scratch = os.path.join(repo, '.git', 'scrub-index')
    env = {'GIT_INDEX_FILE': scratch}
    if os.path.exists(scratch):
        os.remove(scratch)
    git('update-index', '--add', '-z', '--index-info', data=b''.join(entries), env=env)
    tree = git('write-tree', env=env).decode().strip()
    os.remove(scratch)
    people = {}
    for role in ('author', 'committer'):
        who, _, when = fields[role.encode()].decode().rpartition('> ')
        name, _, email = who.partition(' <')
        people.update({f'GIT_{role.upper()}_NAME': name, f'GIT_{role.upper()}_EMAIL': email,
                       f'GIT_{role.upper()}_DATE': when})
    parents = [w for line in head.split(b'\n') if line.startswith(b'parent ')
               for w in ['-p', mapped[line.split()[1].decode()]]]
    mapped[commit] = git('commit-tree', tree, *parents, data=message, env=people) \
        .decode().strip()
old = git('rev-parse', branch).decode().strip()
git('update-ref', 'refs/heads/' + branch, mapped[old])
for tag in filter(None, tags.split(',')):
    git('update-ref', 'refs/tags/' + tag, mapped[git('rev-parse', tag + '^{commit}')
                                                .decode().strip()])
git('reset', '-q', '--hard')
git('reflog', 'expire', '--expire=now', '--all')
git('gc', '-q', '--prune=now')
"""


def _settings(ctx: StepContext, svc: str, key: str, value: str) -> str:
    return lines_text([f"# {svc} deployment settings", "APP_ENV=production",
                       f"{svc.upper().replace('-', '_')}_URL=https://{svc}.internal",
                       f"{key}={value}",
                       f"WORKERS={ctx.rng.randint(2, 16)}"])


@primitive("security.purge_git_secret")
def purge_git_secret(ctx: StepContext, source) -> StepResult:
    """Rewrite a branch's history so a committed secret is gone from every commit."""
    if not isinstance(source, GitRepo) or len(source.commits) < 3:
        raise NotApplicable("needs a git repository with some history")
    if ctx.step != 1 or any(isinstance(c, NewCommit) for c in source.commits):
        raise NotApplicable("the leak is planted in the source history; only as the first step")
    repo = source
    svc = ctx.rng.choice(ctx.domain.services)
    key, what, secret = ctx.rng.choice([
        ("DB_PASSWORD", "database password", "".join(ctx.rng.choice(ALNUM)
                                                      for _ in range(ctx.rng.randint(16, 22)))),
        ("API_TOKEN", "API token", "ghp_" + _random(ctx, ALNUM, 36)),
        ("STRIPE_SECRET_KEY", "payment API key", "sk_live_" + _random(ctx, ALNUM, 24))])
    place = ctx.rng.choice((*PLACEHOLDERS[:1], "REMOVED", "SCRUBBED"))
    path = f"deploy/{svc}.env"
    state = tree_at(repo.commits)
    moment = repo.commits[-1].date
    people = sorted({(c.author, c.email) for c in repo.commits})
    added: list[Commit] = []

    def commit(message: str, files: dict[str, str]) -> None:
        nonlocal moment
        moment += ctx.rng.randint(3600, 2 * DAY)
        who = ctx.rng.choice(people)
        state.update(files)
        added.append(Commit(message, who[0], who[1], moment, tuple(sorted(files.items()))))

    def touch(number: int) -> None:
        target = ctx.rng.choice(sorted(p for p in state if p.startswith("src/")))
        noun = ctx.rng.choice(ctx.domain.words)
        commit(f"Tidy {noun} handling in {target.rsplit('/', 1)[-1]}",
               {target: state[target] + f"# {noun} cleanup {number}\n"})

    commit(f"Add {svc} deployment settings", {path: _settings(ctx, svc, key, secret)})
    touch(1)
    twice = ctx.difficulty.edge_cases >= 2
    if twice:  # the secret also copied into a runbook
        runbook = f"docs/{svc} runbook.md" if ctx.difficulty.edge_cases == 3 else \
            f"docs/{svc}-runbook.md"
        commit(f"Document the {svc} deployment",
               {runbook: f"# {svc} runbook\n\nExport the settings before starting:\n\n"
                         f"    export {key}={secret}\n    ./deploy.sh\n"})
    tag = ""
    if ctx.difficulty.edge_cases >= 2 or ctx.rng.random() < 0.4:
        tag = f"v{ctx.rng.randint(1, 3)}.{ctx.rng.randint(0, 9)}.0"
    tagged = len(repo.commits) + len(added) - 1
    removed = ctx.rng.random() < 0.6
    if removed:
        commit(f"Read {key} from the environment",
               {path: _settings(ctx, svc, key, "${" + key + "}")})
    for number in range(ctx.rng.randint(1, 2)):
        touch(number + 2)
    first = len(repo.commits)
    history = (*repo.commits, *added)
    staging = f"/tmp/taskloom-secret/{ctx.step}"
    script = []
    for index, line in enumerate(committed(ctx.world, staging, repo.path, list(added))):
        script.append(line)
        if tag and first + index == tagged:
            script.append(f"git -C {q(repo.path)} tag {q(tag)}")
    script.append(f"rm -rf {q(staging)}")
    ctx.world.commands.extend(script)
    base = commit_hashes(GitRepo(path=repo.path, phrase=repo.phrase,
                                 commits=history[:first]))[-1]

    def scrubbed(item: Commit, new: bool) -> Commit:
        files = tuple((p, c.replace(secret, place)) for p, c in item.files)
        kind = NewCommit if new else Commit
        return kind(item.message, item.author, item.email, item.date, files)

    rewritten = tuple(scrubbed(c, i >= first) for i, c in enumerate(history))
    branch = repo.branch

    def log_lines(commits: tuple[Commit, ...]) -> str:
        rows = []
        for index in range(len(commits)):
            item = commits[index]
            rows.append(f"{tree_id(tree_at(commits[:index + 1]))} {item.author} "
                        f"<{item.email}> {item.date} +0000 {item.message.split(chr(10))[0]}")
        return lines_text(reversed(rows))

    fmt = "%T %an <%ae> %ad %s"
    tag_words = (f" and the tag `{tag}` (which must then point to the rewritten counterpart "
                 "of the commit it points to now)" if tag else "")
    where = (f"first committed in `{path}` and later also copied into another file"
             if twice else f"first committed in `{path}`")
    purge = (f"The secret must not survive anywhere in the repository's object database, "
             f"reachable or not: delete backup refs such as `refs/original/`, expire the "
             f"reflogs and prune unreachable objects. Leave `{branch}` checked out with a "
             "clean working tree.")
    places = places_words(elsewhere(repo.path))
    purge += (
        " Keep no other copy of the secret or of the old history: afterwards the working "
        f"tree holds exactly the files of the rewritten `{branch}` and nothing else (no "
        "untracked or ignored files or folders), `.git/objects` holds nothing but git's own "
        "loose objects, packs with their indexes and `info/` files (no alternates, no other "
        f"folders), and no file below {places} holds the secret, compressed or not (no "
        "backups, bundles, archives or clones; delete any helper file that names it).")
    keep = ("every commit keeps its message, author name, author email and author date, the "
            "number and order of the commits stay the same, and the commits older than the "
            "one that introduced the secret stay exactly as they are (same hashes)")
    sentence = ctx.phrase([
        f"The {what} `{secret}` leaked into the history of branch `{branch}` of "
        f"{repo.phrase} ({where}). Rewrite the history of `{branch}`{tag_words} so that in "
        f"every commit each occurrence of `{secret}`, in any file, is replaced by `{place}` "
        f"and nothing else changes: {keep}. {purge}",
        f"Purge a leaked secret from {repo.phrase}: the {what} `{secret}` was committed to "
        f"`{branch}` ({where}). Rewrite `{branch}`{tag_words} so that every commit's files "
        f"hold `{place}` wherever they held `{secret}`, everything else being identical: "
        f"{keep}. {purge}",
        f"In {repo.phrase}, someone committed the {what} `{secret}` to `{branch}` ({where}). "
        f"Clean the history of `{branch}`{tag_words}: in each commit, every occurrence of the "
        f"secret in any file becomes `{place}`; apart from that, {keep}. {purge}",
    ]) + ctx.hint("git filter-branch --tree-filter with sed, then git reflog expire and "
                  "git gc --prune=now")
    git = f"git -C {q(repo.path)}"
    expression = f"s/{secret}/{place}/g"

    def rewrite(filter_: str, refs: str, cleanup: bool = True) -> str:
        lines = [f"FILTER_BRANCH_SQUELCH_WARNING=1 {git} filter-branch -f --tree-filter "
                 f"{q(filter_)} {refs} >/dev/null"]
        if cleanup:
            lines += [f"{git} for-each-ref --format='%(refname)' refs/original/ |\n"
                      f"  while read -r ref; do {git} update-ref -d \"$ref\"; done",
                      f"{git} reflog expire --expire=now --all",
                      f"{git} gc -q --prune=now"]
        return "\n".join(lines)

    tree_filter = f"grep -rlZF {q(secret)} . | xargs -0 -r sed -i {q(expression)}"
    refs = f"--tag-name-filter cat -- {q(branch)} {q(tag)}" if tag else f"-- {q(branch)}"
    solution = rewrite(tree_filter, refs)
    candidates = [
        (True, "purge", "that the secret must not survive in the object database (backup refs, "
                        "reflogs, unreachable objects)", rewrite(tree_filter, refs, False)),
        (True, "only-secret", f"that only `{secret}` itself is replaced, nothing else",
         rewrite(f"grep -rlZF {q(secret)} . | xargs -0 -r sed -i "
                 f"{q('/' + secret + '/d')}", refs)),
        (bool(tag), "tag", f"that the tag `{tag}` is rewritten too",
         rewrite(tree_filter, f"-- {q(branch)}")),
        (twice, "every-file", "that the secret is replaced in every file",
         rewrite(f"if [ -f {q(path)} ]; then sed -i {q(expression)} {q(path)}; fi", refs)),
    ]
    checks: list[Assertion] = [
        CommandText(f"every commit of {branch} keeps its metadata, with the secret replaced",
                    argv=("git", "-C", repo.path, "log", "--date=raw", f"--format={fmt}",
                          branch), expected=log_lines(rewritten), compare="lines"),
        CommandText("the commits before the leak keep their hashes",
                    argv=("git", "-C", repo.path, "merge-base", "--is-ancestor", base,
                          branch), expected="", compare="lines"),
        SecretPurged("no object of the repository holds the secret", repo=repo.path,
                     secret=secret),
        ObjectStore("the object database holds only git's own files", repo=repo.path),
        SecretsAbsent("no file of the repository, nor a copy elsewhere, holds the secret",
                      root=repo.path, secrets=(secret,), places=elsewhere(repo.path)),
        TreeEntries.of(f"the working tree holds exactly the files of {branch}", repo.path,
                       {p: c.encode() for p, c in tree_at(rewritten).items()}, git=True),
        CommandText(f"{branch} is checked out", argv=(
            "git", "-C", repo.path, "symbolic-ref", "HEAD"), expected=f"refs/heads/{branch}\n",
            compare="lines"),
        CommandText("the working tree is clean", argv=(
            "git", "-C", repo.path, "status", "--porcelain"), expected="", compare="lines"),
    ]
    if tag:
        checks.insert(1, CommandText(
            f"the tag {tag} points to the rewritten commit", argv=(
                "git", "-C", repo.path, "log", "--date=raw", f"--format={fmt}", tag),
            expected=log_lines(rewritten[:tagged + 1]), compare="lines"))
    return StepResult(
        output=GitRepo(path=repo.path, phrase=repo.phrase, commits=rewritten, branch=branch),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, branch, secret, place, base, tag], _REWRITE),
        checks=checks, tools=("git", "grep", "sed"), side_effect=True,
        rules=tuple(Rule(name, stated, ignored) for seen, name, stated, ignored in candidates
                    if seen))
