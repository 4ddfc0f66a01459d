"""Sources: realistic input data for every source type, themed by the scenario's domain.

Volume follows the data-volume level, distractors and malformed records the noise level,
odd names (spaces, non-ASCII, empty files) the edge-case level. Every value is drawn from
`ctx.rng`; times derive from the fixed EPOCH_NOW, never the clock.
"""

from __future__ import annotations

import gzip
import hashlib
import io
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
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, q

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
    ctx.world.add(path, "".join(line + "\n" for line in lines))
    _distractors(ctx, f"/var/log/{ctx.domain.name}", "log")
    return AppLog(path=path, phrase=f"the {service} log {path}", lines=tuple(lines),
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
    ctx.world.add(path, "".join(line + "\n" for line in lines))
    _distractors(ctx, "/var/log/nginx", "log")
    return AccessLog(path=path, phrase=f"the web access log {path}", lines=tuple(lines),
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
        ctx.world.add(path, "".join(line + "\n" for line in lines), mtime=EPOCH_NOW - age)
        logs.append(AppLog(path=path, phrase=f"{path}", lines=tuple(lines),
                           records=tuple(records)))
        mtimes.append(EPOCH_NOW - age)
    for index in range(noisy(ctx)):
        ctx.world.add(f"{directory}/README.{index}.txt", "Logs of the services; do not edit.\n")
    return LogDir(path=directory, phrase=f"the *.log files in {directory}", logs=tuple(logs),
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
        return f"{table[:3].upper()}-{10_000 + index * rng.randint(1, 3) + index}"
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
    table = CsvTable(path=path, phrase=f"the CSV file {path}", header=header,
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
    return JsonDoc(path=path, phrase=f"the JSON file {path}", records=tuple(records))


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
    columns = ", ".join(f"{name} {kind}" for name, kind in types)
    statements = [f"CREATE TABLE {table} ({columns});", "BEGIN;"]
    statements += [f"INSERT INTO {table} VALUES ({', '.join(sql_literal(v) for v in row)});"
                   for row in typed_rows]
    statements.append("COMMIT;")
    seed = f"/tmp/taskloom-seed/{ctx.step}-{table}.sql"
    ctx.world.add(seed, "\n".join(statements) + "\n")
    ctx.world.commands.append(f"mkdir -p {q(data_dir(ctx, 'db'))} && sqlite3 {q(path)} "
                              f"< {q(seed)} && rm -rf /tmp/taskloom-seed")
    return SqliteDb(path=path, phrase=f"the `{table}` table of the SQLite database {path}",
                    table=table, columns=types, rows=typed_rows)


def tree_files(ctx: StepContext, count: int) -> list[TreeFile]:
    """Files of a project/document tree: nested folders, sizes, ages and extensions."""
    domain = ctx.domain
    folders = ["", *ctx.rng.sample(("docs", "archive", "incoming", "shared", "2025", "old",
                                    "drafts", "exports"), 3)]
    files: dict[str, TreeFile] = {}
    while len(files) < count:
        folder = ctx.rng.choice(folders)
        stem = ctx.rng.choice(domain.file_stems)
        number = ctx.rng.randint(1, 99)
        ext = ctx.rng.choice(domain.extensions)
        name = f"{stem}-{number:02d}.{ext}"
        if ctx.difficulty.edge_cases >= 2 and ctx.rng.random() < 0.25:
            name = ctx.rng.choice([f"{stem} {number}.{ext}", f"{stem}-ñ{number}.{ext}",
                                   f"{stem.upper()}_{number}.{ext}"])
        relpath = f"{folder}/{name}".lstrip("/")
        size = ctx.rng.choice((0, 1, 2, 5, 12, 40, 130, 300)) * 1024 + ctx.rng.randint(0, 900)
        if size == 0 and ctx.difficulty.edge_cases < 3:
            size = ctx.rng.randint(10, 900)
        word = ctx.rng.choice(domain.words)
        line = f"{word} {stem} {number}\n".encode()
        content = (line * (size // len(line) + 1))[:size]
        mtime = EPOCH_NOW - ctx.rng.randint(0, 400) * DAY - ctx.rng.randint(0, 86_000)
        files[relpath] = TreeFile(relpath, content, 0o644, mtime)
    return [files[name] for name in sorted(files)]


@source("file_tree")
def file_tree(ctx: StepContext) -> FileTree:
    """A directory of assorted files with realistic sizes and ages."""
    root = data_dir(ctx, ctx.rng.choice(("files", "share", "library", "storage")))
    files = tree_files(ctx, ctx.count((6, 10), (20, 45), (80, 200)))
    for item in files:
        ctx.world.add(f"{root}/{item.relpath}", item.content, mode=item.mode, mtime=item.mtime)
    for index in range(noisy(ctx)):
        hidden = TreeFile(f".cache-{index}.tmp", b"temporary\n", 0o644, EPOCH_NOW - DAY)
        files.append(hidden)
        ctx.world.add(f"{root}/{hidden.relpath}", hidden.content, mtime=hidden.mtime)
    return FileTree(path=root, phrase=f"the directory {root}",
                    files=tuple(sorted(files, key=lambda f: f.relpath)))


@source("checksum_list")
def checksum_list(ctx: StepContext) -> ChecksumList:
    """A tree with a sha256 manifest made before some files were corrupted or removed."""
    tree = file_tree(ctx)
    manifest = tuple(f"{hashlib.sha256(f.content).hexdigest()}  {f.relpath}"
                     for f in tree.files if not f.relpath.startswith("."))
    changed = ctx.rng.sample([f for f in tree.files if not f.relpath.startswith(".")],
                             k=min(3, max(1, len(tree.files) // 5)))
    files = {f.relpath: f for f in tree.files}
    for victim in changed:
        damaged = victim.content[:-1] + b"#" if victim.content else b"#"
        files[victim.relpath] = TreeFile(victim.relpath, damaged, victim.mode, victim.mtime)
        ctx.world.add(f"{tree.path}/{victim.relpath}", damaged, mtime=victim.mtime)
    path = f"{tree.path}/SHA256SUMS"
    text = "".join(line + "\n" for line in manifest)
    ctx.world.add(path, text)
    current = FileTree(path=tree.path, phrase=tree.phrase,
                       files=tuple(files[name] for name in sorted(files)))
    return ChecksumList(path=path, phrase=f"the checksum manifest {path}", lines=manifest,
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
    return Archive(path=path, phrase=f"the archive {path}", format="tar.gz",
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
    lines = [f"# {domain.org} service configuration", ""]
    section = None
    for sect, key, value in entries:
        if sect != section:
            if section is not None:
                lines.append("")
            lines.append(f"[{sect}]")
            section = sect
        lines.append(f"{key} = {value}")
    path = f"/etc/{domain.name}/{spaced(ctx, 'services.ini')}"
    ctx.world.add(path, "".join(line + "\n" for line in lines))
    return ConfigFile(path=path, phrase=f"the configuration file {path}", lines=tuple(lines),
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
    ctx.world.add(path, "".join(line + "\n" for line in lines))
    return TextFile(path=path, phrase=f"the list {path}", lines=tuple(lines))


@source("git_repo")
def git_repo(ctx: StepContext) -> GitRepo:
    """A repository with a believable history, built at image build time."""
    domain = ctx.domain
    root = data_dir(ctx, "repo")
    authors = ctx.rng.sample(domain.people, 3)
    files = {f"src/{stem}.py": f'"""{stem} module of {domain.org}."""\n'
             for stem in ctx.rng.sample(("app", "util", "config", "cli", "store", "net"), 3)}
    files["README.md"] = f"# {domain.org}\n"
    commits = []
    moment = EPOCH_NOW - 60 * DAY
    state = dict(files)
    commits.append(Commit("Initial commit", authors[0], f"{authors[0]}@example.com", moment,
                          tuple(sorted(state.items()))))
    verbs = ("Add", "Fix", "Refactor", "Document", "Speed up", "Handle")
    for number in range(ctx.count((4, 6), (8, 14), (20, 35))):
        moment += ctx.rng.randint(3600, 3 * DAY)
        path = ctx.rng.choice(sorted(state))
        author = ctx.rng.choice(authors)
        noun = ctx.rng.choice(domain.words)
        line = f"# {noun} change {number + 1}\n"
        state[path] = state[path] + line
        message = f"{ctx.rng.choice(verbs)} {noun} handling in {path.split('/')[-1]}"
        commits.append(Commit(message, author, f"{author}@example.com", moment,
                              ((path, state[path]),)))
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
    return GitRepo(path=root, phrase=f"the git repository {root}", commits=tuple(commits))


@source("script")
def script(ctx: StepContext) -> Script:
    """A maintenance script that already exists on the host."""
    domain = ctx.domain
    target = f"/var/log/{domain.name}"
    lines = ("#!/bin/bash", f"# Compress {domain.name} logs older than a week.",
             f"find {target} -name '*.log' -mtime +7 -exec gzip -f {{}} +")
    path = f"/usr/local/bin/{domain.name}-{ctx.rng.choice(('cleanup', 'compact', 'sweep'))}"
    ctx.world.add(path, "".join(line + "\n" for line in lines), mode=0o755)
    return Script(path=path, phrase=f"the script {path}", lines=lines)
