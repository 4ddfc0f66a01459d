"""git primitives: search, statistics, history and changes of a generated repository.

The source repository is built at image build time with fixed authors, committers and
dates, so every commit hash of its history is computed here exactly (`commit_hashes`),
the way git computes it. Commits a task makes (a revert, a commit on a new branch) get
their date from the clock when the agent runs git: they are `NewCommit`s, whose hash is
unknown, so no expected value ever depends on it. Every primitive names the branch it
works on, because a previous step may have left HEAD on another one.

One module, though long, because it is one family: the two git assertions serve only
these six primitives, and all of them follow the one rule above (which hashes are known in
advance). The hash model itself (`_history`) is shared with the security family, which
rewrites history.

The stated rules (`Rule`) are the ones a careless git command breaks: a case-insensitive
search, the newest for the oldest, the order of a list, ties of a ranking, the path a
history is limited to, the prefix or folder of an export, committing on the base branch.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Archive, Commit, GitRepo, Report
from taskloom.generators.procedural.checks import (
    ArchiveMembers,
    Assertion,
    CommandText,
    FileText,
)
from taskloom.generators.procedural.primitives._history import (
    NewCommit,
    clean_tree,
    commit_hashes,
    tree_at,
    tree_id,
)
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
)
from taskloom.generators.procedural.sources.common import day
from taskloom.generators.procedural.world import EPOCH_NOW, lines_text, q

ISSUE = re.compile(r"\(#(\d+)\)")
IDENTITIES = (("Release Bot", "release-bot"), ("Build Keeper", "build-keeper"),
              ("Merge Steward", "merge-steward"))


@dataclass(frozen=True)
class GitOutput(CommandText):
    """Output of a git command in the final repository.

    Most of it is history that was there before, or values the instruction has to give
    (a commit message, an identity); only `secret` lines are answers it must not state.
    """

    secret: tuple[str, ...] = ()

    def answers(self) -> tuple[str, ...]:
        """Only the lines the task itself creates."""
        return tuple(line for line in self.secret if len(line.strip()) >= 4)


@dataclass(frozen=True)
class BranchCommit(Assertion):
    """The commit a step made on a new branch, wherever the branch tip is now.

    The first commit of `base..branch` sits on base's tip, is made by `identity` (author
    and committer), has the message `subject` and nothing after it, and changes only
    `path`, to `content`; later steps may add commits on top.
    """

    repo: str = ""
    base: str = ""
    branch: str = ""
    subject: str = ""
    identity: str = ""
    path: str = ""
    content: str = ""

    def body(self) -> list[str]:
        """Resolve the commit with git, then compare its parent, identity and change."""
        git = ["git", "-C", self.repo]
        base, branch = f"refs/heads/{self.base}", f"refs/heads/{self.branch}"
        return [
            f"git = {git!r}",
            f"commits = _run(git + ['rev-list', '--reverse', {base + '..' + branch!r}])"
            ".split()",
            "assert commits, 'no commit on the branch'",
            "first = commits[0]",
            f"base = _run(git + ['rev-parse', {base!r}]).strip()",
            "assert _run(git + ['log', '-1', '--format=%P', first]).split() == [base]",
            "assert _run(git + ['log', '-1', '-z', '--format=%an <%ae>|%cn <%ce>|%B', first]) == "
            f"{self.identity + '|' + self.identity + '|' + self.subject + chr(10) + chr(0)!r}",
            "assert _run(git + ['diff-tree', '--no-commit-id', '--name-only', '-r', first]) == "
            f"{self.path + chr(10)!r}",
            f"assert _run(git + ['show', first + ':' + {self.path!r}]) == {self.content!r}"]

    def reads(self) -> tuple[str, ...]:
        """The repository."""
        return (self.repo,)


@dataclass(frozen=True)
class Lineage(Assertion):
    """A branch holds exactly these commits, one on top of the other, and their files.

    Newest first, its commits have `messages` and `people` (author and committer, both
    the one stated); each has one parent, the commit below it. The oldest ones, made when
    the image was built, have the hashes in `known` (oldest first), so their dates and
    trees are the ones generated. The tip's tree is `tree`, every path and byte of it, and
    every object is what its name says. Subjects alone let a solution rewrite the commits
    under them, or add one that undoes the work, and still pass. With `later` (a step that
    is not the last), a later step may add commits on top: these are the branch's oldest
    commits, and `tree` is the files of the newest of them.
    """

    repo: str = ""
    branch: str = ""
    messages: tuple[str, ...] = ()
    people: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    tree: str = ""
    secret: tuple[str, ...] = ()
    later: bool = False

    @classmethod
    def of(cls, label: str, repo: GitRepo, branch: str, *, secret: tuple[str, ...] = (),
           later: bool = False) -> Lineage:
        """The check that `branch` of `repo.path` holds exactly `repo.commits`.

        With `later`, they are its oldest commits.
        """
        newest = tuple(reversed(repo.commits))
        return cls(label, repo=repo.path, branch=branch, secret=secret, later=later,
                   messages=tuple(c.message + "\n" for c in newest),
                   people=tuple(f"{c.author} <{c.email}>" for c in newest),
                   known=tuple(h for h in commit_hashes(repo) if h),
                   tree=tree_id(tree_at(repo.commits)))

    def body(self) -> list[str]:
        """One `git log` of hash, parents, people and message, then the tip's tree."""
        git = ["git", "-C", self.repo]
        ref = f"refs/heads/{self.branch}"
        rows = [[p, p, m] for p, m in zip(self.people, self.messages, strict=True)]
        mine = f"rows[len(rows) - {len(rows)}:]" if self.later else "rows"
        return [
            f"git = {git!r}",
            f"_intact({self.repo!r})",
            "rows = [record.split(chr(1)) for record in _run(git + ['log', '-z', "
            f"'--format=%H%x01%P%x01%an <%ae>%x01%cn <%ce>%x01%B', {ref!r}]).split(chr(0)) "
            "if record]",
            f"mine = {mine}",
            f"assert [row[2:] for row in mine] == {rows!r}",
            "assert [row[1] for row in rows] == [row[0] for row in rows[1:]] + [''], "
            "'a commit whose parents are not the one commit below it'",
            f"assert [row[0] for row in reversed(rows)][:{len(self.known)}] == "
            f"{list(self.known)!r}, 'the commits made before the task were rewritten'",
            "assert _run(git + ['rev-parse', mine[0][0] + '^{tree}']).strip() == "
            f"{self.tree!r}, 'the files at the tip are not the ones the steps leave'"]

    def reads(self) -> tuple[str, ...]:
        """The repository."""
        return (self.repo,)

    def answers(self) -> tuple[str, ...]:
        """Only the subjects the task itself creates."""
        return tuple(line for line in self.secret if len(line.strip()) >= 4)


def _repo(source) -> GitRepo:
    if not isinstance(source, GitRepo) or len(source.commits) < 3:
        raise NotApplicable("needs a git repository with some history")
    return source


def _git(repo: GitRepo) -> str:
    return f"git -C {q(repo.path)}"


def _subject(commit: Commit) -> str:
    return commit.message.split("\n", 1)[0]


def _identity(ctx: StepContext) -> tuple[str, str]:
    name, user = ctx.rng.choice(IDENTITIES)
    return name, f"{user}@{ctx.domain.name}.example.com"


def _issue_grep(number: str) -> str:
    """Options of git log finding `#NUMBER`, not a longer number (`#4127` for `#412`)."""
    return f"-E --grep={q(f'#{number}([^0-9]|$)')}"


def _unique_issues(repo: GitRepo, hashes: list[str | None]) -> list[tuple[str, int]]:
    """(issue number, commit index) for issues that exactly one commit message mentions."""
    found = []
    for index, commit in enumerate(repo.commits):
        for number in ISSUE.findall(commit.message):
            mentions = sum(bool(re.search(f"#{number}(?![0-9])", c.message))
                           for c in repo.commits)
            if mentions == 1 and hashes[index] is not None:
                found.append((number, index))
    return found


# The alternatives are written from the instruction sentences alone: Python reading commits
# through git plumbing (rev-list, cat-file, ls-tree) in place of `git log`, and plumbing
# (hash-object, read-tree, commit-tree, update-ref, apply) in place of commit and revert.
_COMMITS = r"""import datetime, subprocess, sys
def git(*args, data=None):
    return subprocess.run(['git', '-C', sys.argv[1], *args], input=data,
                          capture_output=True, check=True).stdout
def commits(branch):
    # (hash, author name, author email, author day, subject, message), newest first
    found = []
    for commit in git('rev-list', branch).decode().split():
        head, _, message = git('cat-file', 'commit', commit).decode().partition('\n\n')
        person = next(line for line in head.split('\n') if line.startswith('author '))
        name, _, rest = person[len('author '):].rpartition(' <')
        email, _, when = rest.partition('> ')
        stamp, zone = when.split()
        sign = -1 if zone[0] == '-' else 1
        offset = datetime.timedelta(minutes=sign * (int(zone[1:3]) * 60 + int(zone[3:5])))
        day = datetime.datetime.fromtimestamp(int(stamp), datetime.timezone(offset))
        paragraph = message.strip('\n').split('\n\n')[0]
        subject = ' '.join(line.strip() for line in paragraph.split('\n'))
        found.append((commit, name, email, day.strftime('%Y-%m-%d'), subject, message))
    return found
"""

_FIND = _COMMITS + r"""import re
branch, token, which, layout, out = sys.argv[2:7]
# an issue number is no prefix of a longer one: #412 is not #4127
matching = [c for c in commits(branch) if re.search(re.escape(token) + '(?![0-9])', c[5])
            or which != 'issue' and token in c[5]]
chosen = {'newest': matching[:1], 'oldest': matching[-1:]}.get(which, matching)
with open(out, 'w', encoding='utf-8') as handle:
    for c in chosen:
        handle.write(f'{c[0]} {c[4]}\n' if layout == 'subject' else f'{c[0]}\n')
"""

_AUTHORS = _COMMITS + r"""from collections import Counter
branch, key, out = sys.argv[2:5]
counts = Counter(c[2] if key == 'email' else c[1] for c in commits(branch))
ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))
with open(out, 'w', encoding='utf-8') as handle:
    for who, count in ranked:
        handle.write(f'{who} {count}\n' if key == 'email' else f'{count} {who}\n')
"""

_HISTORY = _COMMITS + r"""branch, path, layout, out = sys.argv[2:6]
history = commits(branch)[::-1]
lookup = ''.join(f'{c[0]}:{path}\n' for c in history).encode()
blobs = git('cat-file', '--batch-check=%(objectname)', data=lookup).decode().split('\n')
parents = dict(line.split()[:2] for line in git('rev-list', '--parents', branch).decode()
               .splitlines() if len(line.split()) > 1)
blob_of = {c[0]: blobs[i] for i, c in enumerate(history)}
with open(out, 'w', encoding='utf-8') as handle:
    for c in history:
        before = blob_of.get(parents.get(c[0]), 'missing')
        if blob_of[c[0]].endswith('missing') and before.endswith('missing'):
            continue
        if blob_of[c[0]] != before:
            prefix = {'hash': c[0] + ' ', 'date': c[3] + ' '}.get(layout, '')
            handle.write(prefix + c[4] + '\n')
"""

_EXPORT = r"""import io, subprocess, sys, tarfile, zipfile
repo, branch, out, kind, prefix, folder = sys.argv[1:7]
def git(*args):
    return subprocess.run(['git', '-C', repo, *args], capture_output=True, check=True).stdout
entries = []
for entry in git('ls-tree', '-r', '-z', '--full-tree', branch).split(b'\0'):
    if entry:
        info, _, path = entry.partition(b'\t')
        mode, kind_, blob = info.split()
        path = path.decode()
        if kind_ == b'blob' and (not folder or path.startswith(folder + '/')):
            entries.append((prefix + path, int(mode, 8), git('cat-file', 'blob', blob.decode())))
if kind == 'zip':
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as archive:
        for name, mode, data in entries:
            archive.writestr(name, data)
else:
    with tarfile.open(out, 'w:gz') as archive:
        for name, mode, data in entries:
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), mode & 0o777
            archive.addfile(member, io.BytesIO(data))
"""


@primitive("git.find_commit")
def find_commit(ctx: StepContext, source) -> StepResult:
    """The commit(s) whose message mentions an issue or a word."""
    repo = _repo(source)
    hashes = commit_hashes(repo)
    words = sorted({w for c in repo.commits[1:] for w in ctx.domain.words if w in c.message})
    options: list[tuple[str, str, list[int]]] = []
    for word in words:
        having = [i for i, c in enumerate(repo.commits) if word in c.message]
        if len(having) >= 2:
            options += [("newest", word, having[-1:]), ("oldest", word, having[:1]),
                        ("all", word, having[::-1])]
    options = [o for o in options if all(hashes[i] for i in o[2])]

    def folded(how: str, word: str) -> list[int]:
        """The commits a case-insensitive search picks."""
        having = [i for i, c in enumerate(repo.commits) if word.lower() in c.message.lower()]
        return {"newest": having[-1:], "oldest": having[:1], "all": having[::-1]}[how]

    # a word that also appears capitalized, where the case-sensitive rule shows
    options = [o for o in options if folded(o[0], o[1]) != o[2]] or options
    issues = _unique_issues(repo, hashes)
    if issues and (not options or ctx.rng.random() < 0.4):
        # one that starts a longer issue number, where the issue rule shows
        number, index = ctx.rng.choice([(n, i) for n, i in issues if sum(
            f"#{n}" in c.message for c in repo.commits) > 1] or issues)
        how, token, indexes = "issue", f"#{number}", [index]
    elif options:
        how, token, indexes = ctx.rng.choice(options)
    else:
        raise NotApplicable("no commit can be singled out by its message")
    with_subject = how == "all" or ctx.rng.random() < 0.5
    lines = tuple(f"{hashes[i]} {_subject(repo.commits[i])}" if with_subject else
                  f"{hashes[i]}" for i in indexes)
    fmt = "%H %s" if with_subject else "%H"
    layout = ("one line: the full 40-character commit hash, a space, then the commit's "
              "subject line" if with_subject else
              "one line holding only the full 40-character commit hash")
    branch = f"branch `{repo.branch}` of {repo.phrase}"
    contains = f"whose message contains `{token}` (case-sensitive)"
    which = {"issue": f"the commit on {branch} whose message references issue {token}",
             "newest": f"the most recent commit on {branch} {contains}",
             "oldest": f"the oldest commit on {branch} {contains}",
             "all": f"every commit on {branch} {contains}"}[how]
    out = ctx.output_path("commits" if how == "all" else "commit", "txt")
    if how == "all":
        layout = ("one line per commit, newest first: the full 40-character hash, a space, "
                  "then the subject line")
        sentence = ctx.phrase([
            f"Find {which} and list them in {out}, {layout}.",
            f"List {which} in {out}: {layout}.",
            f"Search the history for {which}; write {out} with {layout}.",
        ])
    else:
        sentence = ctx.phrase([
            f"Find {which} and write {layout} to {out}.",
            f"Identify {which}; save it to {out} as {layout}.",
            f"Look through the history for {which}. Record it in {out}: {layout}.",
        ])
    sentence += ctx.hint("git log --grep")
    git = _git(repo)
    grep = _issue_grep(token[1:]) if how == "issue" else f"-F --grep={q(token)}"
    if how == "newest":
        solution = f"{git} log -1 --format={q(fmt)} {grep} {q(repo.branch)} > {q(out)}"
    elif how == "oldest":
        solution = (f"{git} log --reverse --format={q(fmt)} {grep} {q(repo.branch)} | "
                    f"head -n 1 > {q(out)}")
    else:
        solution = f"{git} log --format={q(fmt)} {grep} {q(repo.branch)} > {q(out)}"
    newest = f"{git} log -1 --format={q(fmt)} {grep} {q(repo.branch)} > {q(out)}"
    oldest = (f"{git} log --reverse --format={q(fmt)} {grep} {q(repo.branch)} | "
              f"head -n 1 > {q(out)}")
    wrong = exercised(
        (how == "issue" and [i for i, c in enumerate(repo.commits) if token in c.message]
         != indexes,
         Rule("issue", f"that `{token}` is not the start of a longer issue number",
              solution.replace(f" {grep}", f" -F --grep={q(token)}", 1))),
        (how != "issue" and folded(how, token) != indexes,
         Rule("case", f"that `{token}` is searched case-sensitively",
              solution.replace(f" {grep}", f" -i {grep}", 1))),
        (how in ("newest", "oldest"),
         Rule("which", f"that the {how} matching commit is wanted",
              oldest if how == "newest" else newest)),
        (how == "all",
         Rule("order", "that the commits are listed newest first",
              f"{git} log --reverse --format={q(fmt)} {grep} {q(repo.branch)} > {q(out)}")))
    return StepResult(
        output=Report(path=out, phrase=f"the hash{'es' if how == 'all' else ''} and subject"
                      f"{'s' if how == 'all' else ''} of {which}" if with_subject else
                      f"the hash of {which}", lines=lines),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, repo.branch, token, how,
                                "subject" if with_subject else "hash", out], _FIND),
        checks=[FileText(f"{out} names the commit", path=out, expected=lines_text(lines),
                         compare="exact" if ctx.difficulty.strictness == 3 else "lines")],
        tools=("git",), rules=wrong)


@primitive("git.author_stats")
def author_stats(ctx: StepContext, source) -> StepResult:
    """Commits per author, busiest first."""
    repo = _repo(source)
    by_email = ctx.rng.random() < 0.4
    counts = Counter(c.email if by_email else c.author for c in repo.commits)
    if len(counts) < 2:
        raise NotApplicable("a single author")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))
    reversed_ties = sorted(counts.items(), key=lambda item: (item[1], item[0].encode()),
                           reverse=True)
    by_who = sorted(counts.items(), key=lambda item: item[0].encode())
    out = ctx.output_path("authors", "txt")
    compare = ctx.compare(order_matters=True)
    branch = f"branch `{repo.branch}` of {repo.phrase}"
    if by_email:
        lines = tuple(f"{email} {count}" for email, count in ranked)
        sentence = ctx.phrase([
            f"Count the commits of each author email on {branch} and write `EMAIL COUNT` "
            f"lines to {out}, most commits first (ties: email in byte order).",
            f"Write to {out} how many commits each author email address made on {branch}: "
            "one `EMAIL COUNT` line per address, sorted by count descending, then by email "
            "(C locale).",
            f"Produce {out} with a line `EMAIL COUNT` for every author email in the history "
            f"of {branch}, highest count first and equal counts ordered by email.",
        ]) + ctx.hint("git log --format=%ae | sort | uniq -c")
        solution = (f"{_git(repo)} log --format=%ae {q(repo.branch)} | LC_ALL=C sort | "
                    "uniq -c | LC_ALL=C sort -k1,1nr -k2,2 | awk '{print $2, $1}' "
                    f"> {q(out)}")
        phrase = f"the number of commits per author email on {branch}"
        ranking = "LC_ALL=C sort -k1,1nr -k2,2 | "

        def shape(items) -> list[str]:
            return [f"{email} {count}" for email, count in items]
    else:
        lines = tuple(f"{count} {name}" for name, count in ranked)
        sentence = ctx.phrase([
            f"Count the commits of each author (by author name) on {branch} and write "
            f"`COUNT NAME` lines to {out}, most commits first (ties: name in byte order).",
            f"Write to {out} one `COUNT NAME` line per author name in the history of "
            f"{branch}: the number of commits, a space, the full name; sorted by count "
            "descending, then by name (C locale).",
            f"Rank the authors of {branch} by number of commits into {out} as `COUNT NAME` "
            "(count first, then the author's full name), biggest first, equal counts by name.",
        ]) + ctx.hint("git log --format=%an | sort | uniq -c")
        solution = (f"{_git(repo)} log --format=%an {q(repo.branch)} | LC_ALL=C sort | "
                    "uniq -c | LC_ALL=C sort -k1,1nr -k2 | sed 's/^ *//' "
                    f"> {q(out)}")
        phrase = f"the number of commits per author on {branch}"
        ranking = "LC_ALL=C sort -k1,1nr -k2 | "

        def shape(items) -> list[str]:
            return [f"{count} {name}" for name, count in items]
    return StepResult(
        output=Report(path=out, phrase=phrase, lines=lines),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, repo.branch, "email" if by_email else "name", out],
                            _AUTHORS),
        checks=[FileText(f"{out} counts commits per author", path=out, expected=lines_text(lines),
                         compare=compare)],
        tools=("git", "sort", "uniq"),
        rules=exercised(
            (differs(shape(by_who), lines, compare),
             Rule("ranking", "that authors are ranked by their number of commits",
                  solution.replace(ranking, ""))),
            (differs(shape(reversed_ties), lines, compare),
             Rule("ties", "that equal counts are ordered by " + ("email" if by_email else
                                                                 "name") + " in byte order",
                  solution.replace(ranking, "LC_ALL=C sort -rn | ")))))


def _revertible(repo: GitRepo, hashes: list[str | None]) -> list[int]:
    """Indexes of commits no later commit builds on (a revert applies without conflict)."""
    found = []
    for index, commit in enumerate(repo.commits[1:], start=1):
        later = {p for c in repo.commits[index + 1:] for p in c.touched()}
        if hashes[index] and not later & set(commit.touched()):
            found.append(index)
    return found


@primitive("git.revert_commit")
def revert_commit(ctx: StepContext, source) -> StepResult:
    """Undo one commit with `git revert`."""
    repo = _repo(source)
    hashes = commit_hashes(repo)
    candidates = _revertible(repo, hashes)
    issues = {index: number for number, index in _unique_issues(repo, hashes)}
    lasts = {index for index in candidates if len(repo.commits[index].files) == 1}

    def earlier(index: int) -> bool:
        """An older commit changed the same file (an oldest-first search picks that one)."""
        path = repo.commits[index].touched()[0]
        return any(path in c.touched() for c in repo.commits[:index])

    # the most recent change of a file changed before, where the "most recent" rule shows
    lasts = {index for index in lasts if earlier(index)} or lasts
    def prefix(index: int) -> bool:
        """The issue number starts a longer one (a plain `--grep=#412` finds two)."""
        return sum(f"#{issues[index]}" in c.message for c in repo.commits) > 1

    named = [i for i in candidates if i in issues]
    choices = [(i, "issue") for i in [i for i in named if prefix(i)] or named]
    choices += [(i, "last") for i in sorted(lasts)]
    if not choices:
        raise NotApplicable("no commit reverts cleanly and can be named")
    index, how = ctx.rng.choice(choices)
    target = repo.commits[index]
    before = tree_at(repo.commits[:index])
    files = tuple((path, before.get(path, "")) for path in target.touched())
    name, email = _identity(ctx)
    message = f'Revert "{_subject(target)}"\n\nThis reverts commit {hashes[index]}.'
    revert = NewCommit(message, name, email, EPOCH_NOW, files)
    after = (*repo.commits, revert)
    branch = repo.branch
    if how == "issue":
        which = f"the commit that references issue #{issues[index]}"
        find = f"{_issue_grep(issues[index])} {q(branch)}"
    else:
        path = target.touched()[0]
        which = f"the most recent commit that changed `{path}`"
        find = f"-1 {q(branch)} -- {q(path)}"
    where = f"branch `{branch}` of {repo.phrase}"
    sentence = ctx.phrase([
        f"On {where}, revert {which} with a new revert commit (keep git's default revert "
        f"message), committing as `{name} <{email}>` (author and committer); leave "
        f"`{branch}` checked out with a clean working tree.",
        f"Undo {which} on {where} by adding a revert commit on top of the branch (do not "
        f"rewrite history; use the default `Revert \"...\"` message). Author and commit it "
        f"as {name} with email {email}, and leave `{branch}` checked out with a clean "
        "working tree.",
        f"{which[0].upper()}{which[1:]} on {where} must be undone: create a revert commit "
        f"with git's standard message as `{name} <{email}>` (author and committer), so the "
        f"branch tip no longer has that change, `{branch}` is checked out and the working "
        "tree is clean.",
    ]) + ctx.hint("git log --grep, then git revert --no-edit" if how == "issue" else
                  "git log -1 -- the file, then git revert --no-edit")
    git = _git(repo)
    solution = "\n".join([
        f"target=$({git} log --format=%H {find})",
        f"{git} checkout -q {q(branch)}",
        f"{git} -c user.name={q(name)} -c user.email={q(email)} revert --no-edit "
        "\"$target\" >/dev/null"])
    wrong: tuple[Rule, ...] = ()
    if how == "issue" and prefix(index):
        plain = f"target=$({git} log --format=%H -F --grep={q('#' + issues[index])} {q(branch)})"
        wrong = (Rule("issue", f"that #{issues[index]} is not the start of a longer issue "
                      "number", "\n".join([plain, *solution.split("\n")[1:]])),)
    if how == "last" and earlier(index):
        path = target.touched()[0]
        oldest = (f"target=$({git} log --reverse --format=%H {q(branch)} -- {q(path)} | "
                  "head -n 1)")
        wrong = (Rule("latest", f"that the most recent commit that changed `{path}` is the "
                      "one to revert", "\n".join([oldest, *solution.split("\n")[1:]])),)
    # Without `git revert`: switch with read-tree, undo the commit's patch with apply -R,
    # write git's default revert message and commit with commit-tree and update-ref.
    who = (f"GIT_AUTHOR_NAME={q(name)} GIT_AUTHOR_EMAIL={q(email)} "
           f"GIT_COMMITTER_NAME={q(name)} GIT_COMMITTER_EMAIL={q(email)}")
    pick = (f"rev-list {_issue_grep(issues[index])} {q(branch)}" if how == "issue"
            else f"rev-list -1 {q(branch)} -- {q(target.touched()[0])}")
    alternative = "\n".join([
        f"target=$({git} {pick})",
        f"{git} update-index -q --refresh || true",
        f"{git} read-tree -u -m HEAD {q(branch)}",
        f"{git} symbolic-ref HEAD {q('refs/heads/' + branch)}",
        f"{git} diff-tree -p --binary --no-commit-id \"$target\" | {git} apply -R --index",
        f"subject=$({git} cat-file commit \"$target\" | sed -n '/^$/{{n;p;q;}}')",
        f"tree=$({git} write-tree)",
        f"tip=$({git} rev-parse --verify {q('refs/heads/' + branch)})",
        "commit=$(printf 'Revert \"%s\"\\n\\nThis reverts commit %s.\\n' \"$subject\" "
        f"\"$target\" |\n  {who} {git} commit-tree \"$tree\" -p \"$tip\")",
        f"{git} update-ref {q('refs/heads/' + branch)} \"$commit\" \"$tip\""])
    output = GitRepo(path=repo.path, phrase=repo.phrase, commits=after, branch=branch)
    # a later step may add commits on top, or check out another branch (a release branch)
    checks = [
        Lineage.of(f"{branch} ends with the revert commit by {name}, on top of its history",
                   output, branch, secret=(_subject(revert),), later=not ctx.final),
        clean_tree(repo.path, *([branch] if ctx.final else [])),
    ]
    for path, content in files:
        if content and ctx.final:  # else the Lineage's tree is these files
            checks.append(GitOutput(f"{path} is back to its earlier content", argv=(
                "git", "-C", repo.path, "show", f"refs/heads/{branch}:{path}"), expected=content,
                compare="exact"))
    return StepResult(
        output=output, instruction=sentence, solution=solution, alternative=alternative,
        checks=checks, tools=("git",), side_effect=True, rules=wrong)


@primitive("git.branch_commit")
def branch_commit(ctx: StepContext, source) -> StepResult:
    """Create a branch, change one file and commit it there."""
    repo = _repo(source)
    state = tree_at(repo.commits)
    version = f"{ctx.rng.randint(1, 4)}.{ctx.rng.randint(0, 12)}.{ctx.rng.randint(0, 9)}"
    kind = ctx.rng.choice(("version", "append", "changelog"))
    if kind == "version":
        path, line = "VERSION", version
        content = f"{line}\n"
        change = f"create the file `{path}` holding the single line `{line}`"
        edit = f"printf '%s\\n' {q(line)} > {q(repo.path + '/' + path)}"
        message = f"Bump version to {version}"
        new = f"release/{version}"
    elif kind == "changelog":
        path = "CHANGELOG.md"
        line = f"- {ctx.rng.choice(ctx.domain.words)} fixes for {version}"
        content = state.get(path, "# Changelog\n") + f"{line}\n"
        change = (f"append the line `{line}` to `{path}`" if path in state else
                  f"create `{path}` with the two lines `# Changelog` and `{line}`")
        edit = (f"printf '%s\\n' {q(line)} >> {q(repo.path + '/' + path)}" if path in state
                else f"printf '%s\\n' '# Changelog' {q(line)} > {q(repo.path + '/' + path)}")
        message = f"Update changelog for {version}"
        new = f"release/{version}"
    else:
        path = ctx.rng.choice(sorted(p for p in state if p.startswith("src/")))
        word = ctx.rng.choice(ctx.domain.words)
        line = f"# TODO({word}): review before {version}"
        content = state[path] + f"{line}\n"
        change = f"append the line `{line}` to `{path}`"
        edit = f"printf '%s\\n' {q(line)} >> {q(repo.path + '/' + path)}"
        message = f"Mark {word} review in {path.rsplit('/', 1)[-1]}"
        new = f"review/{word}-{version.replace('.', '-')}"
    name, email = _identity(ctx)
    commit = NewCommit(message, name, email, EPOCH_NOW, ((path, content),))
    after = (*repo.commits, commit)
    old = repo.branch
    where = f"{repo.phrase}"
    sentence = ctx.phrase([
        f"In {where}, create the branch `{new}` from the tip of `{old}`; on it, {change} and "
        f"commit that with the message `{message}` as `{name} <{email}>`. `{old}` itself "
        "must not change, and the working tree must be left clean.",
        f"Start a branch `{new}` at the current tip of `{old}` in {where}, {change}, and "
        f"commit it (message `{message}`, author and committer {name} <{email}>), leaving "
        f"`{old}` untouched and the working tree clean.",
        f"Prepare a change on a new branch of {where}: branch `{new}` off `{old}`, {change}, "
        f"then commit with the message `{message}` using the identity `{name} <{email}>`. "
        f"Do not commit to `{old}`, and leave no uncommitted changes in the working tree.",
    ]) + ctx.hint("git checkout -b, git add, git -c user.name=... commit")
    git = _git(repo)
    solution = "\n".join([
        f"{git} checkout -q -b {q(new)} {q(old)}", edit,
        f"{git} add -- {q(path)}",
        f"{git} -c user.name={q(name)} -c user.email={q(email)} commit -q -m {q(message)}"])
    # Without checkout and commit: the blob, a scratch index and commit-tree build the commit
    # on top of the old tip, and update-ref creates the branch; the working tree (on
    # whatever branch was checked out) is left as it was, clean.
    lines = [f"printf '%s\\n' {q(line)}"]
    if kind == "changelog" and path not in state:
        lines = [f"printf '%s\\n' '# Changelog' {q(line)}"]
    elif kind != "version":
        lines = [f"{git} cat-file blob \"$tip:\"{q(path)}", *lines]
    who = (f"GIT_AUTHOR_NAME={q(name)} GIT_AUTHOR_EMAIL={q(email)} "
           f"GIT_COMMITTER_NAME={q(name)} GIT_COMMITTER_EMAIL={q(email)}")
    alternative = "\n".join([
        f"tip=$({git} rev-parse --verify {q('refs/heads/' + old)})",
        f"blob=$({{ {'; '.join(lines)}; }} | {git} hash-object -w --stdin)",
        "scratch=$(mktemp -d)",
        f"GIT_INDEX_FILE=\"$scratch/index\" {git} read-tree \"$tip\"",
        f"GIT_INDEX_FILE=\"$scratch/index\" {git} update-index --add --cacheinfo "
        f"\"100644,$blob,\"{q(path)}",
        f"tree=$(GIT_INDEX_FILE=\"$scratch/index\" {git} write-tree)",
        "rm -rf \"$scratch\"",
        f"commit=$({who} {git} commit-tree \"$tree\" -p \"$tip\" -m {q(message)})",
        f"{git} update-ref {q('refs/heads/' + new)} \"$commit\" ''"])
    # the commit made on `old`, and the branch created after it
    on_base = "\n".join([
        f"{git} checkout -q {q(old)}", edit,
        f"{git} add -- {q(path)}",
        f"{git} -c user.name={q(name)} -c user.email={q(email)} commit -q -m {q(message)}",
        f"{git} branch {q(new)}"])
    checks = [
        BranchCommit(f"{new} starts with the new commit on top of {old}", repo=repo.path,
                     base=old, branch=new, subject=message, identity=f"{name} <{email}>",
                     path=path, content=content),
        Lineage.of(f"{old} is unchanged", repo, old),
        clean_tree(repo.path, attached=ctx.final),  # the instruction names no branch
    ]
    output = GitRepo(path=repo.path, phrase=repo.phrase, commits=after, branch=new)
    if ctx.final:  # a later step may add commits on top of the new one
        checks.insert(1, Lineage.of(f"{new} holds the new commit and nothing after it",
                                    output, new))
    return StepResult(
        output=output,
        instruction=sentence, solution=solution, alternative=alternative, checks=checks,
        tools=("git",),
        side_effect=True,
        rules=(Rule("base", f"that `{old}` itself does not change", on_base),))


@primitive("git.file_history")
def file_history(ctx: StepContext, source) -> StepResult:
    """The commits that changed one file, oldest first."""
    repo = _repo(source)
    hashes = commit_hashes(repo)
    present = tree_at(repo.commits)
    touched = Counter(p for c in repo.commits for p in c.touched() if p in present)
    paths = sorted(p for p, n in touched.items() if n >= 2)
    if not paths:
        raise NotApplicable("no file changed more than once")
    path = ctx.rng.choice(paths)
    indexes = [i for i, c in enumerate(repo.commits) if path in c.touched()]
    known = all(hashes[i] for i in indexes)
    formats = [("subject", "%s", "the commit subject")]
    if known:
        formats += [("hash", "%H %s", "the full commit hash, a space, then the subject"),
                    ("date", "%ad %s", "the author date as YYYY-MM-DD, a space, then the "
                                       "subject")]
    kind, fmt, layout = ctx.rng.choice(formats)
    lines = []
    for index in indexes:
        commit = repo.commits[index]
        if kind == "hash":
            lines.append(f"{hashes[index]} {_subject(commit)}")
        elif kind == "date":
            lines.append(f"{day(commit.date)} {_subject(commit)}")
        else:
            lines.append(_subject(commit))
    out = ctx.output_path("history", "txt")
    branch = f"branch `{repo.branch}` of {repo.phrase}"
    sentence = ctx.phrase([
        f"List every commit on {branch} that changed `{path}`, oldest first, in {out}: one "
        f"line per commit with {layout}.",
        f"Write the history of `{path}` on {branch} to {out}, oldest commit first; each line "
        f"is {layout}.",
        f"Which commits of {branch} touched `{path}`? Put them in {out} in chronological "
        f"order (oldest first), one per line, each line being {layout}.",
    ]) + ctx.hint("git log --reverse -- PATH")
    date = " --date=short" if kind == "date" else ""
    solution = (f"{_git(repo)} log --reverse{date} --format={q(fmt)} {q(repo.branch)} -- "
                f"{q(path)} > {q(out)}")
    compare = ctx.compare(order_matters=True)
    wrong = exercised(
        (differs(lines[::-1], lines, compare),
         Rule("order", "that the oldest commit comes first",
              solution.replace(" log --reverse", " log", 1))),
        (len(indexes) < len(repo.commits),
         Rule("path", f"that only the commits that changed `{path}` are listed",
              solution.replace(f" -- {q(path)} >", " >", 1))))
    return StepResult(
        output=Report(path=out, phrase=f"the commits that changed `{path}` on {branch}",
                      lines=tuple(lines)),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, repo.branch, path, kind, out], _HISTORY),
        checks=[FileText(f"{out} lists the history of {path}", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("git",), rules=wrong)


@primitive("git.export_tree")
def export_tree(ctx: StepContext, source) -> StepResult:
    """A snapshot of a branch with git archive."""
    repo = _repo(source)
    state = tree_at(repo.commits)
    fmt = ctx.rng.choice(("tar.gz", "tar.gz", "zip"))
    project = ctx.domain.org.split()[0].lower()
    version = f"{ctx.rng.randint(1, 4)}.{ctx.rng.randint(0, 12)}"
    prefix = f"{project}-{version}/" if ctx.rng.random() < 0.7 and not ctx.hidden else ""
    only_src = ctx.rng.random() < 0.3 and any(p.startswith("src/") for p in state)
    paths = sorted(p for p in state if not only_src or p.startswith("src/"))
    members = tuple((prefix + p, state[p].encode()) for p in paths)
    out = ctx.output_path(f"{project}-{version}", fmt)
    what = "the `src/` folder" if only_src else "all files"
    # the folder stays in the paths: "`src/` under the prefix" alone also reads as its files
    layout = (f"every path inside starting with `{prefix}{'src/' if only_src else ''}`"
              if prefix else "paths inside relative to the repository root (no prefix)")
    branch = f"branch `{repo.branch}` of {repo.phrase}"
    kind = "gzip-compressed tar archive" if fmt == "tar.gz" else "zip archive"
    sentence = ctx.phrase([
        f"Export {what} of the tip of {branch} as a {kind} {out}, with {layout}.",
        f"Make a release snapshot: {out} must be a {kind} of {what} committed at the tip of "
        f"{branch}, {layout}.",
        f"Write a {kind} {out} holding {what} as committed on {branch} (its tip), with "
        f"{layout}; uncommitted or ignored files do not belong in it.",
    ]) + ctx.hint("git archive --prefix")
    option = f" --prefix={q(prefix)}" if prefix else ""
    pathspec = " src" if only_src else ""
    solution = (f"{_git(repo)} archive --format={fmt}{option} -o {q(out)} "
                f"{q(repo.branch)}{pathspec}")
    wrong = exercised(
        (bool(prefix), Rule("prefix", f"that every path starts with `{prefix}`",
                            solution.replace(option, "", 1))),
        (only_src and len(paths) < len(state),
         Rule("folder", "that only the `src/` folder is exported",
              solution.removesuffix(pathspec))))
    return StepResult(
        output=Archive(path=out, phrase=f"a {kind} of {what} at the tip of {branch}",
                       format=fmt, members=members),
        instruction=sentence, solution=solution,
        alternative=ctx.python([repo.path, repo.branch, out, fmt, prefix,
                                "src" if only_src else ""], _EXPORT),
        checks=[ArchiveMembers(f"{out} holds the files of {repo.branch}", path=out, format=fmt,
                               members=tuple((name, hashlib.sha256(data).hexdigest())
                                             for name, data in members))],
        tools=("git",), rules=wrong)
