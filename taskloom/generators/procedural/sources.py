"""Sources: realistic input data for every source type, themed by the scenario's domain.

Volume follows the data-volume level, distractors and malformed records the noise level,
odd names (spaces, non-ASCII, empty files) the edge-case level. Every value is drawn from
`ctx.rng`; times derive from the fixed EPOCH_NOW, never the clock.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import posixpath
import tarfile
from datetime import UTC, datetime

from taskloom.generators.procedural.artifacts import (
    AccessLog,
    AccessRecord,
    AppLog,
    AppRecord,
    Archive,
    ChecksumList,
    Commit,
    ConfigFile,
    CsvTable,
    FileTree,
    GitRepo,
    JsonDoc,
    LogDir,
    Script,
    SqliteDb,
    TextFile,
    TreeFile,
)
from taskloom.generators.procedural.domains import CITIES, Column
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text, q

LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
AGENTS = ("curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.32",
          "Googlebot/2.1", "k6/0.52", "Wget/1.21")
APP_LOG_NOISE = ("### log rotated by logrotate ###", "Traceback (most recent call last):",
                 "    at com.example.Worker.run(Worker.java:42)", "", "--- restart ---",
                 "2025-11-2", "  caused by: connection reset by peer")
ACCESS_LOG_NOISE = ('bad request line: "\\x16\\x03\\x01"', "-", "GET / HTTP/1.1",
                    "10.0.0.1 - - [truncated")


def iso(epoch: int) -> str:
    """UTC timestamp in the logs' ISO format."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clf_time(epoch: int) -> str:
    """UTC timestamp in nginx's common log format."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def day(epoch: int) -> str:
    """UTC date as YYYY-MM-DD."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def noisy(ctx: StepContext) -> int:
    """How many malformed records / distractors to add for the noise level."""
    return (0, ctx.rng.randint(2, 4), ctx.rng.randint(5, 9))[ctx.difficulty.noise - 1]


def data_dir(ctx: StepContext, leaf: str) -> str:
    """A directory for input data under the domain's root."""
    return f"{ctx.domain.root}/{leaf}"


def spaced(ctx: StepContext, name: str) -> str:
    """A file name, made awkward at edge-case level 3."""
    if ctx.difficulty.edge_cases < 3:
        return name
    stem, dot, ext = name.partition(".")
    return ctx.rng.choice([f"{stem} 2025.{ext}", f"{stem}-été.{ext}", f"{stem} (old).{ext}"]) \
        if dot else name


def app_records(ctx: StepContext, count: int, start: int) -> list[AppRecord]:
    """Application log records in time order."""
    records = []
    moment = start
    for _ in range(count):
        moment += ctx.rng.randint(1, 90)
        level, template = ctx.rng.choice(ctx.domain.messages)
        if ctx.rng.random() < 0.25:
            level = ctx.rng.choice(LEVELS)
            template = ctx.rng.choice([m for lv, m in ctx.domain.messages if lv == level] or
                                      [template])
        message = template.format(id=f"{ctx.rng.choice('abcdef')}{ctx.rng.randint(1000, 9999)}",
                                  n=ctx.rng.randint(2, 900),
                                  user=ctx.rng.choice(ctx.domain.people),
                                  svc=ctx.rng.choice(ctx.domain.services))
        records.append(AppRecord(iso(moment), level, ctx.rng.choice(ctx.domain.services),
                                 message))
    for level in ("ERROR", "WARN", "INFO"):  # every level a primitive may ask for is present
        if sum(r.level == level for r in records) < 2:
            for index in ctx.rng.sample(range(len(records)), 2):
                old = records[index]
                records[index] = AppRecord(old.timestamp, level, old.component, old.message)
    return records


def with_noise(ctx: StepContext, lines: list[str], pool: tuple[str, ...]) -> list[str]:
    """Insert malformed lines at random places."""
    lines = list(lines)
    for _ in range(noisy(ctx)):
        lines.insert(ctx.rng.randint(0, len(lines)), ctx.rng.choice(pool))
    return lines


@source("app_log")
def app_log(ctx: StepContext) -> AppLog:
    """One service's application log."""
    service = ctx.rng.choice(ctx.domain.services)
    records = app_records(ctx, ctx.count((12, 20), (60, 150), (400, 900)),
                          EPOCH_NOW - 2 * DAY)
    lines = with_noise(ctx, [r.line() for r in records], APP_LOG_NOISE)
    path = f"/var/log/{ctx.domain.name}/{spaced(ctx, service + '.log')}"
    ctx.world.add(path, lines_text(lines))
    _distractors(ctx, f"/var/log/{ctx.domain.name}", "log")
    return AppLog(path=path, phrase=f"the {service} log `{path}`", lines=tuple(lines),
                  records=tuple(records))


@source("access_log")
def access_log(ctx: StepContext) -> AccessLog:
    """A web server access log in nginx combined format."""
    ips = [f"10.{ctx.rng.randint(0, 3)}.{ctx.rng.randint(0, 40)}.{ctx.rng.randint(2, 250)}"
           for _ in range(ctx.count((4, 6), (10, 20), (30, 60)))]
    moment = EPOCH_NOW - DAY
    records = []
    for _ in range(ctx.count((15, 25), (80, 200), (500, 1200))):
        moment += ctx.rng.randint(1, 40)
        status = ctx.rng.choice((200, 200, 200, 200, 301, 304, 404, 404, 500, 502, 503))
        records.append(AccessRecord(
            ip=ctx.rng.choice(ips[:3]) if ctx.rng.random() < 0.4 else ctx.rng.choice(ips),
            time=clf_time(moment), method=ctx.rng.choice(("GET", "GET", "GET", "POST")),
            path=ctx.rng.choice(ctx.domain.url_paths), status=status,
            size=ctx.rng.randint(120, 40_000), agent=ctx.rng.choice(AGENTS)))
    for status in (500, 404):
        if not any(r.status == status for r in records):
            index = ctx.rng.randrange(len(records))
            old = records[index]
            records[index] = AccessRecord(old.ip, old.time, old.method, old.path, status,
                                          old.size, old.agent)
    lines = with_noise(ctx, [r.line() for r in records], ACCESS_LOG_NOISE)
    path = f"/var/log/nginx/{spaced(ctx, 'access.log')}"
    ctx.world.add(path, lines_text(lines))
    _distractors(ctx, "/var/log/nginx", "log")
    return AccessLog(path=path, phrase=f"the web access log `{path}`", lines=tuple(lines),
                     records=tuple(records))


@source("log_dir")
def log_dir(ctx: StepContext) -> LogDir:
    """A directory with one application log per service."""
    directory = f"/var/log/{ctx.domain.name}"
    services = ctx.rng.sample(ctx.domain.services, min(len(ctx.domain.services),
                                                       ctx.rng.randint(3, 4)))
    logs, mtimes = [], []
    for position, service in enumerate(sorted(services)):
        records = app_records(ctx, ctx.count((6, 12), (30, 80), (200, 500)),
                              EPOCH_NOW - 3 * DAY)
        lines = with_noise(ctx, [r.line() for r in records], APP_LOG_NOISE)
        path = f"{directory}/{service}.log"
        # Half the logs are recent, half went quiet days ago (retention skills need both).
        age = ctx.rng.randint(1, 20) * 3600 if position % 2 else ctx.rng.randint(3, 12) * DAY
        ctx.world.add(path, lines_text(lines), mtime=EPOCH_NOW - age)
        logs.append(AppLog(path=path, phrase=f"`{path}`", lines=tuple(lines),
                           records=tuple(records)))
        mtimes.append(EPOCH_NOW - age)
    for index in range(noisy(ctx)):
        ctx.world.add(f"{directory}/README.{index}.txt", "Logs of the services; do not edit.\n")
    return LogDir(path=directory, phrase=f"the *.log files in `{directory}`", logs=tuple(logs),
                  mtimes=tuple(mtimes))


def _distractors(ctx: StepContext, directory: str, ext: str) -> None:
    for index in range(noisy(ctx) // 2):
        name = f"{ctx.rng.choice(ctx.domain.services)}.{ext}.{index + 1}"
        path = f"{directory}/{name}"
        if not ctx.world.exists(path):
            ctx.world.add(path, f"{iso(EPOCH_NOW - 9 * DAY)} INFO [old] archived entry\n")


def column_value(ctx: StepContext, column: Column, index: int, table: str) -> str:
    """One CSV value of a column kind."""
    rng = ctx.rng
    if column.kind == "id":
        return f"{table[:3].upper()}-{10_000 + index * 3 + rng.randint(0, 2)}"  # unique
    if column.kind == "name":
        name = rng.choice(ctx.domain.people).capitalize()
        return name + ("é" if ctx.difficulty.edge_cases == 3 and rng.random() < 0.2 else "")
    if column.kind == "category":
        return rng.choice(ctx.domain.categories)
    if column.kind == "int":
        return str(rng.randint(1, 500))
    if column.kind == "money":
        return f"{rng.randint(100, 99_999) / 100:.2f}"
    if column.kind == "date":
        return day(EPOCH_NOW - rng.randint(0, 90) * DAY)
    if column.kind == "city":
        return rng.choice(CITIES)
    if column.kind == "code":
        return f"{rng.choice(ctx.domain.services)}-{rng.randint(1, 12):02d}"
    return rng.choice(("yes", "no"))


def table_rows(ctx: StepContext, count: int) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and rows of the domain's table; ids unique, categories all present."""
    domain = ctx.domain
    header = tuple(c.name for c in domain.columns)
    rows = []
    for index in range(count):
        rows.append(tuple(column_value(ctx, c, index, domain.table) for c in domain.columns))
    category = next((i for i, c in enumerate(domain.columns) if c.kind == "category"), None)
    if category is not None and count >= 2 * len(domain.categories):
        for position, value in enumerate(domain.categories):
            row = list(rows[position])
            row[category] = value
            rows[position] = tuple(row)
        ctx.rng.shuffle(rows)
    return header, rows


def numeric_columns(ctx: StepContext) -> tuple[str, ...]:
    """Columns of the domain table that hold numbers."""
    return tuple(c.name for c in ctx.domain.columns if c.kind in ("int", "money"))


@source("csv_table")
def csv_table(ctx: StepContext) -> CsvTable:
    """The domain's table as CSV."""
    header, rows = table_rows(ctx, ctx.count((8, 14), (40, 120), (300, 900)))
    directory = data_dir(ctx, "data")
    path = f"{directory}/{spaced(ctx, ctx.domain.table + '.csv')}"
    table = CsvTable(path=path, phrase=f"the CSV file `{path}`", header=header,
                     rows=tuple(rows), numeric=numeric_columns(ctx))
    ctx.world.add(path, table.text())
    for index in range(noisy(ctx) // 2):
        old = CsvTable(path="", phrase="", header=header, rows=tuple(rows[: 3 + index]))
        ctx.world.add(f"{directory}/{ctx.domain.table}-{2023 - index}.csv.bak", old.text())
    return table


@source("json_doc")
def json_doc(ctx: StepContext) -> JsonDoc:
    """The domain's table as a JSON array of objects (numbers as numbers)."""
    import json

    header, rows = table_rows(ctx, ctx.count((6, 12), (30, 90), (200, 600)))
    numeric = numeric_columns(ctx)
    records = []
    for row in rows:
        record = {}
        for name, value in zip(header, row, strict=True):
            record[name] = (float(value) if "." in value else int(value)) if name in numeric \
                else value
        records.append(record)
    path = f"{data_dir(ctx, 'data')}/{spaced(ctx, ctx.domain.table + '.json')}"
    ctx.world.add(path, json.dumps(records, indent=2, ensure_ascii=False) + "\n")
    return JsonDoc(path=path, phrase=f"the JSON file `{path}`", records=tuple(records))


def sql_literal(value: object) -> str:
    """A value as an SQL literal."""
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


@source("sqlite_db")
def sqlite_db(ctx: StepContext) -> SqliteDb:
    """An SQLite database holding the domain's table, loaded at build time from SQL."""
    header, rows = table_rows(ctx, ctx.count((8, 14), (40, 120), (300, 900)))
    numeric = numeric_columns(ctx)
    types = tuple((name, ("REAL" if any("." in r[i] for r in rows) else "INTEGER")
                   if name in numeric else "TEXT") for i, name in enumerate(header))
    typed_rows = tuple(tuple(float(v) if t == "REAL" else int(v) if t == "INTEGER" else v
                             for v, (_, t) in zip(row, types, strict=True)) for row in rows)
    path = f"{data_dir(ctx, 'db')}/{ctx.domain.name}.db"
    table = ctx.domain.table
    columns = ", ".join(f'"{name}" {kind}' for name, kind in types)  # `group` is a keyword
    statements = [f'CREATE TABLE "{table}" ({columns});', "BEGIN;"]
    statements += [f"INSERT INTO \"{table}\" VALUES ({', '.join(sql_literal(v) for v in row)});"
                   for row in typed_rows]
    statements.append("COMMIT;")
    seed = f"/tmp/taskloom-seed/{ctx.step}-{table}.sql"
    ctx.world.add(seed, "\n".join(statements) + "\n")
    ctx.world.commands.append(f"mkdir -p {q(data_dir(ctx, 'db'))} && sqlite3 {q(path)} "
                              f"< {q(seed)} && rm -rf /tmp/taskloom-seed")
    return SqliteDb(path=path, phrase=f"the `{table}` table of the SQLite database `{path}`",
                    table=table, columns=types, rows=typed_rows)


def normalized_name(name: str) -> str:
    """A file name made lowercase (ASCII letters) with dashes for spaces.

    The rule of `files.rename_normalize`; sources keep these unique within a tree so the
    renaming never makes two files collide.
    """
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in name).replace(" ", "-")


def _needs_normalizing(relpath: str) -> bool:
    name = relpath.rsplit("/", 1)[-1]
    return normalized_name(name) != name


TREE_BYTES = 1536 * 1024
"""Bytes of sizeable files one tree may hold; the files after that have at most 4 KiB.
Large trees get more files, not more megabytes: a task of 25 MB (200 files of up to
300 KiB, copied once by a backup step) cost ~1 GB of run memory and slowed every stage
that moves it, for no extra skill."""


def tree_files(ctx: StepContext, count: int) -> list[TreeFile]:
    """Files of a project/document tree: nested folders, sizes, ages and extensions.

    Sizes spread from empty to 300 KiB until the tree holds `TREE_BYTES`; the files after
    that are small.

    Some names are capitalized (as people name files); at edge-case level 2+ some have
    spaces, non-ASCII letters or upper case. Names stay unique after `normalized_name`.
    """
    domain = ctx.domain
    folders = ["", *ctx.rng.sample(("docs", "archive", "incoming", "shared", "2025", "old",
                                    "drafts", "exports"), 3)]
    files: dict[str, TreeFile] = {}
    taken: set[str] = set()
    spent = 0
    while len(files) < count:
        folder = ctx.rng.choice(folders)
        stem = ctx.rng.choice(domain.file_stems)
        number = ctx.rng.randint(1, 99)
        ext = ctx.rng.choice(domain.extensions)
        name = f"{stem}-{number:02d}.{ext}"
        roll = ctx.rng.random()
        if ctx.difficulty.edge_cases >= 2 and roll < 0.25:
            name = ctx.rng.choice([f"{stem} {number}.{ext}", f"{stem}-ñ{number}.{ext}",
                                   f"{stem.upper()}_{number}.{ext}"])
        elif roll > 0.85:
            name = f"{stem.capitalize()}-{number:02d}.{ext}"
        relpath = f"{folder}/{name}".lstrip("/")
        if normalized_name(relpath) in taken:
            continue
        taken.add(normalized_name(relpath))
        size = ctx.rng.choice((0, 1, 2, 5, 12, 40, 130, 300)) * 1024 + ctx.rng.randint(0, 900)
        if size == 0 and ctx.difficulty.edge_cases < 3:
            size = ctx.rng.randint(10, 900)
        if spent + size > TREE_BYTES:  # the budget is spent: only small files from here on
            size = ctx.rng.randint(10, 4096)
        spent += size
        word = ctx.rng.choice(domain.words)
        line = f"{word} {stem} {number}\n".encode()
        content = (line * (size // len(line) + 1))[:size]
        mtime = EPOCH_NOW - ctx.rng.randint(0, 400) * DAY - ctx.rng.randint(0, 86_000)
        files[relpath] = TreeFile(relpath, content, 0o644, mtime)
    if count >= 2 and not any(_needs_normalizing(name) for name in files):
        # Someone always saved a file with a capital letter (name normalization needs one).
        victim = files.pop(ctx.rng.choice(sorted(files)))
        folder, _, name = victim.relpath.rpartition("/")
        relpath = f"{folder}/{name[:1].upper()}{name[1:]}".lstrip("/")
        files[relpath] = TreeFile(relpath, victim.content, victim.mode, victim.mtime)
    return [files[name] for name in sorted(files)]


def _duplicates(ctx: StepContext, files: list[TreeFile]) -> list[TreeFile]:
    """Copies of some files under other names or folders (same bytes, later mtime)."""
    taken = {normalized_name(f.relpath) for f in files}
    folders = sorted({f.relpath.rpartition("/")[0] for f in files})
    originals = [f for f in files if f.content]
    copies: list[TreeFile] = []
    for _ in range(min(len(originals), ctx.count((1, 2), (2, 4), (3, 6)))):
        original = ctx.rng.choice(originals)
        name = original.relpath.rpartition("/")[2]
        base, dot, ext = name.partition(".")
        folder = ctx.rng.choice(folders)
        choices = [name, f"{base}-copy{dot}{ext}", f"{base}-2{dot}{ext}"]
        if ctx.difficulty.edge_cases >= 2:
            choices.append(f"{base} (1){dot}{ext}")
        relpath = f"{folder}/{ctx.rng.choice(choices)}".lstrip("/")
        if normalized_name(relpath) in taken:
            continue
        taken.add(normalized_name(relpath))
        mtime = min(EPOCH_NOW - 3600, (original.mtime or EPOCH_NOW) +
                    ctx.rng.randint(1, 30) * DAY)
        copies.append(TreeFile(relpath, original.content, original.mode, mtime))
    return copies


def _dated_backups(ctx: StepContext) -> list[TreeFile]:
    """A folder of backups named `PREFIX-YYYY-MM-DD.EXT` (one per day or week)."""
    folder = ctx.rng.choice(("backups", "snapshots", "nightly"))
    if ctx.difficulty.edge_cases == 3:
        folder = f"{folder} (nas)"
    prefix = f"{ctx.domain.name}-{ctx.rng.choice(('db', 'site', 'data', 'config'))}"
    ext = ctx.rng.choice(("tar.gz", "sql.gz", "zip"))
    every = ctx.rng.choice((1, 1, 2, 7)) * DAY
    moment = EPOCH_NOW - ctx.rng.randint(1, 3) * DAY
    moment -= moment % DAY
    series = []
    for _ in range(ctx.count((5, 7), (8, 14), (15, 30))):
        stamp = day(moment)
        content = f"{prefix} backup taken {stamp}\n".encode() * ctx.rng.randint(20, 400)
        series.append(TreeFile(f"{folder}/{prefix}-{stamp}.{ext}", content, 0o644,
                               moment + 2 * 3600 + ctx.rng.randint(0, 3000)))
        moment -= every
    extras = []
    if ctx.difficulty.noise >= 2:  # look-alikes that are not dated backups
        newest = series[0]
        extras.append(TreeFile(f"{folder}/{prefix}-latest.{ext}", newest.content, 0o644,
                               newest.mtime))
        extras.append(TreeFile(f"{folder}/README.txt",
                               b"Nightly backups are written here by the backup job.\n",
                               0o644, EPOCH_NOW - 200 * DAY))
    if ctx.difficulty.noise == 3:
        partial = series[ctx.rng.randrange(len(series))]
        extras.append(TreeFile(f"{partial.relpath}.partial", partial.content[:100], 0o644,
                               partial.mtime))
    return series + extras


@source("file_tree")
def file_tree(ctx: StepContext) -> FileTree:
    """A directory of assorted files with realistic sizes and ages.

    Besides the domain's files it holds a few duplicates (same bytes, another name or
    folder) and a folder of dated backups, so search and pruning skills always apply.
    """
    root = data_dir(ctx, ctx.rng.choice(("files", "share", "library", "storage")))
    files = tree_files(ctx, ctx.count((6, 10), (20, 45), (80, 200)))
    files += _duplicates(ctx, files)
    files += _dated_backups(ctx)
    for item in files:
        ctx.world.add(f"{root}/{item.relpath}", item.content, mode=item.mode, mtime=item.mtime)
    for index in range(noisy(ctx)):
        hidden = TreeFile(f".cache-{index}.tmp", b"temporary\n", 0o644, EPOCH_NOW - DAY)
        files.append(hidden)
        ctx.world.add(f"{root}/{hidden.relpath}", hidden.content, mtime=hidden.mtime)
    return FileTree(path=root, phrase=f"the directory `{root}`",
                    files=tuple(sorted(files, key=lambda f: f.relpath)))


@source("checksum_list")
def checksum_list(ctx: StepContext) -> ChecksumList:
    """A tree with a sha256 manifest made before some files were corrupted or removed."""
    tree = file_tree(ctx)
    listed = [f for f in tree.files if not f.relpath.startswith(".")]
    manifest = tuple(f"{hashlib.sha256(f.content).hexdigest()}  {f.relpath}" for f in listed)
    victims = ctx.rng.sample(listed, k=min(len(listed), 3, len(listed) // 5 + 1))
    changed, removed = (victims[:-1], victims[-1:]) if len(victims) > 1 else (victims, [])
    files = {f.relpath: f for f in tree.files}
    for victim in changed:
        damaged = victim.content[:-1] + b"#" if victim.content else b"#"
        files[victim.relpath] = TreeFile(victim.relpath, damaged, victim.mode, victim.mtime)
        ctx.world.add(f"{tree.path}/{victim.relpath}", damaged, mtime=victim.mtime)
    for victim in removed:
        del files[victim.relpath]
        del ctx.world.files[posixpath.normpath(f"{tree.path}/{victim.relpath}")]
    path = f"{tree.path}/SHA256SUMS"
    text = lines_text(manifest)
    ctx.world.add(path, text)
    current = FileTree(path=tree.path, phrase=tree.phrase,
                       files=tuple(files[name] for name in sorted(files)))
    return ChecksumList(path=path, phrase=f"the checksum manifest `{path}`", lines=manifest,
                        tree=current)


def tar_gz(members: list[tuple[str, bytes]], mtime: int = EPOCH_NOW) -> bytes:
    """A deterministic .tar.gz (fixed times, owners and gzip header)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            info.uname = info.gname = "root"
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


@source("archive")
def archive(ctx: StepContext) -> Archive:
    """A .tar.gz backup of a folder of the domain's files."""
    files = tree_files(ctx, ctx.count((4, 8), (15, 30), (50, 120)))
    top = ctx.rng.choice(("export", "backup", "bundle"))
    members = [(f"{top}/{f.relpath}", f.content) for f in files]
    stamp = day(EPOCH_NOW - ctx.rng.randint(1, 30) * DAY)
    path = f"{data_dir(ctx, 'backups')}/{spaced(ctx, f'{top}-{stamp}.tar.gz')}"
    ctx.world.add(path, tar_gz(members))
    return Archive(path=path, phrase=f"the archive `{path}`", format="tar.gz",
                   members=tuple(members))


@source("config_file")
def config_file(ctx: StepContext) -> ConfigFile:
    """An INI-style service configuration."""
    domain = ctx.domain
    entries = []
    for service in ctx.rng.sample(domain.services, min(3, len(domain.services))):
        entries += [(service, "enabled", ctx.rng.choice(("true", "false"))),
                    (service, "port", str(ctx.rng.randint(2000, 9000))),
                    (service, "workers", str(ctx.rng.randint(1, 16))),
                    (service, "log_level", ctx.rng.choice(("debug", "info", "warn")))]
        if ctx.rng.random() < 0.5:
            entries.append((service, "timeout_ms", str(ctx.rng.randint(100, 5000))))
    if ctx.difficulty.edge_cases >= 2:  # a value with spaces
        first = entries[0][0]
        entries.insert(1, (first, "description", f"{first} service of {domain.org}"))
    lines = [f"# {domain.org} service configuration", ""]
    section = None
    for sect, key, value in entries:
        if sect != section:
            if section is not None:
                lines.append("")
            lines.append(f"[{sect}]")
            section = sect
        if ctx.difficulty.noise >= 2 and ctx.rng.random() < 0.3:  # comments, old settings
            lines.append(ctx.rng.choice([f"# {key} = {ctx.rng.randint(1, 99)}",
                                         f"; {key} was changed during the last review",
                                         f"#{key} = {value}"]))
        lines.append(f"{key} = {value}")
    path = f"/etc/{domain.name}/{spaced(ctx, 'services.ini')}"
    ctx.world.add(path, lines_text(lines))
    return ConfigFile(path=path, phrase=f"the configuration file `{path}`", lines=tuple(lines),
                      entries=tuple(entries))


@source("text_file")
def text_file(ctx: StepContext) -> TextFile:
    """A plain text list: one host, user or item per line, with repeats."""
    domain = ctx.domain
    pool = [f"{ctx.rng.choice(domain.words)}-{ctx.rng.choice(domain.services)}"
            f"-{ctx.rng.randint(1, 30):02d}" for _ in range(ctx.count((4, 6), (10, 25), (40, 90)))]
    lines = [ctx.rng.choice(pool) for _ in range(ctx.count((10, 18), (50, 150), (400, 900)))]
    if ctx.difficulty.noise >= 2:
        for _ in range(noisy(ctx)):
            lines.insert(ctx.rng.randint(0, len(lines)), "")
    path = f"{data_dir(ctx, 'lists')}/{spaced(ctx, 'inventory.txt')}"
    ctx.world.add(path, lines_text(lines))
    return TextFile(path=path, phrase=f"the list `{path}`", lines=tuple(lines))


SURNAMES = ("Moreau", "Okafor", "Lindqvist", "Tanaka", "Novak", "Haddad", "Silva",
            "Kowalski", "Mensah", "Ferreira", "Brennan", "Ivanova")


@source("git_repo")
def git_repo(ctx: StepContext) -> GitRepo:
    """A repository with a believable history, built at image build time.

    Authors have full names; most commit subjects reference a unique issue number
    (`(#412)`); some commits add a notes file under docs/. Dates, authors and committers
    are fixed, so every commit hash is a function of the generated data.
    """
    domain = ctx.domain
    root = data_dir(ctx, "repo")
    people = ctx.rng.sample(domain.people, 3 if ctx.difficulty.data_volume == 1 else 4)
    surnames = ctx.rng.sample(SURNAMES, len(people))
    authors = [(f"{first.capitalize()} {last}", f"{first}.{last.lower()}@example.com")
               for first, last in zip(people, surnames, strict=True)]
    files = {f"src/{stem}.py": f'"""{stem} module of {domain.org}."""\n'
             for stem in ctx.rng.sample(("app", "util", "config", "cli", "store", "net"), 3)}
    files["README.md"] = f"# {domain.org}\n"
    commits = []
    moment = EPOCH_NOW - 60 * DAY
    state = dict(files)
    commits.append(Commit("Initial commit", *authors[0], moment, tuple(sorted(state.items()))))
    verbs = ("Add", "Fix", "Refactor", "Document", "Speed up", "Handle")
    count = ctx.count((4, 6), (8, 14), (20, 35))
    issues = iter(ctx.rng.sample(range(100, 1000), count))
    for number in range(count):
        moment += ctx.rng.randint(3600, 3 * DAY)
        author, email = ctx.rng.choice(authors)
        noun = ctx.rng.choice(domain.words)
        issue = next(issues)
        reference = f" (#{issue})" if ctx.rng.random() < 0.8 else ""
        notes = f"docs/{noun} notes.md" if ctx.difficulty.edge_cases == 3 else f"docs/{noun}.md"
        if number and notes not in state and ctx.rng.random() < 0.15:
            state[notes] = f"# {noun.capitalize()}\n\nNotes on {noun} for {domain.org}.\n"
            commits.append(Commit(f"Add {noun} notes{reference}", author, email, moment,
                                  ((notes, state[notes]),)))
            continue
        path = ctx.rng.choice(sorted(state))
        state[path] = state[path] + f"# {noun} change {number + 1}\n"
        message = f"{ctx.rng.choice(verbs)} {noun} handling in {path.split('/')[-1]}{reference}"
        commits.append(Commit(message, author, email, moment, ((path, state[path]),)))
    staging = f"/tmp/taskloom-git/{ctx.step}"
    script = [f"git init -q -b main {q(root)}"]
    for index, commit in enumerate(commits):
        for path, content in commit.files:
            ctx.world.add(f"{staging}/{index}/{path}", content)
        date = f"@{commit.date} +0000"
        script.append(
            f"cp -a {q(f'{staging}/{index}')}/. {q(root)}/ && git -C {q(root)} add -A && "
            f"GIT_AUTHOR_NAME={q(commit.author)} GIT_AUTHOR_EMAIL={q(commit.email)} "
            f"GIT_COMMITTER_NAME={q(commit.author)} GIT_COMMITTER_EMAIL={q(commit.email)} "
            f"GIT_AUTHOR_DATE={q(date)} GIT_COMMITTER_DATE={q(date)} "
            f"git -C {q(root)} commit -q -m {q(commit.message)}")
    script.append(f"rm -rf {q(staging)}")
    ctx.world.commands.extend(script)
    return GitRepo(path=root, phrase=f"the git repository `{root}`", commits=tuple(commits))


SCRIPT_JOBS = {
    "cleanup": ("Compress {name} logs older than a week.",
                "find /var/log/{name} -name '*.log' -mtime +7 -exec gzip -f {{}} +"),
    "sweep": ("Remove {name} temporary files older than two days.",
              "find /tmp -maxdepth 1 -name '{name}-*' -mtime +2 -delete"),
    "snapshot": ("Snapshot the {name} configuration into /var/backups.",
                 "tar -czf \"/var/backups/{name}-etc-$(date +%F).tar.gz\" -C /etc {name}"),
}


@source("script")
def script(ctx: StepContext) -> Script:
    """A maintenance script kept with the domain's data, not yet installed on the PATH.

    It answers `--version` with one line, so a test can run it by name once installed.
    """
    domain = ctx.domain
    job = ctx.rng.choice(sorted(SCRIPT_JOBS))
    summary, command = SCRIPT_JOBS[job]
    name = f"{domain.name}-{job}"
    version = f"{ctx.rng.randint(1, 3)}.{ctx.rng.randint(0, 9)}"
    lines = ("#!/bin/bash", f"# {summary.format(name=domain.name)}", "set -eu",
             'if [ "${1:-}" = "--version" ]; then',
             f'  echo "{name} {version}"', "  exit 0", "fi",
             command.format(name=domain.name))
    path = f"{data_dir(ctx, 'scripts')}/{spaced(ctx, name + '.sh')}"
    ctx.world.add(path, lines_text(lines), mode=0o755)
    return Script(path=path, phrase=f"the script `{path}`", lines=lines)
