"""The git source: a repository with a believable history, built at image build time."""

from __future__ import annotations

from taskloom.generators.procedural.artifacts import Commit, GitRepo
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import data_dir
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, World, q

SURNAMES = ("Moreau", "Okafor", "Lindqvist", "Tanaka", "Novak", "Haddad", "Silva",
            "Kowalski", "Mensah", "Ferreira", "Brennan", "Ivanova")


def _tied(who: list[int], people: int, ctx: StepContext) -> list[int]:
    """The commits' author indexes, made to have a tie.

    Commits move from the busiest to the least busy author until two authors have the same
    number of commits (the initial commit is author 0's).
    """
    who = list(who)
    while True:
        counts = [who.count(person) + (person == 0) for person in range(people)]
        if len(set(counts)) < people:
            return who
        busiest, idlest = counts.index(max(counts)), counts.index(min(counts))
        moved = ctx.rng.choice([i for i, person in enumerate(who) if person == busiest])
        who[moved] = idlest


@source("git_repo")
def git_repo(ctx: StepContext) -> GitRepo:
    """A repository with a believable history, built at image build time.

    Authors have full names, and at least two of them made the same number of commits (a
    ranking must break the tie). Most commit subjects reference a unique issue number
    (`(#412)`), many a number that starts a longer one of another commit, before or after
    it (`(#4127)`: a search for `#412` must not stop at the digits; a later commit is more
    often the last to change its file, which a revert needs). Some subjects start with
    their topic capitalized (`Cache: tidy up app.py`), so a search for `cache` is
    case-sensitive. Some commits add a notes file under docs/. Dates, authors and
    committers are fixed, so every commit hash is a function of the generated data.
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
    used: set[int] = set()
    who = _tied([ctx.rng.randrange(len(authors)) for _ in range(count)], len(authors), ctx)
    for number in range(count):
        moment += ctx.rng.randint(3600, 3 * DAY)
        author, email = authors[who[number]]
        noun = ctx.rng.choice(domain.words)
        issue = next(issues)
        # the start of an earlier, longer number
        starts = sorted(u // 10 for u in used if u >= 1000 and u // 10 not in used)
        roll = ctx.rng.random()
        if starts and roll < 0.4:
            issue = ctx.rng.choice(starts)
        elif used and roll < 0.5:  # a longer issue number, an earlier one's prefix
            issue = int(f"{ctx.rng.choice(sorted(used))}{ctx.rng.randint(0, 9)}")
        elif roll > 0.75:  # a longer number whose start no commit has yet taken
            issue = issue * 10 + ctx.rng.randint(0, 9)
        reference = ""
        if ctx.rng.random() < 0.8 and issue not in used:
            reference = f" (#{issue})"
            used.add(issue)
        notes = f"docs/{noun} notes.md" if ctx.difficulty.edge_cases == 3 else f"docs/{noun}.md"
        if number and notes not in state and ctx.rng.random() < 0.15:
            state[notes] = f"# {noun.capitalize()}\n\nNotes on {noun} for {domain.org}.\n"
            commits.append(Commit(f"Add {noun} notes{reference}", author, email, moment,
                                  ((notes, state[notes]),)))
            continue
        path = ctx.rng.choice(sorted(state))
        state[path] = state[path] + f"# {noun} change {number + 1}\n"
        message = f"{ctx.rng.choice(verbs)} {noun} handling in {path.split('/')[-1]}{reference}"
        if ctx.rng.random() < 0.2:
            message = f"{noun.capitalize()}: tidy up {path.split('/')[-1]}{reference}"
        commits.append(Commit(message, author, email, moment, ((path, state[path]),)))
    staging = f"/tmp/taskloom-git/{ctx.step}"
    ctx.world.commands.extend([f"git init -q -b main {q(root)}",
                               *committed(ctx.world, staging, root, commits),
                               f"rm -rf {q(staging)}"])
    return GitRepo(path=root, phrase=f"the git repository `{root}`", commits=tuple(commits))


def committed(world: World, staging: str, root: str, commits: list[Commit]) -> list[str]:
    """Setup lines that commit each of `commits` in the repository `root`, in order.

    Each commit's files are staged in the world under `staging/INDEX/`; its author is also
    its committer, both at its date, so every hash is the one `commit_hashes` computes.
    """
    lines = []
    for index, commit in enumerate(commits):
        for path, content in commit.files:
            world.add(f"{staging}/{index}/{path}", content)
        date = f"@{commit.date} +0000"
        lines.append(
            f"cp -a {q(f'{staging}/{index}')}/. {q(root)}/ && git -C {q(root)} add -A && "
            f"GIT_AUTHOR_NAME={q(commit.author)} GIT_AUTHOR_EMAIL={q(commit.email)} "
            f"GIT_COMMITTER_NAME={q(commit.author)} GIT_COMMITTER_EMAIL={q(commit.email)} "
            f"GIT_AUTHOR_DATE={q(date)} GIT_COMMITTER_DATE={q(date)} "
            f"git -C {q(root)} commit -q -m {q(commit.message)}")
    return lines
