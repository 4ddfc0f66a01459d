"""Security hygiene primitives: secrets scrubbed, a secret purged from git, a password rotated.

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
the repository's working tree) must hold exactly the expected files and their folders, no
other entry (ignored, empty or hidden ones included), and `.git/objects` nothing but git's
own loose objects, packs and `info/` files; every entry below the tree or repository is
scanned for the secrets in its name, link target, extended attributes and bytes, as they
are, decompressed and decoded (gzip, bzip2, xz, zlib, zip and tar members, git packs and
bundles, base64 and other encodings, up to 64 layers deep), and a file sealed by a cipher
tool (`openssl enc`) counts as a copy. The same scan covers the places a copy is usually
left: the folder around the tree or repository and `/tmp`, `/var/tmp`, `/var/backups`
(`ELSEWHERE`), all of which the instruction names. Its limit: a copy elsewhere on the disk
(`/root`, where the agent's own tooling and package caches live, and where an agent's
transcript may quote the secret), or one transformed in a way the scan does not undo (a
cipher that leaves no mark, a split secret), is not seen; the instruction forbids copies
in the places checked, no more.

A rotation plants one credential in config files of several syntaxes (INI, YAML, .env,
JSON, a URL's user-info, where it is percent-encoded, a systemd unit) and stale backups of
them, beside other credentials under the same key or sharing its prefix. `Credential`
says what the rotation does to a file's bytes; the reference (sed) and the alternative
(python) follow the instruction's words. Its scan for the old value (plain and encoded)
looks further, below the folders people keep config backups in (`STASHES`); still not in
/root, nor in what the scan cannot read (an encoding, a process's memory or arguments).
Modes and owners are tightened only on the last step, where no later step sets them.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from taskloom.errors import Misplaced, NotApplicable
from taskloom.generators.procedural.artifacts import Commit, FileTree, GitRepo, TreeFile
from taskloom.generators.procedural.checks import (
    KERNEL_VIEWS,
    Assertion,
    CommandText,
    FileDigests,
    Modes,
)
from taskloom.generators.procedural.primitives._history import (  # a rewritten commit is
    NewCommit,  # a NewCommit to every later git step
    clean_tree,
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
        """The file's bytes once these rules are applied (what the sed script makes).

        Only a line that holds a sensitive word can be a secret setting: in a text with no
        key block to fold, just those lines are edited (sed's line by line result, faster).
        """
        begin, end, subs = self._patterns()
        place = self.placeholder.encode()
        if b"-----" not in data or not begin.search(data):
            if self.aws and b"AKIA" in data:
                data = _AWS_ID.sub(lambda _: place, data)
            pieces, cursor = [], 0
            for start in _sensitive_lines(data):
                stop = data.find(b"\n", start)
                stop = len(data) if stop < 0 else stop
                line = data[start:stop]
                for pattern, expand in subs:
                    line = pattern.sub(expand, line, count=1)
                pieces += [data[cursor:start], line]
                cursor = stop
            return b"".join([*pieces, data[cursor:]])
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
                line = _AWS_ID.sub(lambda _: place, line)
            for pattern, expand in subs:
                line = pattern.sub(expand, line, count=1)
            out.append(line)
        return b"\n".join(out)

    @functools.cache  # noqa: B019 (a few rule sets per run, each frozen and small)
    def _patterns(self) -> tuple[re.Pattern, re.Pattern, list[tuple[re.Pattern, Callable]]]:
        """The BEGIN and END lines of a key block, and the setting rules as substitutions."""
        flags = re.IGNORECASE if self.folded else 0
        start = r"^([ \t]*" if self.anchored else "("
        prefix = f"{start}{self._key().replace('(', '(?:', 1)}[ \\t]*[=:][ \\t]*)".encode()
        place = self.placeholder.encode()
        begin, end = (re.compile(b"^" + self._block(w).encode() + b"$", re.M)
                      for w in ("BEGIN", "END"))
        subs = ([(prefix + rb'"[^"]*"$', rb'\1"' + place + rb'"'),
                 (prefix + rb"'[^']*'$", rb"\1'" + place + rb"'"),
                 (prefix + rb"[^\"' \t].*$", rb"\1" + place)] if self.quotes else
                [(prefix + rb".+$", rb"\1" + place)])
        if not self.empty:
            subs.append((prefix + rb"$", rb"\1" + place))
        return begin, end, [(re.compile(pattern, flags), lambda m, r=repl: m.expand(r))
                            for pattern, repl in subs]


_AWS_ID = re.compile(rb"\bAKIA[0-9A-Z]{16}\b")
_SENSITIVE = tuple(word.encode() for word in SUFFIXES if not any(
    other != word and other in word for other in SUFFIXES))  # secret covers secret_access_key


@functools.lru_cache(maxsize=256)
def _sensitive_lines(data: bytes) -> tuple[int, ...]:
    """Where each line holding a sensitive word starts, ignoring ASCII case, in order.

    A search of the lowered bytes per word: scanning whole files with one case-folding
    regex cost half of all planning (a steered plan dry-runs scrubs of ~1,000-line trees).
    Cached: a scrub applies nine rule sets to the same files.
    """
    lowered, starts = data.lower(), set()
    for word in _SENSITIVE:
        at = lowered.find(word)
        while at >= 0:
            start = lowered.rfind(b"\n", 0, at) + 1
            starts.add(start)
            stop = lowered.find(b"\n", at)
            at = -1 if stop < 0 else lowered.find(word, stop)
    return tuple(sorted(starts))


# The body of a secret scan: `leaks(data)` is True when the bytes hold a secret in one of
# its `_forms` (as it is, reversed, ROT13, cases swapped, UTF-16/32, EBCDIC; over folded
# lines too) or hold it once decoded, up to 64 layers deep. Decoders come in two kinds.
# Sure ones start from a format's own marks: gzip, bzip2, xz, zlib and .lzma (also found
# behind other bytes), a zip by its end record, a tar by its header checksum, a git pack
# anywhere (deltas applied). Guesses have no marks: raw deflate, raw xz (LZMA2 or LZMA1,
# delta distances 1-4), and encodings: all of a file's base64 (or base32, hex, bits)
# characters decoded as one run at each alignment (C-speed: decoding run by run cost 4x
# more on system files), and octal runs. Guesses are searched for the forms a few MiB at
# a time; only the formats found inside by their marks and the long runs of text are read
# further (else every text file fanned out into decodings of noise). Checksums are never
# what stops a read: streams are fed in pieces (what came before an error is kept), and
# gzip, zlib and zip members are read by their deflate streams. What cannot be read whole
# counts as a leak: past CAP (256 MiB), an encrypted zip member, a zip method Python does
# not read, and bytes sealed by a cipher tool's format (`SEALED`: what `openssl enc` writes,
# age's and OpenPGP's armor, 7z): its mark anywhere in a file, a layer or a decoded guess.
# The README lists what is not read; each form here is one a red-team round used.
_LEAKS = [
    "import binascii, bz2, io, lzma, re, zlib",
    "CAP = 1 << 28",
    "class Unreadable(Exception):  # the bytes cannot be read whole: counted as a leak",
    "    pass",
    "SEALED = (b'Salted__', b'-----BEGIN PGP MESSAGE', b'-----BEGIN AGE ENCRYPTED',",
    "          b'age-encryption.org/', b\"7z\\xbc\\xaf'\\x1c\")  # the key is the agent's",
    "def _sealed(data):  # a cipher tool's mark, anywhere (behind other bytes too)",
    "    return any(mark in data for mark in SEALED)",
    "def _capped(text):",
    "    if len(text) >= CAP:",
    "        raise Unreadable",
    "    return text",
    "def _tolerant(decode, *args):  # what a decoder read before an error is kept",
    "    try:",
    "        decode(*args)",
    "    except Unreadable:",
    "        raise",
    "    except Exception:",
    "        pass",
    "def _zlib(view):",
    "    d = zlib.decompressobj()",
    "    return _capped(d.decompress(view, CAP)), d",
    "KINDS = {1: b'commit', 2: b'tree', 3: b'blob', 4: b'tag'}",
    "def _oid(kind, text):",
    "    return hashlib.sha1(b'%s %d\\x00' % (KINDS.get(kind, b''), len(text)) + text).digest()",
    "def _patch(base, delta):  # git's delta: copies from the base, inserts of its own",
    "    pos = 0",
    "    for _ in range(2):  # the base's size, then the result's",
    "        while delta[pos] & 0x80:",
    "            pos += 1",
    "        pos += 1",
    "    out = bytearray()",
    "    while pos < len(delta):",
    "        op, pos = delta[pos], pos + 1",
    "        if op & 0x80:",
    "            start = size = 0",
    "            for bit in range(7):",
    "                if op & 1 << bit:",
    "                    value, pos = delta[pos], pos + 1",
    "                    if bit < 4:",
    "                        start |= value << 8 * bit",
    "                    else:",
    "                        size |= value << 8 * (bit - 4)",
    "            out += base[start:start + (size or 0x10000)]",
    "        else:",
    "            out += delta[pos:pos + op]",
    "            pos += op",
    "        _capped(out)",
    "    return bytes(out)",
    "def _pack(data, out):  # every object of a pack anywhere in the bytes, deltas applied",
    "    view, start = memoryview(data), data.find(b'PACK\\x00\\x00\\x00')",
    "    while 0 <= start and start + 12 <= len(data):",
    "        pos, at, named, deltas = start + 12, {}, {}, []",
    "        for _ in range(int.from_bytes(data[start + 8:start + 12], 'big')):",
    "            entry, byte = pos, data[pos]",
    "            kind, pos = byte >> 4 & 7, pos + 1",
    "            while byte & 0x80:",
    "                byte, pos = data[pos], pos + 1",
    "            base = None",
    "            if kind == 6:",
    "                byte, pos = data[pos], pos + 1",
    "                back = byte & 0x7f",
    "                while byte & 0x80:",
    "                    byte, pos = data[pos], pos + 1",
    "                    back = (back + 1) << 7 | byte & 0x7f",
    "                base = entry - back",
    "            elif kind == 7:",
    "                base, pos = bytes(data[pos:pos + 20]), pos + 20",
    "            text, d = _zlib(view[pos:])",
    "            out.append(text)",
    "            if base is None:",
    "                at[entry] = named[_oid(kind, text)] = (kind, text)",
    "            else:",
    "                deltas.append((entry, base, text))",
    "            if not d.eof:",
    "                break",
    "            pos = len(data) - len(d.unused_data)",
    "        while deltas:  # a delta's base may be a delta itself, or come later",
    "            waiting = []",
    "            for entry, base, text in deltas:",
    "                found = (at if isinstance(base, int) else named).get(base)",
    "                if found is None:",
    "                    waiting.append((entry, base, text))",
    "                    continue",
    "                result = _patch(found[1], text)",
    "                out.append(result)",
    "                at[entry] = named[_oid(found[0], result)] = (found[0], result)",
    "            if len(waiting) == len(deltas):",
    "                break",
    "            deltas = waiting",
    "        start = data.find(b'PACK\\x00\\x00\\x00', start + 1)",
    "def _stream(d, data, out, cap=CAP):  # in pieces, the last 16 bytes (a checksum) alone:",
    "    got, size, start = [], 0, 0  # what came before an error is kept",
    "    ends = [*range(1 << 16, len(data) - 16, 1 << 16), max(len(data) - 16, 0), len(data)]",
    "    try:",
    "        for end in ends:",
    "            got.append(d.decompress(data[start:end]))",
    "            size, start = size + len(got[-1]), end",
    "            if size >= cap:",
    "                raise Unreadable",
    "            if d.eof:",
    "                return data[end - len(d.unused_data):]",
    "        return None",
    "    finally:",
    "        if got and size < cap:",
    "            out.append(b''.join(got))",
    "def _gzip(data, out):  # every member, by its deflate stream (a wrong CRC is no stop)",
    "    while data is not None and data[:3] == b'\\x1f\\x8b\\x08':",
    "        flags, pos = data[3], 10",
    "        if flags & 4:",
    "            pos += 2 + int.from_bytes(data[10:12], 'little')",
    "        for bit in (8, 16):  # a name, a comment",
    "            if flags & bit:",
    "                pos += bytes(data[pos:pos + 4096]).index(b'\\x00') + 1",
    "        pos += 2 if flags & 2 else 0",
    "        rest = _stream(zlib.decompressobj(-15), data[pos:], out)",
    "        data = None if rest is None else rest[8:]",
    "def _compressed(data, out):",
    "    if data[:3] == b'\\x1f\\x8b\\x08':",
    "        _gzip(data, out)",
    "    elif data[:3] == b'BZh':",
    "        _stream(bz2.BZ2Decompressor(), data, out)",
    "    elif data[:6] == b'\\xfd7zXZ\\x00':",
    "        _tolerant(_stream, lzma.LZMADecompressor(), data, out)",
    "        block = 12 + (data[12] + 1) * 4  # its first block as raw LZMA2: no check read",
    "        _stream(lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[{'id': lzma.FILTER_LZMA2}]),",
    "                data[block:], out)",
    "    elif len(data) > 2 and data[0] & 15 == 8 and (data[0] << 8 | data[1]) % 31 == 0:",
    "        _stream(zlib.decompressobj(-15), data[2:], out)  # zlib, its checksum unread",
    "    elif len(data) > 13 and data[0] < 225 and data[11:13] in (b'\\x00\\x00', b'\\xff\\xff'):",
    "        _stream(lzma.LZMADecompressor(lzma.FORMAT_ALONE), data, out)",
    "GUESS = 16  # a guess inflating its input more than this is noise (it reached 256 MiB)",
    "def _deflate(data, out):  # a raw deflate stream (gzip's body with no header)",
    "    _stream(zlib.decompressobj(-15), data, out, GUESS * len(data) + (1 << 16))",
    "RAW = {b'\\x01': lzma.FILTER_LZMA2, b'\\xe0': lzma.FILTER_LZMA2, b'\\x00': lzma.FILTER_LZMA1}",
    "def _raw(data, out):  # xz --format=raw: by its first byte, after a delta filter or not",
    "    for dist in range(5) if data[:1] in RAW else ():",
    "        delta = [{'id': lzma.FILTER_DELTA, 'dist': dist}] if dist else []",
    "        chain = delta + [{'id': RAW[data[:1]]}]",
    "        d = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=chain)",
    "        _tolerant(_stream, d, data, out, GUESS * len(data) + (1 << 16))",
    "MAGIC = (b'\\x1f\\x8b\\x08', b'BZh', b'\\xfd7zXZ\\x00', b'\\x5d\\x00\\x00',",
    "         b'\\x78\\x01', b'\\x78\\x5e', b'\\x78\\x9c', b'\\x78\\xda')  # zlib's too",
    "def _behind(data, out):  # a compressed stream behind other bytes",
    "    view = memoryview(data)",
    "    for magic in MAGIC:",
    "        at, found = data.find(magic, 1), 0",
    "        while at > 0 and found < 1024:",
    "            _tolerant(_compressed, view[at:], out)",
    "            at, found = data.find(magic, at + 1), found + 1",
    "def _member(data, archive, info):  # stored or deflated: by its local header, CRC unread",
    "    if info.flag_bits & 1 or info.compress_type not in (0, 8, 12, 14):",
    "        raise Unreadable  # encrypted (the password is the agent's), or a method not read",
    "    if info.compress_type > 8:",
    "        return _capped(archive.open(info).read(CAP))",
    "    at = info.header_offset",
    "    start = at + 30 + int.from_bytes(data[at + 26:at + 28], 'little') + \\",
    "        int.from_bytes(data[at + 28:at + 30], 'little')",
    "    raw = data[start:start + info.compress_size]",
    "    return raw if info.compress_type == 0 else \\",
    "        _capped(zlib.decompressobj(-15).decompress(raw, CAP))",
    "def _archive(data, out):",
    "    with zipfile.ZipFile(io.BytesIO(data)) as archive:",
    "        for info in archive.infolist():",
    "            out.append(_member(data, archive, info))",
    "def _zip(data, out):  # by each end record, wherever it is (bytes before or after)",
    "    at = data.rfind(b'PK\\x05\\x06')",
    "    for _ in range(16):",
    "        if at < 0:",
    "            return",
    "        end = at + 22 + int.from_bytes(data[at + 20:at + 22], 'little')",
    "        _tolerant(_archive, data[:end], out)",
    "        at = data.rfind(b'PK\\x05\\x06', 0, at)",
    "def _tar(data, out):",
    "    field = data[148:156].split(b'\\x00')[0].strip()",
    "    header = data[:148] + b' ' * 8 + data[156:512]",
    "    if len(data) < 512 or not field or int(field, 8) not in (",
    "            sum(header), sum(header) - 256 * sum(byte > 127 for byte in header)):",
    "        return",
    "    with tarfile.open(fileobj=io.BytesIO(data), mode='r:') as archive:",
    "        for member in archive:",
    "            if member.isfile():",
    "                out.append(_capped(archive.extractfile(member).read(CAP)))",
    "ROT13 = bytes.maketrans(b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',",
    "                        b'NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm')",
    "def _forms(secret):  # as it is, reversed, ROT13, cases swapped, in UTF-16/32 and EBCDIC",
    "    text = secret.decode()",
    "    return [secret, secret[::-1], secret.translate(ROT13), secret.swapcase(),",
    "            *(text.encode(codec, 'replace') for codec in (",
    "                'utf-16-le', 'utf-16-be', 'utf-32-le', 'utf-32-be', 'cp037'))]",
    "FORMS = [form for secret in secrets for form in _forms(secret)]",
    "SHORTEST = min(map(len, FORMS))",
    "ALL = bytes(range(256))",
    "def _only(alphabet, into):  # keeps an alphabet's bytes (as what its decoder reads)",
    "    return bytes.maketrans(alphabet, into), ALL.translate(None, alphabet)",
    "UPPER, LOWER = b'ABCDEFGHIJKLMNOPQRSTUVWXYZ', b'abcdefghijklmnopqrstuvwxyz'",
    "DIGITS = b'0123456789'",
    "B32HEX = DIGITS + LOWER[:22]  # int(text, 32) reads base32hex's digits",
    "def _number(base, bits):  # big-endian digits of a power of two, bits past a byte dropped",
    "    return lambda text: (int(text or b'0', base) >> len(text) * bits % 8).to_bytes(",
    "        len(text) * bits // 8, 'big')",
    "def _base64(text):  # its last group padded",
    "    text = text[:len(text) - (len(text) % 4 == 1)]",
    "    return binascii.a2b_base64(text + b'=' * (-len(text) % 4))",
    "def _hex(text):",
    "    return binascii.unhexlify(text[:len(text) // 2 * 2])",
    "ENCODINGS = (  # (kept, dropped, decode, group): base64 with either alphabet, base32,",
    "    (*_only(UPPER + LOWER + DIGITS + b'+/-_', UPPER + LOWER + DIGITS + b'+/+/'),",
    "     _base64, 4),  # base32hex, hex, bits",
    "    (*_only(UPPER + b'234567', B32HEX), _number(32, 5), 8),",
    "    (*_only(DIGITS + UPPER[:22], B32HEX), _number(32, 5), 8),",
    "    (*_only(DIGITS + UPPER[:6] + LOWER[:6], DIGITS + UPPER[:6] + LOWER[:6]), _hex, 2),",
    "    (*_only(b'01', b'01'), _number(2, 1), 8),",
    ")",
    "OCTAL = re.compile(  # od -to1, \\NNN escapes, or commas between (a class first: fast)",
    "    rb'[\\\\0-7](?:(?<=\\\\)[0-7]{3}|(?<!\\\\)[0-7]{2})[\\s,;]*'",
    "    rb'(?:\\\\?[0-7]{3}[\\s,;]*){7,}')",
    "def _encoded(data):  # every byte of an alphabet in a row, decoded at every alignment:",
    "    for kept, dropped, decode, group in ENCODINGS:  # a run is read whatever its spacing",
    "        prefixed = data.replace(b'0x', b'').replace(b'0X', b'') if decode is _hex else data",
    "        text = prefixed.translate(kept, dropped)  # (blanks, colons, \\x, C's 0x) or others",
    "        if len(text) < SHORTEST:  # too short to hold a form",
    "            continue",
    "        for skip in range(min(group, len(text))):",
    "            yield decode(text[skip:])",
    "    for run in OCTAL.findall(data):",
    "        yield bytes(int(n, 8) & 255 for n in re.findall(rb'[0-7]{3}', run))",
    "def _held(data):",
    "    return any(form in data for form in FORMS)",
    "def _found(data):  # as they are, or over folded lines",
    "    return _held(data) or b'\\n' in data and _held(data.translate(None, b'\\r\\n'))",
    "def _guesses(data):  # one at a time (each may be as large as the data)",
    "    for decode in (_deflate, _raw):",
    "        out = []",
    "        try:",
    "            decode(data, out)",
    "        except Exception:  # past its bound too: a guess is never what counts as a leak",
    "            pass",
    "        yield from out",
    "    yield from _encoded(data)",
    "def _batches(data):  # the guesses long enough to hold a form, a few MiB at a time",
    "    batch, size = [], 0",
    "    for part in _guesses(data):",
    "        if len(part) >= SHORTEST:",
    "            batch.append(part)",
    "            size += len(part)",
    "        if size >= 1 << 23:",
    "            yield batch",
    "            batch, size = [], 0",
    "    yield batch",
    "SEP = b'\\xff\\xff'  # in no form: guesses are searched joined by it",
    "def _ustar(data, out):  # tars by the mark of their first header, anywhere",
    "    at, found = data.find(b'ustar', 257), 0",
    "    while at > 0 and found < 64:",
    "        _tolerant(_tar, data[at - 257:], out)",
    "        at, found = data.find(b'ustar', at + 1), found + 1",
    "MARKS = re.compile(b'|'.join(map(re.escape, (*MAGIC, b'PK\\x05\\x06', b'PACK', b'ustar'))))",
    "TEXT = re.compile(rb'[\\t\\n\\r\\x20-\\x7e]{%d,}' % SHORTEST)",
    "TEXTUAL = bytes(97 if byte in (9, 10, 13) or 32 <= byte < 127 else 0 for byte in ALL)",
    "def _marked(data):",
    "    return MARKS.search(data) is not None",
    "def _textual(data):  # holds a text run as long as a form",
    "    return b'a' * SHORTEST in data.translate(TEXTUAL)",
    "def _within(part):  # what is read further of a guess: formats by their marks, and text",
    "    found = []",
    "    if _marked(part):",
    "        for decode in (_compressed, _behind, _zip, _ustar, _pack):",
    "            _tolerant(decode, part, found)",
    "    if _textual(part):",
    "        found += TEXT.findall(part)",
    "    return found",
    "class Budget:  # pieces read out of the guesses on a file, or a member or stream in it",
    "    def __init__(self):",
    "        self.left = 4096",
    "def leaks(data, depth=0, seen=None, budget=None):  # seen: the parts of one file read",
    "    seen = set() if seen is None else seen  # (each once)",
    "    budget = Budget() if budget is None else budget",
    "    key = hashlib.sha1(data).digest()",
    "    if key in seen:",
    "        return False",
    "    seen.add(key)",
    "    if _found(data) or _sealed(data):",
    "        return True",
    "    if depth >= 64:",
    "        return False",
    "    try:",
    "        sure = []",
    "        for decode in (_compressed, _behind, _zip, _tar, _pack):",
    "            _tolerant(decode, data, sure)",
    "        if any(leaks(part, depth + 1, seen) for part in sure):  # each its own budget",
    "            return True",
    "        for batch in _batches(data):",
    "            joined = SEP.join(batch)",
    "            if _held(joined) or _sealed(joined):  # decoded: `openssl enc -a`",
    "                return True",
    "            pieces = []",
    "            for part in batch:",
    "                if len(pieces) >= budget.left:",
    "                    break",
    "                pieces += _within(part)",
    "            pieces = pieces[:budget.left]",
    "            budget.left -= len(pieces)",
    "            if any(leaks(piece, depth + 1, seen, budget) for piece in pieces):",
    "                return True",
    "        return False",
    "    except Unreadable:",
    "        return True",
]


def _scan(tops: str) -> list[str]:
    """Lines scanning every entry below the directories of the expression `tops`.

    Its path, link target, extended attributes and bytes (decompressed too); no link
    is followed.
    """
    return [
        *_LEAKS,
        f"for top in {tops}:",
        "    assert not os.path.islink(top), (top, 'is a link: what is below it is elsewhere')",
        "    if not os.path.isdir(top):",
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
    costly: ClassVar[bool] = True  # every file below the places, decoded

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
class Deleted(Assertion):
    """No regular file anywhere on the machine has the bytes of these files.

    A file moved or hard-linked out of its tree (to `/root`, `/run`, `/boot`, `/`) is not
    deleted, though the tree's listing and the scan of the usual places both pass: stale
    backups moved away earned 1 (red team, the credential rotation). Every directory but
    `/proc` and `/sys` is walked, no link followed; only files of a listed size are read.
    A copy changed in any byte is beyond it: the instruction forbids copies only in the
    places the secret scan reads.
    """

    files: tuple[tuple[int, str], ...] = ()  # (size, sha256)
    top: str = "/"  # where the walk starts (the whole machine; a test's folder in tests)
    costly: ClassVar[bool] = True  # the whole file system

    @staticmethod
    def of(label: str, contents: list[bytes]) -> Deleted:
        """An assertion that no file holds exactly any of `contents`."""
        return Deleted(label=label, files=tuple(sorted({
            (len(data), hashlib.sha256(data).hexdigest()) for data in contents})))

    def body(self) -> list[str]:
        """Hash each regular file of one of their sizes below `top` but the kernel's views.

        `_walk`: a folder it cannot enter fails the check.
        """
        return [f"gone = {[list(f) for f in self.files]!r}",
                "sizes = {size for size, _ in gone}",
                "digests = {digest for _, digest in gone}",
                f"for path, at, name, info in _walk({self.top!r}, {list(KERNEL_VIEWS)!r}):",
                "    if stat.S_ISREG(info.st_mode) and info.st_size in sizes:",
                "        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=at)",
                "        with open(handle, 'rb') as file:",
                "            digest = hashlib.sha256(file.read()).hexdigest()",
                "        assert digest not in digests, (path, 'kept: delete it')"]

    def reads(self) -> tuple[str, ...]:
        """The whole file system."""
        return (self.top,)


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
    """No object of a repository's database, reachable or not, holds the secret.

    Every object is first checked to be what its name says (`_intact`); then all of them
    are read as git reads them, by its own index of each pack (a pack with bytes between
    its entries hid a tag from a scan of files), blobs, trees, commits and tags alike.
    """

    repo: str = ""
    secret: str = ""

    def body(self) -> list[str]:
        """Check the objects, then read every one of them in one `git cat-file`."""
        return [f"repo = {self.repo!r}",
                "_intact(repo)",
                "found = _git(repo, ['cat-file', '--batch-all-objects', '--batch'], raw=True)",
                "assert found, 'the repository has no objects'",
                f"assert {self.secret.encode()!r} not in found, 'an object still holds the secret'"]

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


def _secret_files(ctx: StepContext, rules: ScrubRules) -> tuple[dict[str, str], list[str]]:
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
        raise Misplaced("the secrets are planted in the source tree; only as the first step")
    tree = source
    rules = ScrubRules(ctx.rng.choice(PLACEHOLDERS))
    planted, secrets = _secret_files(ctx, rules)
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
    rule = ctx.phrase([
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
        "Other blocks (certificates, public keys) are no secrets.",
        "Three things count as secrets. Private keys: between a "
        "`-----BEGIN ...PRIVATE KEY-----` line (`-----BEGIN PRIVATE KEY-----`, "
        "`-----BEGIN RSA PRIVATE KEY-----` and the like) and the next "
        "`-----END ...PRIVATE KEY-----` line, the body lines are replaced, together, by one "
        "line that holds just the placeholder, while the BEGIN and END lines remain "
        "(certificates and public keys are not secrets). AWS access key ids, anywhere in a "
        "file: `AKIA` plus 16 capital letters or digits, not directly preceded or followed "
        f"by a letter, digit or `_`. And settings whose key ends in `{words}` (case does "
        "not matter), where a setting is a line made of optional spaces or tabs, a key of "
        "letters, digits, `_`, `.` and `-`, then `=` or `:` (spaces or tabs allowed on "
        "either side) and the value, which runs to the end of the line: the value is "
        "replaced, except that quotes around it (double or single) stay and only what is "
        "between them changes, and an empty value is left empty; lines that start with "
        "`#` or `;` are comments, not settings.",
        f"Secrets are: settings with a key ending in `{words}`, matched without regard to "
        "case (a setting line is optional leading spaces or tabs, a key of letters, "
        "digits, `_`, `.` or `-`, an `=` or `:` possibly surrounded by spaces or tabs, then "
        "the value up to the end of the line; a double- or single-quoted value keeps its "
        "quotes and only its inside is replaced; an empty value remains empty; `#` and `;` "
        "lines are comments and never settings); AWS access key ids wherever they occur "
        "(`AKIA` and then 16 characters that are capital letters or digits, with neither a "
        "letter, a digit nor `_` immediately before or after); and private key bodies "
        "(every line strictly between `-----BEGIN ...PRIVATE KEY-----`, e.g. "
        "`-----BEGIN RSA PRIVATE KEY-----` or `-----BEGIN PRIVATE KEY-----`, and the next "
        "`-----END ...PRIVATE KEY-----` collapses into a single placeholder line; the two "
        "marker lines are kept). Blocks that are not private keys, such as certificates "
        "and public keys, are left alone."])
    places = places_words(elsewhere(tree.path))
    copies = (
        "Keep no copy of the secrets: add no file or folder to the tree (not even "
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
    if ctx.step != 1:
        raise Misplaced("the leak is planted in the source history; only as the first step")
    if any(isinstance(c, NewCommit) for c in source.commits):
        raise NotApplicable("the source history already holds commits a task step made; the "
                            "leak is planted in a history of its own")
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
                          f"refs/heads/{branch}"), expected=log_lines(rewritten),
                    compare="lines" if ctx.final else "tail"),
        CommandText("the commits before the leak keep their hashes",
                    argv=("git", "-C", repo.path, "merge-base", "--is-ancestor", base,
                          f"refs/heads/{branch}"), expected="", compare="lines"),
        SecretPurged("no object of the repository holds the secret", repo=repo.path,
                     secret=secret),
        ObjectStore("the object database holds only git's own files", repo=repo.path),
        SecretsAbsent("no file of the repository, nor a copy elsewhere, holds the secret",
                      root=repo.path, secrets=(secret,), places=elsewhere(repo.path)),
        clean_tree(repo.path, *([branch] if ctx.final else [])),
    ]
    if ctx.final:  # else a later step may commit on top or check out another branch
        checks.append(TreeEntries.of(
            f"the working tree holds exactly the files of {branch}", repo.path,
            {p: c.encode() for p, c in tree_at(rewritten).items()}, git=True))
    if tag:
        checks.insert(1, CommandText(
            f"the tag {tag} points to the rewritten commit", argv=(
                "git", "-C", repo.path, "log", "--date=raw", f"--format={fmt}",
                f"refs/tags/{tag}"),
            expected=log_lines(rewritten[:tagged + 1]), compare="lines"))
    return StepResult(
        output=GitRepo(path=repo.path, phrase=repo.phrase, commits=rewritten, branch=branch),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, branch, secret, place, base, tag], _REWRITE),
        checks=checks, tools=("git", "grep", "sed"), side_effect=True,
        rules=tuple(Rule(name, stated, ignored) for seen, name, stated, ignored in candidates
                    if seen))


# --- rotate_credential ---------------------------------------------------------------------

# Characters of a generated password besides letters and digits: safe in every syntax the
# credential is written in (INI, YAML and JSON strings, .env, systemd), none a sed
# delimiter or replacement metacharacter, and each one percent-encoded in a URL.
PASSWORD_MARKS = "!@+*"
BACKUP_ENDS = (".bak", ".orig", "~")
# Where a copy of a rotated credential is looked for: where people keep backups of config
# files and scratch copies (system configs, service and vault folders, shared memory), not
# /root, home of the agent's own tooling, nor the system's programs (see the module's
# docstring).
STASHES = ("/etc", "/home", "/media", "/mnt", "/opt", "/srv", "/tmp", "/usr/local", "/var",
           "/dev/shm")


def stashes(path: str) -> tuple[str, ...]:
    """The folders a copy of the credential of the tree at `path` is looked for in."""
    return tuple(p for p in elsewhere(path) if not p.startswith(tuple(
        s + "/" for s in STASHES)) and p not in STASHES) + STASHES
UNRESERVED = ALNUM + "-._~"


def url_encoded(value: str) -> str:
    """`value` as a URL's user-info writes it: `urllib.parse.quote(value, safe="")`."""
    return "".join(c if c in UNRESERVED else "".join(f"%{b:02X}" for b in c.encode())
                   for c in value)


def _rotation_password(ctx: StepContext) -> str:
    """A password with at least one mark, so its URL form differs from it."""
    while True:
        text = _random(ctx, ALNUM + PASSWORD_MARKS + "-_.", ctx.rng.randint(16, 22))
        if text[0] in ALNUM and any(c.isdigit() for c in text) and \
                any(c in PASSWORD_MARKS for c in text):
            return text


def _api_key(ctx: StepContext) -> str:
    """A base64-like API key: letters, digits and at least one `+` (encoded in a URL)."""
    while True:
        text = _random(ctx, ALNUM + "+", ctx.rng.randint(28, 36))
        if text[0] in ALNUM and "+" in text:
            return "key_" + text


def _look_alike(ctx: StepContext, value: str) -> str:
    """Another credential sharing the first characters of `value` (a reused prefix)."""
    keep = len(value) - ctx.rng.randint(4, 6)
    while True:
        tail = _random(ctx, ALNUM, len(value) - keep)
        if tail[0] != value[keep]:
            return value[:keep] + tail


@dataclass(frozen=True)
class Credential:
    """The credential a rotation replaces, and how the config files name it."""

    what: str  # "database password"
    ini_section: str  # the INI section whose `ini_key` holds it
    ini_key: str
    env_key: str  # its variable in .env files and systemd units
    old: str
    new: str
    other_section: str = "replica"  # another section, the same key, another credential
    service: str = "db"  # the host's first label, the .env variables' prefix is its upper

    @property
    def old_url(self) -> str:
        """The old value as a URL's user-info writes it."""
        return url_encoded(self.old)

    @property
    def new_url(self) -> str:
        """The new value as a URL's user-info writes it."""
        return url_encoded(self.new)

    def rotate(self, data: bytes) -> bytes:
        """The bytes with the old value replaced, in its URL form too."""
        return data.replace(self.old_url.encode(), self.new_url.encode()) \
            .replace(self.old.encode(), self.new.encode())

    def held(self, data: bytes) -> bool:
        """True when the bytes hold the old value, as it is or URL-encoded."""
        return self.old.encode() in data or self.old_url.encode() in data


def _credential_files(ctx: StepContext, cred: Credential, svc: str,
                      user: str) -> tuple[dict[str, str], dict[str, str]]:
    """Config files using the credential in several syntaxes, look-alikes beside it.

    Returns (relpath -> text of the live files, relpath -> text of the backup files).
    """
    dom = ctx.domain.name
    edge, noise = ctx.difficulty.edge_cases, ctx.difficulty.noise
    fresh = _rotation_password if cred.service == "db" else _api_key
    other = fresh(ctx)  # another credential under the same key
    similar = _look_alike(ctx, cred.old)  # another credential with the same prefix
    cache = _rotation_password(ctx)
    db = f"{dom}_{ctx.rng.choice(('prod', 'main', 'app'))}"
    host = f"{cred.service}.{dom}.internal"
    url = (f"postgresql://{user}:{cred.old_url}@{host}:5432/{db}" if cred.service == "db"
           else f"https://{user}:{cred.old_url}@{host}/v1/events")
    upper = cred.service.upper()
    ini_old = ["; managed by the deploy tooling", "[server]",
               f"port = {ctx.rng.choice((8080, 8443, 9000))}", "",
               f"[{cred.ini_section}]", f"host = {host}", f"user = {user}",
               f"{cred.ini_key} = {cred.old}", "",
               f"[{cred.other_section}]", f"host = {cred.other_section}.{dom}.internal",
               f"user = {user}_ro",
               f"{cred.ini_key} = {other}"]
    ini = [*ini_old, f"{cred.ini_key}_min_length = {ctx.rng.choice((12, 16))}"]
    env = ["APP_ENV=production", f"{upper}_HOST={host}", f"{upper}_USER={user}",
           f"{cred.env_key}={cred.old}", f"REDIS_PASSWORD={cache}",
           f"{cred.env_key}_FILE_HINT=/run/secrets/{svc}"]
    quote = '"' if ctx.rng.random() < 0.5 else "'"
    yaml = [f"service: {svc}", f"{cred.ini_section}:", f"  host: {host}", f"  user: {user}",
            f"  {cred.ini_key}: {quote}{cred.old}{quote}", "cache:",
            f"  {cred.ini_key}: {quote}{similar}{quote}",
            f"  # {cred.ini_key}: <set by the vault agent>"]
    where_url = ctx.rng.choice(("env", "yaml"))
    if where_url == "env":
        env.append(f"{'DATABASE_URL' if cred.service == 'db' else 'API_ENDPOINT'}={url}")
    else:
        yaml.insert(5, f"  url: {url}")
    json_text = (
        "{\n"
        f'  "service": "{svc}",\n'
        f'  "{cred.ini_section}": {{\n'
        f'    "host": "{host}",\n'
        f'    "user": "{user}",\n'
        f'    "{cred.ini_key}": "{cred.old}"\n'
        "  },\n"
        '  "smtp": {\n'
        f'    "user": "mailer@{dom}.example",\n'
        f'    "{cred.ini_key}": "{cache}"\n'
        "  }\n"
        "}\n")
    env_name = "deploy/.env" if edge >= 2 else f"deploy/{svc}.env"
    ini_name = f"config/{svc} settings.ini" if edge == 3 else f"config/{svc}.ini"
    live = {ini_name: lines_text(ini), env_name: lines_text(env),
            f"config/{svc}.yaml": lines_text(yaml),
            "config/logging.ini": lines_text(["[logging]", "level = info",
                                              f"file = /var/log/{svc}.log"])}
    if ctx.difficulty.data_volume >= 2 or ctx.rng.random() < 0.5:
        live["config/settings.json"] = json_text
    if ctx.difficulty.data_volume >= 2 or ctx.rng.random() < 0.5:
        mark = '"' if ctx.rng.random() < 0.5 else ""
        live[f"deploy/{svc}.service"] = lines_text([
            "[Unit]", f"Description={svc} service", "After=network-online.target", "",
            "[Service]", f"User={user}", f"Environment={mark}{cred.env_key}={cred.old}{mark}",
            "Environment=LOG_LEVEL=info", f"ExecStart=/usr/local/bin/{svc} --config "
            f"/etc/{svc}/{svc}.ini", "", "[Install]", "WantedBy=multi-user.target"])
    backups = {f"{ini_name}.bak": lines_text(ini_old)}
    if noise >= 2 or ctx.rng.random() < 0.4:
        backups[f"{env_name}.orig"] = lines_text(env[:4])
    if noise == 3:
        backups[f"config/{svc}.yaml~"] = lines_text(yaml[:5])
    if noise >= 2 or ctx.rng.random() < 0.5:  # a backup that never held the credential
        backups["config/logging.ini.bak"] = lines_text(["[logging]", "level = debug"])
    return live, backups


def _is_backup(relpath: str) -> bool:
    return relpath.endswith(BACKUP_ENDS)


_ROTATE = r"""import os, sys
root, old, new, section, key, source = sys.argv[1:7]
mode, owner = sys.argv[7], sys.argv[8]
if not old:  # the current value is read from its INI file
    import configparser
    parser = configparser.RawConfigParser()
    parser.read(os.path.join(root, source), encoding='utf-8')
    old = parser.get(section, key)
if new.startswith('/'):  # the new value is the first line of a file
    with open(new, encoding='utf-8') as handle:
        new = handle.readline().rstrip('\n')
from urllib.parse import quote
pairs = [(quote(old, safe='').encode(), quote(new, safe='').encode()),
         (old.encode(), new.encode())]
holding = []
for folder, dirs, names in os.walk(root):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, 'rb') as handle:
            data = handle.read()
        if not any(before in data for before, _ in pairs):
            continue
        if name.endswith(('.bak', '.orig', '~')):
            os.remove(path)
            continue
        for before, after in pairs:
            data = data.replace(before, after)
        with open(path, 'wb') as handle:
            handle.write(data)
        holding.append(path)
if mode:
    import grp, pwd
    user, group = owner.split(':')
    for path in holding:
        os.chown(path, pwd.getpwnam(user).pw_uid, grp.getgrnam(group).gr_gid)
        os.chmod(path, int(mode, 8))
"""


@primitive("security.rotate_credential")
def rotate_credential(ctx: StepContext, source) -> StepResult:
    """Replace a credential's old value by a new one in every config file that uses it."""
    if not isinstance(source, FileTree) or not source.files:
        raise NotApplicable("needs a directory tree with files")
    tree = source
    state = ctx.planted_state(tree)  # mode, owner and group of the planted files
    planted_mode, _, _ = state
    svc = ctx.rng.choice(ctx.domain.services)
    user = f"{svc}_app"
    what, section, key, env_key = ("API key", "api", "api_key", "API_KEY") \
        if ctx.rng.random() < 0.4 else ctx.rng.choice([
            ("database password", "database", "password", "DB_PASSWORD"),
            ("database password", "database", "password", "DATABASE_PASSWORD"),
            ("database password", "postgres", "password", "PGPASSWORD")])
    api = what == "API key"
    fresh = _api_key if api else _rotation_password
    old, new = fresh(ctx), fresh(ctx)
    cred = Credential(what, section, key, env_key, old, new,
                      *(("staging", "api") if api else ("replica", "db")))
    live, backups = _credential_files(ctx, cred, svc, user)
    taken = {f.relpath for f in tree.files}
    files = {f.relpath: f for f in tree.files}
    for relpath, text in sorted({**live, **backups}.items()):
        if relpath in taken or any(t.startswith(relpath + "/") or relpath.startswith(t + "/")
                                   for t in taken):
            raise NotApplicable(f"the tree already has {relpath}")
        files[relpath] = ctx.plant(tree, relpath, text, state)
    if any(cred.held(f.content) for f in tree.files):
        raise NotApplicable("the tree already holds the old value")
    stale = sorted(p for p, f in files.items() if _is_backup(p) and cred.held(f.content))
    holding = sorted(p for p, f in files.items() if p not in stale and cred.held(f.content))
    after = {p: cred.rotate(f.content) for p, f in files.items() if p not in stale}
    if any(cred.held(data) for data in after.values()):
        raise NotApplicable("the old value survives the rotation")  # never, by construction
    ini_name = next(p for p in live if p.endswith(".ini") and p != "config/logging.ini")
    stated_old = ctx.rng.random() < 0.5
    secret_file = ""
    if ctx.rng.random() < 0.5:
        secret_file = f"/var/lib/vault/{svc}/{key}.next"
        ctx.world.add(secret_file, new + "\n", mode=0o600)
    # Modes and owners are tightened on the last step only: a later step may set them.
    owners = {f.owner for f in files.values()}
    tighten = ctx.final and ctx.rng.random() < 0.7 and user not in ctx.world.users and \
        user not in owners
    mode = ctx.rng.choice([m for m in (0o600, 0o640) if m != planted_mode])
    if tighten:
        ctx.world.add_user(user)
    root = f"{tree.path}"
    source_path = f"{tree.path}/{ini_name}"
    current = (f"its current value is `{old}`" if stated_old else
               f"its current value is the `{key}` setting of the `[{section}]` section of "
               f"`{source_path}`")
    given = (f"the new value is `{new}`" if not secret_file else
             f"the new value is the first line of `{secret_file}` (without its line end)")
    encoding = (
        f"Where the {what} is part of a URL (`scheme://user:SECRET@host/...`), it is "
        "percent-encoded: every character other than ASCII letters, digits, `-`, `.`, `_` "
        "and `~` is written as `%` and two capital hex digits (as Python's "
        "`urllib.parse.quote(value, safe='')` does); there the encoded old value must become "
        "the encoded new value.")
    backup_words = (
        "Stale backups (files whose names end in `.bak`, `.orig` or `~`) that hold the old "
        "value, plain or encoded, must be deleted (gone from the machine, not moved "
        "elsewhere), not edited; backups that do not hold it stay as they are.")
    others = (f"Other credentials stay exactly as they are, even those under the same key "
              f"(such as the `[{cred.other_section}]` section's `{key}`) or sharing a prefix "
              "with the old "
              "value: change nothing but the old value's occurrences, byte for byte.")
    tightening = (
        f" Every file that holds the credential afterwards must get mode {mode:04o} and "
        f"belong to user `{user}` and group `{user}`; the other files keep their modes and "
        "owners." if tighten else "")
    places = places_words(stashes(tree.path))
    copies = (
        "Keep no copy of the old value: add no file or folder to the tree, and leave no "
        "backup, archive or other copy holding it, plain or URL-encoded, compressed or not, "
        f"below {places}.")
    sentence = ctx.phrase([
        f"Rotate the {what} of the `{user}` account in the configuration below "
        f"{tree.phrase} (all subfolders, hidden files included): {current}, and {given}. "
        f"Replace the old value by the new one in every file that uses it, editing the "
        f"files in place. {encoding} {backup_words} {others}{tightening} {copies}",
        f"The {what} used by {svc} has been changed on the server; update every "
        f"file below {tree.phrase} (recursively, dot files too) that still holds the old "
        f"one: {current}, and {given}. {encoding} {backup_words} {others}{tightening} "
        f"{copies}",
        f"Credential rotation for the `{user}` account: {current}, and {given}. Every "
        f"occurrence of the old {what} in the files below {tree.phrase} (subfolders and "
        f"hidden files included) becomes the new one, in place. {encoding} {backup_words} "
        f"{others}{tightening} {copies}",
    ]) + ctx.hint("grep -rlZF | xargs -0 sed -i, find -name '*.bak' with rm" +
                  (", chmod, chown" if tighten else ""))
    # The reference solution: shell variables, then grep, sed, find, chmod and chown.
    lookup = "/^\\[" + section + "\\]$/,/^\\[/s/^" + key + " = //p"
    read_old = f"old={q(old)}" if stated_old else f"old=$(sed -n {q(lookup)} {q(source_path)})"
    read_new = f"new={q(new)}" if not secret_file else f"new=$(head -n 1 {q(secret_file)})"
    prelude = "\n".join([
        "urlenc() { local s=$1 out='' c i",
        "  for ((i = 0; i < ${#s}; i++)); do c=${s:i:1}",
        "    case $c in [A-Za-z0-9._~-]) out+=$c ;; *) printf -v c '%%%02X' \"'$c\"; "
        "out+=$c ;; esac",
        "  done; printf '%s' \"$out\"; }",
        "pattern() { printf '%s' \"$1\" | sed 's/[].[*^$\\\\#]/\\\\&/g'; }",
        "replacement() { printf '%s' \"$1\" | sed 's/[&\\\\#]/\\\\&/g'; }",
        read_old, read_new,
        "old_url=$(urlenc \"$old\") new_url=$(urlenc \"$new\")"])

    def solve(*, encoded: bool = True, delete: bool = True, every_backup: bool = False,
              move: bool = False, by_key: bool = False, chmod: bool = True,
              chown: bool = True, everything: bool = False) -> str:
        needles = '-e "$old" -e "$old_url"' if encoded else '-e "$old"'
        lines = [prelude]
        backup_names = "\\( -name '*.bak' -o -name '*.orig' -o -name '*~' \\)"
        if every_backup:
            lines.append(f"find {q(root)} -type f {backup_names} -delete")
        elif delete:
            remove = "mv --backup=numbered -t /root --" if move else "rm -f --"
            lines.append(f"find {q(root)} -type f {backup_names} -print0 |\n"
                         f"  xargs -0 -r grep -lZF {needles} |\n  xargs -0 -r {remove}")
        subs = ['-e "s#$(pattern "$old_url")#$(replacement "$new_url")#g"'] if encoded else []
        subs.append('-e "s#$(pattern "$old")#$(replacement "$new")#g"')
        lines.append(f"grep -rlZF {needles} {q(root)} |\n"
                     f"  xargs -0 -r sed -i {' '.join(subs)}")
        if by_key:  # every setting of the key gets the new value, whatever it held
            lines.append(f"sed -i -E \"s#^({key} = ).*#\\\\1$(replacement \"$new\")#\" "
                         f"{q(source_path)}")
        if tighten:
            holders = (f"find {q(root)} -type f -print0" if everything else
                       f"grep -rlZF -e \"$new\" -e \"$new_url\" {q(root)}")
            if chmod:
                lines.append(f"{holders} | xargs -0 -r chmod {mode:o}")
            if chown:
                lines.append(f"{holders} | xargs -0 -r chown {q(user)}:{q(user)}")
        return "\n".join(lines)

    url_changes = cred.old_url != cred.old
    clean_backups = any(_is_backup(p) for p in files if p not in stale)
    rules = [
        Rule("url-encoded", "that in a URL the old value is written percent-encoded",
             solve(encoded=False)) if url_changes else None,
        Rule("delete-backups", "that stale backups holding the old value are deleted",
             solve(delete=False)),
        Rule("moved-backups", "that stale backups are gone from the machine, not moved",
             solve(move=True)) if stale else None,
        Rule("keep-clean-backups", "that backups not holding the old value stay",
             solve(every_backup=True)) if clean_backups else None,
        Rule("same-key", "that other credentials under the same key stay",
             solve(by_key=True)),
    ]
    if tighten:
        rules += [Rule("mode", f"that the files holding the credential get mode {mode:04o}",
                       solve(chmod=False)) if mode != planted_mode else None,
                  Rule("owner", f"that the files holding the credential belong to {user}",
                       solve(chown=False)),
                  Rule("other-files", "that the other files keep their modes and owners",
                       solve(everything=True))]
    changed = {f"{root}/{p}": after[p] for p in holding}
    kept = {f"{root}/{p}": data for p, data in after.items() if p not in holding}
    checks: list[Assertion] = [
        FileDigests.of(f"the files using the {what} hold the new one", changed),
        FileDigests.of("every other file is unchanged", kept),
        TreeEntries.of("the stale backups are gone and no file was added", tree.path, after),
        *([Deleted.of("the stale backups are deleted, not moved out of the tree",
                      [files[p].content for p in stale])] if stale else []),
        SecretsAbsent(f"no file of the tree, nor a copy elsewhere, holds the old {what}",
                      root=tree.path, secrets=tuple(dict.fromkeys((old, cred.old_url))),
                      places=stashes(tree.path)),
    ]
    out: list[TreeFile] = []
    for relpath in sorted(after):
        item = files[relpath]
        if relpath in holding:
            item = replace(item, content=after[relpath], mtime=None)
            if tighten:
                item = replace(item, mode=mode, owner=user, group=user)
        out.append(item)
    if tighten:
        checks.append(Modes(f"the files holding the {what} are {mode:04o} and owned by {user}",
                            modes=tuple((f"{root}/{p}", mode) for p in holding),
                            owners=tuple((f"{root}/{p}", user, user) for p in holding)))
        checks.append(Modes("the other files keep their modes and owners",
                            modes=tuple((f"{root}/{f.relpath}", f.mode) for f in out
                                        if f.relpath not in holding),
                            owners=tuple((f"{root}/{f.relpath}", f.owner, f.group)
                                         for f in out if f.relpath not in holding)))
    alternative = ctx.python(
        [root, old if stated_old else "", secret_file or new, section, key, source_path,
         f"{mode:o}" if tighten else "", f"{user}:{user}"], _ROTATE)
    return StepResult(
        output=FileTree(path=tree.path, phrase=f"{tree.phrase} once the {what} is rotated",
                        files=tuple(out)),
        instruction=sentence, solution=solve(), alternative=alternative, checks=checks,
        tools=("grep", "sed", "find", "xargs", *(("chmod", "chown") if tighten else ())),
        side_effect=True, rules=tuple(r for r in rules if r is not None))
