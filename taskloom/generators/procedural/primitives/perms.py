"""Permission and account primitives: file modes, ownership, world-writable files, users.

Modes and owners are the step's effect on the system, so their checks run on the final
state, after any later step. A later step may move, rename or delete files of the tree
(organise by extension, delete old files), so the checks follow files by content where
they can and skip paths that are gone, but always need something left to check.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Accounts, CsvTable, FileTree, Report, TreeFile
from taskloom.generators.procedural.checks import (
    ACCOUNT_FILES,
    Assertion,
    FileText,
    PathState,
    UsersExist,
)
from taskloom.generators.procedural.primitives._trees import report_rules, sha256
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.sources.trees import ascii_lower
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text, q

# Policies whose modes survive `cp` under umask 022, so copies made later still match.
POLICIES = ((0o755, 0o755, 0o644), (0o750, 0o750, 0o640), (0o700, 0o700, 0o600))
SCRAMBLED = (0o600, 0o640, 0o644, 0o664, 0o666, 0o700, 0o755, 0o777)
WORLD_WRITABLE = (0o666, 0o777, 0o646, 0o662)
GROUP_WRITABLE = (0o664, 0o660, 0o775, 0o770)
NOLOGIN = "/usr/sbin/nologin"


@dataclass(frozen=True)
class TreeModes(Assertion):
    """Files of a tree have their modes, found at their path or (moved) by content."""

    root: str = ""
    files: tuple[tuple[str, str, int], ...] = ()  # (relpath, sha256, mode)
    dirs: tuple[tuple[str, int], ...] = ()  # (relpath, "" for the root; mode)
    complete: bool = False  # no later step moves, changes or removes any of them

    def body(self) -> list[str]:
        """Known paths first, then any other file whose content is known.

        No step makes symlinks, so none may stand where a file or directory was (a link to
        the untouched original would pass a check that skips links), nor hard links (a file
        replaced by a link to its twin changes with it); on the last step every file and
        directory must still be there, as it was.
        """
        complete = [
            f"for rel, digest, mode in {[list(f) for f in self.files]!r}:",
            "    path = root / rel",
            "    assert path.is_file() and not path.is_symlink(), (rel, 'missing')",
            "    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, rel",
            f"for rel, _ in {[list(d) for d in self.dirs]!r}:",
            "    path = root / rel if rel else root",
            "    assert path.is_dir() and not path.is_symlink(), (rel, 'missing')",
        ] if self.complete else []
        return [
            f"root = Path({self.root!r})",
            *complete,
            f"files = {[list(f) for f in self.files]!r}",
            "by_digest = {}",
            "for rel, digest, mode in files:",
            "    by_digest.setdefault(digest, set()).add(mode)",
            "known = {rel for rel, _, _ in files}",
            "checked = 0",
            "for path in sorted(root.rglob('*')):",
            "    rel = str(path.relative_to(root))",
            "    assert not (path.is_symlink() and (rel in known or path.is_dir())), "
            "(rel, 'a symlink')",
            "    if not path.is_file() or path.is_symlink():",
            "        continue",
            "    digest = hashlib.sha256(path.read_bytes()).hexdigest()",
            "    wanted = {m for r, d, m in files if r == rel and d == digest} if rel in known "
            "else by_digest.get(digest, set())",
            "    if wanted:",
            "        info = path.lstat()",
            "        assert info.st_nlink == 1, (rel, 'a hard link: not its own file')",
            "        mode = stat.S_IMODE(info.st_mode)",
            "        assert mode in wanted, (rel, oct(mode), sorted(oct(m) for m in wanted))",
            "        checked += 1",
            "assert checked, 'none of the files is left in the tree'",
            f"for rel, mode in {[list(d) for d in self.dirs]!r}:",
            "    path = root / rel if rel else root",
            "    assert not path.is_symlink(), (rel, 'a symlink')",
            "    if path.is_dir():",
            "        assert stat.S_IMODE(path.lstat().st_mode) == mode, (rel, oct(mode))",
        ]

    def reads(self) -> tuple[str, ...]:
        """The tree."""
        return (self.root,)

    def covering(self, planted: set[str], trees: dict[str, FileTree]) -> TreeModes:
        """Planted files keep their final modes; their folders get the root's."""
        files, folders = _later_plants(self.root, planted, trees)
        if not files:
            return self
        listed = {rel for rel, _ in self.dirs}
        directory = dict(self.dirs)[""]
        return replace(self, files=self.files + tuple(
            (f.relpath, sha256(f.content), f.mode) for f in files),
            dirs=self.dirs + tuple((d, directory) for d in folders if d not in listed))

    @property
    def portable(self) -> bool:
        """Artifacts lose setuid and setgid bits."""
        return not any(mode & 0o6000 for *_, mode in (*self.files, *self.dirs))


@dataclass(frozen=True)
class TreeOwners(Assertion):
    """The tree root, and every listed path still there, belong to user:group."""

    root: str = ""
    paths: tuple[str, ...] = ()  # relative to root
    user: str = ""
    group: str = ""
    complete: bool = False  # no later step moves or removes any of them

    def body(self) -> list[str]:
        """The root must exist; other paths when a later step left them, all on the last.

        None may be a symlink (no step makes one).
        """
        missing = ("        raise AssertionError((rel, 'missing'))" if self.complete
                   else "        continue")
        return [
            f"root = Path({self.root!r})",
            "assert root.is_dir(), root",
            f"uid, gid = int(_account({self.user!r})[2]), int(_group({self.group!r})[2])",
            f"for rel in [''] + {list(self.paths)!r}:",
            "    path = root / rel if rel else root",
            "    assert not path.is_symlink(), (rel, 'a symlink')",
            "    if not os.path.lexists(path):",
            missing,
            "    info = os.lstat(path)",
            "    assert info.st_uid == uid and info.st_gid == gid, rel",
        ]

    def reads(self) -> tuple[str, ...]:
        """The tree."""
        return (self.root,)

    def covering(self, planted: set[str], trees: dict[str, FileTree]) -> TreeOwners:
        """Planted folders, and planted files the chain leaves with this owner.

        A file a later step hands to another account is that step's to check.
        """
        files, folders = _later_plants(self.root, planted, trees)
        if not files:
            return self
        owned = [f.relpath for f in files if (f.owner, f.group) == (self.user, self.group)]
        return replace(self, paths=self.paths + tuple(
            p for p in [*folders, *owned] if p not in self.paths))

    @property
    def portable(self) -> bool:
        """Artifacts reach a separate verifier owned by root."""
        return False


@dataclass(frozen=True)
class ServiceAccount(Assertion):
    """A system account (UID below 1000) whose primary group is `group`, with no home.

    No home: neither the folder its entry names (`/` aside) nor /home/USER exists (a
    `useradd --create-home` passed before red-team round 8).
    """

    user: str = ""
    group: str = ""

    def body(self) -> list[str]:
        """Look the account up in the password and group databases, and its home up."""
        return [f"entry = _account({self.user!r})",
                "assert int(entry[2]) < 1000, entry",
                f"assert int(entry[3]) == int(_group({self.group!r})[2]), entry",
                f"for home in {{entry[5], '/home/' + {self.user!r}}} - {{'/', ''}}:",
                "    assert not os.path.lexists(home), f'{home} exists: the account has a home'"]

    def reads(self) -> tuple[str, ...]:
        """The account database."""
        return ACCOUNT_FILES


@dataclass(frozen=True)
class UsersAbsent(Assertion):
    """No account exists for these names."""

    names: tuple[str, ...] = ()

    def body(self) -> list[str]:
        """Every name must be unknown to the password database."""
        return ["names = {row[0] for row in _entries('/etc/passwd')}",
                f"for name in {list(self.names)!r}:",
                "    assert name not in names, f'unexpected account {name}'",
                "    try:",
                "        pwd.getpwnam(name)",
                "    except KeyError:",
                "        continue",
                "    raise AssertionError(f'the system knows an account {name}')"]

    def reads(self) -> tuple[str, ...]:
        """The account database."""
        return ACCOUNT_FILES


def _later_plants(root: str, planted: set[str], trees: dict[str, FileTree]
                  ) -> tuple[list[TreeFile], list[str]]:
    """What later steps planted in the tree at `root`, as the chain leaves it.

    The files and the folders they need (relative to the root). Left out of a tree check, a
    credential rotation's planted `config/` stayed 2777 `nobody:nogroup` and earned 1
    (red-team round of the permissions chain).
    """
    if root not in trees:
        return [], []
    final = trees[root]
    top = final.path.rstrip("/") + "/"
    inside = {path[len(top):] for path in planted if path.startswith(top)}
    files = [f for f in final.files if f.relpath in inside]
    return files, [d for d in _dirs(replace(final, files=tuple(files))) if d]


def _tree(source) -> FileTree:
    if not isinstance(source, FileTree) or not source.files:
        raise NotApplicable("needs a directory tree with files")
    return source


def _dirs(tree: FileTree) -> list[str]:
    """Relative paths of the tree's directories (the root is "")."""
    found = {""}
    for item in tree.files:
        parent = posixpath.dirname(item.relpath)
        while parent:
            found.add(parent)
            parent = posixpath.dirname(parent)
    return sorted(found)


def _retouch(ctx: StepContext, tree: FileTree, item: TreeFile, **changes) -> TreeFile:
    """Change a file of a freshly generated tree in the world and in its description."""
    new = replace(item, **changes)
    ctx.world.add(f"{tree.path}/{item.relpath}", new.content, mode=new.mode, owner=new.owner,
                  group=new.group, mtime=new.mtime)
    return new


def _script(ctx: StepContext, number: int) -> tuple[str, str]:
    """A maintenance script's name and text."""
    name = f"{ctx.rng.choice(('sync', 'publish', 'rebuild', 'check'))}-{number}.sh"
    return name, f"#!/bin/sh\n# {name} for {ctx.domain.org}\nexit 0\n"


def _plant(ctx: StepContext, tree: FileTree, files: list[TreeFile], named: tuple[str, str],
           state: tuple[int, str, str]) -> None:
    """Put a file (name, text) in a random folder of the tree, unless one is there.

    `state`: its mode, owner and group when the step starts.
    """
    name, text = named
    relpath = posixpath.join(ctx.rng.choice(sorted({posixpath.dirname(f.relpath)
                                                    for f in files})), name)
    if any(f.relpath == relpath for f in files):
        return
    files.append(ctx.plant(tree, relpath, text, state,
                           mtime=EPOCH_NOW - ctx.rng.randint(1, 90) * DAY))


def _is_script(relpath: str) -> bool:
    return relpath.endswith(".sh")


@primitive("perms.set_modes")
def set_modes(ctx: StepContext, source) -> StepResult:
    """Directories, scripts and other files each get their mode."""
    tree = _tree(source)
    files = list(tree.files)
    dirs = _dirs(tree)
    folder_modes: dict[str, int] = {}  # known only for a tree made by the task's source
    try:
        state = ctx.planted_state(tree)
    except NotApplicable:
        state = None
    if ctx.step == 1:  # a neglected tree: a few scripts, modes all over the place
        for folder in dirs:  # the top one group-writable, whatever the policy
            folder_modes[folder] = ctx.rng.choice(
                (0o775, 0o770) if not folder else (0o700, 0o750, 0o755, 0o775, 0o777))
            ctx.world.mkdir(f"{tree.path}/{folder}".rstrip("/"), mode=folder_modes[folder])
        for number in range(ctx.rng.randint(1, 3)):
            _plant(ctx, tree, files, _script(ctx, number + 1), state)
        files = [_retouch(ctx, tree, f, mode=ctx.rng.choice(SCRAMBLED)) for f in files]
        files.sort(key=lambda f: f.relpath)
    else:  # a tree an earlier step left: a script and a hidden file are planted in it where
        # it is there from the start (a chain's tree often had neither, and a solver
        # ignoring the rules for them earned 1)
        if state:
            _plant(ctx, tree, files, _script(ctx, 1), state)
            _plant(ctx, tree, files, (f".{ctx.rng.choice(('last-run', 'sync-state', 'lock'))}",
                                      f"last={EPOCH_NOW - ctx.rng.randint(1, 90) * DAY}\n"),
                   state)
            files.sort(key=lambda f: f.relpath)
    policies = [p for p in POLICIES  # each must change at least one file
                if any(f.mode != (p[1] if _is_script(f.relpath) else p[2]) for f in files)]
    if not policies:
        raise NotApplicable("the modes are already right")
    directory, script, data = ctx.rng.choice(policies)
    result = [replace(f, mode=script if _is_script(f.relpath) else data) for f in files]
    sentence = ctx.phrase([
        f"Fix the permissions under {tree.phrase}: the directory itself and every directory "
        f"below it get mode {directory:04o}, every file whose name ends in `.sh` gets "
        f"{script:04o}, and every other file (hidden ones included) gets {data:04o}.",
        f"Normalise the modes in {tree.phrase}, recursively: directories (the top one "
        f"included) {directory:04o}, `*.sh` scripts {script:04o}, all remaining regular "
        f"files {data:04o}.",
        f"Apply this permission policy to {tree.phrase} and everything in it: {directory:04o} "
        f"for directories, {script:04o} for files named `*.sh`, {data:04o} for any other "
        "file.",
    ]) + ctx.hint("find -type d / -type f with -exec chmod")
    root = q(tree.path)
    for_dirs = f"find {root} -type d -exec chmod {directory:o} {{}} +"
    for_scripts = f"find {root} -type f -name '*.sh' -exec chmod {script:o} {{}} +"
    for_data = f"find {root} -type f ! -name '*.sh' -exec chmod {data:o} {{}} +"
    solution = "\n".join([for_dirs, for_scripts, for_data])
    wrong = [  # (name, stated, solution ignoring it, whether its modes differ)
        ("scripts", "that `.sh` files get their own mode",
         f"{for_dirs}\nfind {root} -type f -exec chmod {data:o} {{}} +",
         any(_is_script(f.relpath) for f in files)),
        ("directories", "that directories get their mode", f"{for_scripts}\n{for_data}",
         any(mode != directory for mode in folder_modes.values())),
        ("top-dir", "that the directory itself gets the directory mode too",
         f"find {root} -mindepth 1 -type d -exec chmod {directory:o} {{}} +\n"
         f"{for_scripts}\n{for_data}", folder_modes.get("", directory) != directory),
        ("hidden", "that hidden files get the mode of the other files too",
         f"{for_dirs}\n{for_scripts}\n"
         f"find {root} -type f ! -name '*.sh' ! -name '.*' -exec chmod {data:o} {{}} +",
         any(f.mode != data for f in files if posixpath.basename(f.relpath).startswith(".")
             and not _is_script(f.relpath))),
    ]
    alternative = ctx.python(
        [tree.path, f"{directory:o}", f"{script:o}", f"{data:o}"],
        "import os, stat, sys\n"
        "root = sys.argv[1]\n"
        "folder, script, other = (int(mode, 8) for mode in sys.argv[2:5])\n"
        "os.chmod(root, folder)\n"
        "for top, dirs, files in os.walk(root):\n"
        "    for name in dirs:\n"
        "        path = os.path.join(top, name)\n"
        "        if not os.path.islink(path):\n"
        "            os.chmod(path, folder)\n"
        "    for name in files:\n"
        "        path = os.path.join(top, name)\n"
        "        if stat.S_ISREG(os.lstat(path).st_mode):\n"
        "            os.chmod(path, script if name.endswith('.sh') else other)\n")
    return StepResult(
        output=FileTree(path=tree.path, phrase=tree.phrase,
                        files=tuple(result)),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[TreeModes(f"the files and directories of {tree.path} have their modes",
                          root=tree.path,
                          files=tuple((f.relpath, sha256(f.content), f.mode) for f in result),
                          dirs=tuple((d, directory) for d in dirs), complete=ctx.final)],
        tools=("find", "chmod"), side_effect=True,
        rules=tuple(Rule(name, stated, ignored) for name, stated, ignored, seen in wrong
                    if seen))


@primitive("perms.chown_tree")
def chown_tree(ctx: StepContext, source) -> StepResult:
    """A service account that owns a tree."""
    tree = _tree(source)
    owners = {f.owner for f in tree.files}
    services = [s for s in ctx.domain.services if f"svc-{s}" not in owners and
                f"svc-{s}" not in ctx.world.users]
    if not services:
        raise NotApplicable("every service account name is taken")
    user = f"svc-{ctx.rng.choice(services)}"
    team = ctx.rng.random() < 0.5
    group = f"{ctx.domain.name}-team" if team else user
    account = (f"a system account `{user}` (UID below 1000, login shell {NOLOGIN}, no home "
               f"directory) whose primary group is a new group `{group}`" if team else
               f"a system account `{user}` (UID below 1000, login shell {NOLOGIN}, no home "
               f"directory) with its own primary group `{user}`")
    sentence = ctx.phrase([
        f"Create {account}, then make `{user}:{group}` the owner of {tree.phrase} and of "
        "everything below it.",
        f"Hand {tree.phrase} over to a service account: create {account}, and give the "
        f"directory and all files and folders in it to user `{user}` and group `{group}`.",
        f"Set up {account}. The directory {tree.path}, recursively, must then be owned by "
        f"`{user}` with group `{group}`.",
    ]) + ctx.hint("useradd --system, chown -R")

    def create(options: str = f"--system --no-create-home --shell {NOLOGIN}") -> str:
        if team:
            return (f"getent group {q(group)} >/dev/null || groupadd {q(group)}\n"
                    f"useradd {options} -g {q(group)} {q(user)}")
        return f"useradd {options} --user-group {q(user)}"

    owner = f"{q(user)}:{q(group)}"
    solution = f"{create()}\nchown -R {owner} {q(tree.path)}"
    rules = [
        Rule("recursive", "that everything below the directory changes owner too",
             f"{create()}\nchown {owner} {q(tree.path)}"),
        Rule("system", "that the account is a system account (UID below 1000)",
             f"{create(f'--no-create-home --shell {NOLOGIN}')}\n"
             f"chown -R {owner} {q(tree.path)}"),
        Rule("shell", f"that the login shell is {NOLOGIN}",
             f"{create('--system --no-create-home')}\nchown -R {owner} {q(tree.path)}"),
        Rule("no-home", "that the account has no home directory",
             f"{create(f'--system --create-home --shell {NOLOGIN}')}\n"
             f"chown -R {owner} {q(tree.path)}"),
    ]
    if team:
        rules.append(Rule("group", f"that the primary group is `{group}`",
                          f"useradd --system --no-create-home --shell {NOLOGIN} --user-group "
                          f"{q(user)}\nchown -R {q(user)}: {q(tree.path)}"))
    # A system group made first (the reference's may be a regular one), a home that is
    # never created, and the ownership set by walking the tree in Python.
    chown = ctx.python([tree.path, user, group],
                       "import grp, os, pwd, sys\n"
                       "root, user, group = sys.argv[1:4]\n"
                       "uid, gid = pwd.getpwnam(user).pw_uid, grp.getgrnam(group).gr_gid\n"
                       "os.lchown(root, uid, gid)\n"
                       "for top, dirs, files in os.walk(root):\n"
                       "    for name in dirs + files:\n"
                       "        os.lchown(os.path.join(top, name), uid, gid)\n")
    alternative = (f"getent group {q(group)} >/dev/null || groupadd --system {q(group)}\n"
                   f"useradd --system --gid {q(group)} --home-dir /nonexistent --no-create-home "
                   f"--shell {NOLOGIN} {q(user)}\n{chown}")
    result = tuple(replace(f, owner=user, group=group) for f in tree.files)
    return StepResult(
        output=FileTree(path=tree.path, phrase=tree.phrase,
                        files=result),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[UsersExist(f"{user} exists", users=((user, NOLOGIN, (group,)),)),
                ServiceAccount(f"{user} is a system account in group {group}", user=user,
                               group=group),
                TreeOwners(f"{tree.path} belongs to {user}:{group}", root=tree.path,
                           paths=tuple(d for d in _dirs(tree) if d) +
                           tuple(f.relpath for f in tree.files), user=user, group=group,
                           complete=ctx.final)],
        tools=("useradd", "chown"), side_effect=True, rules=tuple(rules))


@primitive("perms.find_world_writable")
def find_world_writable(ctx: StepContext, source) -> StepResult:
    """The files anyone may write to."""
    tree = _tree(source)
    files = list(tree.files)
    if ctx.step == 1:  # some careless modes, and group-writable files that are fine
        picks = ctx.rng.sample(range(len(files)), min(len(files), ctx.rng.randint(3, 6)))
        for position, index in enumerate(picks):
            pool = WORLD_WRITABLE if position % 2 == 0 else GROUP_WRITABLE
            files[index] = _retouch(ctx, tree, files[index], mode=ctx.rng.choice(pool))
    open_dirs = []  # world-writable folders (known only for a tree made by the task's source)
    if ctx.step == 1 and ctx.difficulty.noise >= 2:
        folders = sorted({posixpath.dirname(f.relpath) for f in files} - {""})
        if folders:
            open_dirs.append(ctx.rng.choice(folders))
            ctx.world.mkdir(f"{tree.path}/{open_dirs[0]}", mode=0o777)
    found = sorted((f for f in files if f.mode & 0o002), key=lambda f: f.relpath.encode())
    if not found:
        raise NotApplicable("no world-writable file")
    out = ctx.output_path("world-writable", "txt")
    relative = ctx.rng.random() < 0.5

    def report(entries, by_line: bool = False) -> list[str]:
        """The lines for some (relpath, mode) entries (`by_line`: sorted as whole lines)."""
        if not relative:
            return sorted(f"{tree.path}/{relpath}" for relpath, _ in entries)
        rows = sorted(entries, key=lambda entry: entry[0].encode())
        lines = [f"{mode:o} {relpath}" for relpath, mode in rows]
        return sorted(lines) if by_line else lines

    def listing(tests: str = "-type f -perm -o+w", order: str = "-t ' ' -k2") -> str:
        if relative:
            return (f"find {q(tree.path)} {tests} -printf '%m %P\\n' | "
                    f"LC_ALL=C sort {order} > {q(out)}")
        return f"find {q(tree.path)} {tests} | LC_ALL=C sort > {q(out)}"

    lines = tuple(report((f.relpath, f.mode) for f in found))
    if relative:
        layout = (f"one line per file: its permission bits in octal as `stat -c %a` prints "
                  f"them (like `666`), a space, then its path relative to {tree.path}"
                  f"{ctx.bare(' (no leading `./`)')}; lines "
                  f"{ctx.order('sorted by path in byte order')}")
    else:
        layout = ("the absolute path of each such file, one per line, "
                  f"{ctx.order('sorted in byte order')}")
    solution = listing()
    compare = ctx.compare()
    wrong = [  # (name, stated, solution ignoring it, the lines it writes)
        ("others", "that only the write bit for others counts (not the group's)",
         listing(tests="-type f -perm /go+w"),
         report((f.relpath, f.mode) for f in files if f.mode & 0o022)),
        ("files-only", "that directories do not count", listing(tests="-perm -o+w"),
         report([(f.relpath, f.mode) for f in found] + [(d, 0o777) for d in open_dirs])),
    ]
    if relative:
        wrong.append(("sort-by-path", "that the lines are sorted by path",
                      listing(order=""), report(((f.relpath, f.mode) for f in found),
                                                by_line=True)))
    alternative = ctx.python(
        [tree.path, out, "relative" if relative else "absolute", ctx.dot_slash],
        "import os, stat, sys\n"
        "root, out, layout = os.fsencode(sys.argv[1]), sys.argv[2], sys.argv[3]\n"
        "dot = os.fsencode(sys.argv[4])\n"
        "rows = []\n"
        "for top, dirs, files in os.walk(root):\n"
        "    for name in files:\n"
        "        path = os.path.join(top, name)\n"
        "        info = os.lstat(path)\n"
        "        if stat.S_ISREG(info.st_mode) and info.st_mode & stat.S_IWOTH:\n"
        "            rel = os.path.relpath(path, root)\n"
        "            rows.append((rel, b'%o %s%s' % (stat.S_IMODE(info.st_mode), dot, rel)\n"
        "                         if layout == 'relative' else path))\n"
        "with open(out, 'wb') as handle:\n"
        "    handle.writelines(line + b'\\n' for _, line in sorted(rows))\n")
    sentence = ctx.phrase([
        f"Audit {tree.phrase} for regular files that any user may write to (the "
        f"write bit for others is set) and write to {out} {layout}.",
        f"Find every world-writable regular file below {tree.phrase} (directories do not "
        f"count) and list them in {out}: {layout}.",
        f"Which files in {tree.phrase} are writable by everyone? Report them in {out} as "
        f"{layout}; directories are not part of the report.",
    ]) + ctx.hint("find -perm -o+w")
    return StepResult(
        output=Report(path=out, phrase=f"the world-writable files of {tree.phrase}",
                      lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"{out} lists the world-writable files", path=out,
                         expected=lines_text(lines), compare=compare, form=ctx.path_form)],
        tools=("find", "sort"),
        rules=report_rules(compare, lines, wrong))


def username(name: str) -> str:
    """The login for a person's name: lower case, letters a-z only."""
    return "".join(ch for ch in name.lower() if "a" <= ch <= "z")


@primitive("users.create_from_csv")
def create_from_csv(ctx: StepContext, source) -> StepResult:
    """Accounts, and their groups, for the people of a CSV file."""
    if not isinstance(source, CsvTable) or not source.rows:
        raise NotApplicable("needs a CSV table")
    table = source
    kinds = {c.name: c.kind for c in ctx.domain.columns}
    people = [c for c in table.header if kinds.get(c) == "name"]
    groups = [c for c in table.header if kinds.get(c) == "category"]
    dates = [c for c in table.header if kinds.get(c) == "date"]
    if not people or not groups:
        raise NotApplicable("needs a column of person names and one of departments")
    person, team = table.column(people[0]), table.column(groups[0])
    rows = [r for r in table.rows if username(r[person])]
    how = ctx.rng.choice(["all", "group"] + (["date"] if dates else []))
    if how == "group":
        value = ctx.rng.choice(sorted({r[team] for r in rows}))
        chosen = [r for r in rows if r[team] == value]
        which = f"every person whose `{groups[0]}` is `{value}`"
        condition = f'${team + 1} == "{value}"'
        selector, wanted = groups[0], value  # the alternative selects rows by header name
    elif how == "date":
        column = table.column(dates[0])
        days = sorted({r[column] for r in rows})
        cutoff = days[len(days) // 2]
        chosen = [r for r in rows if r[column] >= cutoff]
        which = f"every person whose `{dates[0]}` date is {cutoff} or later"
        condition = f"${column + 1} >= \"{cutoff}\""
        selector, wanted = dates[0], cutoff
    else:
        chosen = rows
        which = "every person listed"
        condition = "1"
        selector, wanted = "", ""
    accounts: dict[str, set[str]] = {}
    for row in chosen:
        accounts.setdefault(username(row[person]), set()).add(row[team])
    if not accounts:
        raise NotApplicable("nobody to create")
    absent = sorted({username(r[person]) for r in rows} - set(accounts))
    users = tuple((name, "/bin/bash", tuple(sorted(accounts[name]))) for name in sorted(accounts))
    if how == "group":
        membership = f"is a member of the group `{value}` (create it if it does not exist)"
    else:
        scope = "the rows that select them" if how == "date" else "their rows"
        membership = (f"is a member of one group per distinct `{groups[0]}` value of "
                      f"{scope}, named after that value (create groups that do not exist)")
    sentence = ctx.phrase([
        f"Create a login account for {which} in {table.phrase} (column `{people[0]}`). The "
        "username is the name in lower case with every character other than a-z removed; "
        "each account gets a home directory under /home and the shell /bin/bash, and "
        f"{membership}. Create no other accounts.",
        f"Onboard {which} in {table.phrase}: one user per distinct name in `{people[0]}`, "
        "named by lower-casing it and dropping all characters outside a-z, with a home "
        f"directory in /home and /bin/bash as shell. Each user {membership}. Nobody else "
        "gets an account.",
        f"From {table.phrase}, set up accounts for {which}: username = the `{people[0]}` "
        "value lower-cased with everything but the letters a-z stripped; home directory "
        f"/home/USERNAME and shell /bin/bash; the account {membership}. People not selected "
        "get no account.",
    ]) + ctx.hint("awk -F, then useradd -m, groupadd and usermod -aG in a loop")

    def onboard(select: str = condition, login: str = "tr 'A-Z' 'a-z' | tr -cd 'a-z'",
                home: str = "-m ") -> str:
        return (
            f"awk -F, 'NR > 1 && {select} {{print ${person + 1} \",\" ${team + 1}}}' "
            f"{q(table.path)} | while IFS=, read -r name group; do\n"
            f"  user=$(printf '%s' \"$name\" | {login})\n"
            "  getent group \"$group\" >/dev/null || groupadd \"$group\"\n"
            f"  id -u \"$user\" >/dev/null 2>&1 || useradd {home}-s /bin/bash \"$user\"\n"
            "  usermod -aG \"$group\" \"$user\"\n"
            "done")

    def falls_short(login) -> bool:
        """Whether accounts named by `login` miss an expected account or group."""
        made: dict[str, set[str]] = {}
        for row in chosen:
            made.setdefault(login(row[person]), set()).add(row[team])
        return any(not set(groups) <= made.get(name, set()) for name, _, groups in users)

    solution = onboard()
    rules = [Rule("home", "that each account gets a home directory", onboard(home=""))]
    if absent:
        rules.append(Rule("selection", f"that only the selected people ({which}) get accounts",
                          onboard(select="1")))
    if falls_short(ascii_lower):
        rules.append(Rule("strip", "that every character other than a-z is removed",
                          onboard(login="tr 'A-Z' 'a-z'")))
    if falls_short(lambda name: "".join(c for c in name if c.isascii() and c.isalpha())):
        rules.append(Rule("lowercase", "that the username is in lower case",
                          onboard(login="tr -cd 'A-Za-z'")))
    # Python's csv module selects the rows; each new account gets its (first) department as
    # its primary group, the others as supplementary ones, in one useradd call.
    alternative = ctx.python(
        [table.path, people[0], groups[0], how, selector, wanted],
        "import csv, grp, pwd, subprocess, sys\n"
        "path, person, team, how, column, wanted = sys.argv[1:7]\n"
        "accounts = {}\n"
        "with open(path, newline='', encoding='utf-8') as handle:\n"
        "    for row in csv.DictReader(handle):\n"
        "        cell = {key: value or '' for key, value in row.items()}\n"
        "        if how == 'group' and cell[column] != wanted:\n"
        "            continue\n"
        "        if how == 'date' and cell[column] < wanted:\n"
        "            continue\n"
        "        user = ''.join(c for c in cell[person].lower() if 'a' <= c <= 'z')\n"
        "        if user:\n"
        "            accounts.setdefault(user, {})[cell[team]] = None\n"
        "for group in sorted({g for groups in accounts.values() for g in groups}):\n"
        "    try:\n"
        "        grp.getgrnam(group)\n"
        "    except KeyError:\n"
        "        subprocess.run(['groupadd', group], check=True)\n"
        "for user, groups in sorted(accounts.items()):\n"
        "    groups = list(groups)\n"
        "    try:\n"
        "        pwd.getpwnam(user)\n"
        "    except KeyError:\n"
        "        command = ['useradd', '--create-home', '--home-dir',\n"
        "                   '/home/' + user, '--shell', '/bin/bash',\n"
        "                   '--no-user-group', '--gid', groups[0]]\n"
        "        if groups[1:]:\n"
        "            command += ['--groups', ','.join(groups[1:])]\n"
        "        subprocess.run(command + [user], check=True)\n"
        "    else:\n"
        "        command = ['usermod', '-a', '-G', ','.join(groups), user]\n"
        "        subprocess.run(command, check=True)\n")
    checks: list[Assertion] = [
        UsersExist(f"the accounts of {which} exist with their groups", users=users),
        *[PathState(f"/home/{name} exists", path=f"/home/{name}", state="dir")
          for name, _, _ in users[:5]]]
    if absent:
        checks.append(UsersAbsent("nobody else got an account", names=tuple(absent)))
    return StepResult(
        output=Accounts(path="/etc/passwd", phrase=f"the accounts of {which} in "
                        f"{table.phrase}", users=users),
        instruction=sentence, solution=solution, alternative=alternative, checks=checks,
        tools=("awk", "useradd", "groupadd", "usermod"), side_effect=True, rules=tuple(rules))
