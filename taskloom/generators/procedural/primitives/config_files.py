"""INI configuration primitives: change a setting in place, read one key, export as env.

Files are `[section]` headers and `key = value` lines; lines starting with `#` or `;` are
comments, some of them old settings commented out, which a careless `grep key` picks up.
The same keys appear in every section, so an edit has to be scoped to its section.

An edit is a side effect: its check runs on the final file. The last edit checks the whole
file; an earlier one checks only its setting and the same key in the other sections, which
later edits leave alone (`pinned`).

The stated rules (`Rule`): commented-out settings do not count, an edit stays in its
section, a missing key's `SECTION -` line, the order of the lines, names made of letters,
digits and `_`. Each is declared only where ignoring it changes what the checks see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import ConfigFile, Report, TextFile
from taskloom.generators.procedural.checks import FileText, IniSetting
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
)
from taskloom.generators.procedural.world import lines_text, q

SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
SETTING = re.compile(r"^([A-Za-z0-9_.-]+)\s*=\s*(.*?)\s*$")
COMMENTS = ("In the INI file, lines starting with `#` or `;` are comments (some are old "
            "settings that were commented out) and do not count as settings.")
TRIM = 'gsub(/^[ \\t]+|[ \\t]+$/, "", k); gsub(/^[ \\t]+|[ \\t]+$/, "", v)'
SKIP_COMMENTS = "/^[ \\t]*([;#]|$)/ { next } "
AWK_SETTING = ("/^\\[/ { s = substr($0, 2, length($0) - 2); next } " + SKIP_COMMENTS +
               "{ i = index($0, \"=\"); if (!i) next; k = substr($0, 1, i - 1); "
               f"v = substr($0, i + 1); {TRIM}")


def awk_settings(lines, *, comments: bool = False) -> list[tuple[str, str, str]]:
    """(section, key, value) as AWK_SETTING reads them; `comments`: without SKIP_COMMENTS."""
    found, section = [], ""
    for line in lines:
        if line.startswith("["):
            section = line[1:-1]
            continue
        if not comments and re.match(r"[ \t]*([;#]|$)", line):
            continue
        key, equals, value = line.partition("=")
        if equals:
            found.append((section, key.strip(" \t"), value.strip(" \t")))
    return found


@dataclass(frozen=True, eq=False)
class EditedConfig(ConfigFile):
    """A configuration changed in place; `pinned` settings must keep their values.

    They are the (section, key) pairs an earlier edit's check reads.
    """

    pinned: frozenset = frozenset()


# Line editing in python: the section a line belongs to, comments skipped.
PY_EDIT = r'''
import re
import sys

path, mode, section, key, value = sys.argv[1:]
with open(path, encoding="utf-8", newline="") as handle:
    lines = handle.readlines()
current, last = None, None
for index, line in enumerate(lines):
    header = re.match(r"\s*\[(.*)\]\s*$", line)
    if header:
        current = header.group(1).strip()
        continue
    if current != section or line.lstrip().startswith(("#", ";")):
        continue
    setting = re.match(r"(\s*([^=]*?)\s*=\s*)(.*?)(\s*)$", line)
    if not setting:
        continue
    last = index
    if mode == "set" and setting.group(2) == key:  # only the value changes, spacing kept
        lines[index] = setting.group(1) + value + setting.group(4)
if mode == "add":
    if not lines[last].endswith("\n"):
        lines[last] += "\n"
    lines.insert(last + 1, f"{key} = {value}\n")
with open(path, "w", encoding="utf-8", newline="") as handle:
    handle.write("".join(lines))
'''

# Reading the file with configparser (comments are `#` and `;` lines, keys kept as written).
PY_INI = r'''
import configparser
import sys

config = configparser.ConfigParser(interpolation=None, delimiters=("=",),
                                   comment_prefixes=("#", ";"))
config.optionxform = str
with open(sys.argv[1], encoding="utf-8") as handle:
    config.read_file(handle)
'''


def settings(lines: tuple[str, ...]) -> list[tuple[int, str, str, str]]:
    """(line index, section, key, value) of every setting, in file order."""
    found = []
    section = ""
    for index, line in enumerate(lines):
        header = SECTION.match(line)
        if header:
            section = header.group(1)
            continue
        if line.lstrip().startswith(("#", ";")):
            continue
        setting = SETTING.match(line)
        if setting and section:
            found.append((index, section, setting.group(1), setting.group(2)))
    return found


def _config(source) -> ConfigFile:
    if not isinstance(source, ConfigFile) or not settings(source.lines):
        raise NotApplicable("needs an INI file with settings")
    return source


def _sections(lines: tuple[str, ...]) -> list[str]:
    return [m.group(1) for m in map(SECTION.match, lines) if m]


def _bre(text: str) -> str:
    """Text as a literal in a sed basic regular expression."""
    return re.sub(r"([.\[\]*^$\\/])", r"\\\1", text)


def _sed_set(lines, key: str, value: str, section: str | None = None, *,
             anchored: bool = True) -> list[str]:
    r"""What `sed 's/^KEY *=.*/KEY = VALUE/'` makes of the lines.

    With a section, only in `/^\[SECTION\]/,/^\[/` (its header to the next header);
    `anchored` False drops the `^`, so commented-out settings (`# port = 80`) change too.
    """
    pattern = re.compile(("^" if anchored else "") + re.escape(key) + " *=.*")
    out, inside = list(lines), section is None
    for index, line in enumerate(lines):
        if section is not None:
            if not inside:
                if not line.startswith(f"[{section}]"):
                    continue
                inside = True
            elif line.startswith("["):
                inside = False
        out[index] = pattern.sub(lambda _: f"{key} = {value}", line, count=1)
    return out


def _new_value(ctx: StepContext, key: str, old: str) -> str:
    while True:
        value = {"port": lambda: str(ctx.rng.randint(2000, 9999)),
                 "workers": lambda: str(ctx.rng.randint(1, 32)),
                 "log_level": lambda: ctx.rng.choice(("debug", "info", "warn", "error")),
                 "enabled": lambda: ctx.rng.choice(("true", "false")),
                 }.get(key, lambda: str(ctx.rng.randint(100, 9000)))()
        if value != old:
            return value


@primitive("config.set_value")
def set_value(ctx: StepContext, source) -> StepResult:
    """Set one key of one section in place."""
    config = _config(source)
    found = settings(config.lines)
    pinned = config.pinned if isinstance(config, EditedConfig) else frozenset()
    editable = [s for s in found if s[2] in ("port", "workers", "log_level", "enabled",
                                             "timeout_ms") and (s[1], s[2]) not in pinned]
    sections = _sections(config.lines)
    missing = [(section, "timeout_ms") for section in sections
               if not any(s[1] == section and s[2] == "timeout_ms" for s in found)]
    add = bool(missing) and (not editable or ctx.rng.random() < 0.35)
    lines = list(config.lines)
    path = q(config.path)
    if add:
        section, key = ctx.rng.choice(missing)
        value = _new_value(ctx, key, "")
        last = max(s[0] for s in found if s[1] == section)
        lines.insert(last + 1, f"{key} = {value}")
        mode = "add"
        what = (f"add the setting `{key}` with the value `{value}` to the `{section}` section, "
                "in the same `key = value` style as the other settings, on a new line right "
                "after the last setting of that section")
        solution = (
            f"tmp=$(mktemp)\nawk -v s={q(section)} -v add={q(f'{key} = {value}')} "
            "'FNR == NR { if ($0 ~ /^\\[/) cur = substr($0, 2, length($0) - 2); "
            "else if (cur == s && $0 ~ /^[A-Za-z0-9_.-]+[ \\t]*=/) last = FNR; next } "
            f"{{ print }} FNR == last {{ print add }}' {path} {path} > \"$tmp\"\n"
            f"cat \"$tmp\" > {path} && rm -f \"$tmp\"")
        hint = "awk, reading the file twice"
    else:
        if not editable:
            raise NotApplicable("no setting to change")
        # one with an old value commented out in its section, where the last edit shows it
        telling = [s for s in editable if ctx.final and _sed_set(
            config.lines, s[2], "?", s[1], anchored=False) != _sed_set(
            config.lines, s[2], "?", s[1])]
        index, section, key, old = ctx.rng.choice(telling or editable)
        value = _new_value(ctx, key, old)
        lines[index] = f"{key} = {value}"
        mode = "set"
        what = (f"set `{key}` in the `{section}` section to `{value}`, keeping the "
                "`key = value` layout of the line")
        solution = (f"sed -i '/^\\[{_bre(section)}\\]/,/^\\[/ s/^{_bre(key)} *=.*/"
                    f"{key} = {value}/' {path}")
        hint = "sed with a /start/,/end/ address range"
    others = "the same key in other sections" if not add else "the other sections"
    sentence = ctx.phrase([
        f"Edit {config.phrase} in place: {what}. Leave every other line, {others} included, "
        "exactly as it is.",
        f"In {config.phrase}, {what}; nothing else in the file may change (not {others}, "
        "not the comments).",
        f"Update {config.phrase}: {what}. Make no other change to the file: {others}, "
        "comments and blank lines stay byte for byte.",
    ]) + ctx.hint(hint)
    entries = tuple((s, k, v) for _, s, k, v in settings(tuple(lines)))
    compare = "exact" if ctx.difficulty.strictness == 3 else "lines"
    kept = []  # the same key in other sections, where a file-wide edit would change it
    if ctx.final:
        checks: list = [FileText(f"{config.path} has the new setting", path=config.path,
                                 expected=lines_text(lines), compare=compare)]
    else:  # a later edit changes other lines: only this key stays as this step left it
        checks = [IniSetting(f"{config.path} has the new setting", path=config.path,
                             section=section, key=key, expected=value)]
        if not add:
            kept = [(other, v) for _, other, k, v in found
                    if k == key and other != section and v != value]
            checks += [IniSetting(f"`{key}` of [{other}] in {config.path} is unchanged",
                                  path=config.path, section=other, key=key, expected=v)
                       for other, v in kept]
    sed = f"sed -i 's/^{_bre(key)} *=.*/{key} = {value}/' {path}"
    after_header = f"sed -i '/^\\[{_bre(section)}\\]/a {key} = {value}' {path}"
    header = next(i for i, line in enumerate(config.lines) if line.startswith(f"[{section}]"))
    wrong = exercised(
        (not add and (bool(kept) or (ctx.final and differs(
            _sed_set(config.lines, key, value), lines, compare))),
         Rule("section", f"that only `{key}` of the `{section}` section changes", sed)),
        (not add and ctx.final and differs(
            _sed_set(config.lines, key, value, section, anchored=False), lines, compare),
         Rule("comments", "that commented-out settings are not settings",
              solution.replace(f"s/^{_bre(key)}", f"s/{_bre(key)}"))),
        (add and ctx.final and differs(
            [*config.lines[:header + 1], f"{key} = {value}", *config.lines[header + 1:]],
            lines, compare),
         Rule("position", f"that the new line goes after the last setting of `{section}`",
              after_header)))
    return StepResult(
        output=EditedConfig(path=config.path, phrase=f"{config.phrase} (after the change)",
                            lines=tuple(lines), entries=entries,
                            pinned=pinned | {(section, key)} | {(o, key) for o, _ in kept}),
        instruction=sentence, solution=solution,
        # python: the lines of the section edited in a list and written back in place
        alternative=ctx.python([config.path, mode, section, key, value], PY_EDIT),
        checks=checks,
        tools=("sed",) if not add else ("awk",), notes=(COMMENTS,), side_effect=True,
        rules=wrong)


@primitive("config.extract_values")
def extract_values(ctx: StepContext, source) -> StepResult:
    """One key's value in every section."""
    config = _config(source)
    found = settings(config.lines)
    sections = _sections(config.lines)
    keys = sorted({k for _, _, k, _ in found if sum(s[2] == k for s in found) >= 2})
    if not keys:
        raise NotApplicable("no key is set in several sections")

    def grepped(key: str, mode: str) -> list[str]:
        """The lines of an awk that matches the key as a pattern, comments not skipped."""
        rows = [(s, v) for s, k, v in awk_settings(config.lines, comments=True)
                if re.search(key, k)]
        if mode == "dash":
            rows = [row for section in sections
                    for row in ([r for r in rows if r[0] == section] or [(section, "-")])]
        text = [f"{s} {v}" for s, v in rows]
        return sorted(text, key=str.encode) if mode == "sorted" else text

    # a key with an old value commented out, where the comment rule shows
    telling = [k for k in keys if grepped(k, "file") != grepped(f"^{re.escape(k)}$", "file")]
    key = ctx.rng.choice(telling or keys)
    values = {s: v for _, s, k, v in found if k == key}
    gaps = len(values) < len(sections)
    mode = ctx.rng.choice(["file", "sorted"] + (["dash"] if gaps else []))
    if mode == "dash":
        pairs = [(s, values.get(s, "-")) for s in sections]
    else:
        pairs = [(s, values[s]) for s in sections if s in values]
    pairs_in_file = list(pairs)
    if mode == "sorted":
        pairs.sort(key=lambda pair: pair[0].encode())
    lines = tuple(f"{s} {v}" for s, v in pairs)
    out = ctx.output_path(f"{key}-by-section", "txt")
    order = ("sorted by section name in byte order" if mode == "sorted" else
             "in the order the sections appear in the file")
    missing = ("; a section without the key gets the line `SECTION -`" if mode == "dash" else
               "; sections without the key are left out")
    sentence = ctx.phrase([
        f"Read the value of `{key}` in every section of {config.phrase} and write "
        f"`SECTION VALUE` lines to {out}, {order}{missing}.",
        f"Write to {out} one `SECTION VALUE` line per section of {config.phrase} giving that "
        f"section's `{key}` setting, {order}{missing}.",
        f"List the `{key}` setting of each section of {config.phrase} in {out} as `SECTION "
        f"VALUE` (section name without brackets, one space, the value), {order}{missing}.",
    ]) + ctx.hint("awk tracking the current [section]")
    if mode == "dash":
        program = ("/^\\[/ { if (s != \"\" && !f) print s, \"-\"; "
                   "s = substr($0, 2, length($0) - 2); f = 0; next } "
                   "/^[ \\t]*([;#]|$)/ { next } { i = index($0, \"=\"); if (!i) next; "
                   f"k = substr($0, 1, i - 1); v = substr($0, i + 1); {TRIM}; "
                   "if (k == key) { print s, v; f = 1 } } "
                   "END { if (s != \"\" && !f) print s, \"-\" }")
    else:
        program = f"{AWK_SETTING}; if (k == key) print s, v }}"
    sort = " | LC_ALL=C sort" if mode == "sorted" else ""
    solution = f"awk -v key={q(key)} '{program}' {q(config.path)}{sort} > {q(out)}"
    compare = ctx.compare(order_matters=True)
    plain = [f"{s} {v}" for s, v in pairs if v != "-" or s in values]
    wrong = exercised(
        (differs(grepped(key, mode), lines, compare),
         Rule("comments", "that commented-out settings do not count",
              f"awk -v key={q(key)} "
              f"'{program.replace(SKIP_COMMENTS, '').replace('k == key', 'k ~ key')}' "
              f"{q(config.path)}{sort} > {q(out)}")),
        (differs([f"{s} {v}" for s, v in pairs_in_file] if mode == "sorted" else
                 sorted(lines, key=str.encode), lines, compare),
         Rule("order", "that the lines are " + ("sorted by section" if mode == "sorted" else
                                                "in the order of the file"),
              f"awk -v key={q(key)} '{program}' {q(config.path)}"
              f"{'' if sort else ' | LC_ALL=C sort'} > {q(out)}")),
        (mode == "dash" and differs(plain, lines, compare),
         Rule("missing", "that a section without the key gets a `SECTION -` line",
              f"awk -v key={q(key)} '{AWK_SETTING}; if (k == key) print s, v }}' "
              f"{q(config.path)} > {q(out)}")))
    alternative = ctx.python([config.path, out, key, mode], r'''
out, key, mode = sys.argv[2:]
names = config.sections()
if mode == "sorted":
    names.sort()
lines = [f"{name} {config[name].get(key, '-')}" for name in names
         if mode == "dash" or key in config[name]]
with open(out, "w", encoding="utf-8") as handle:
    handle.write("\n".join(lines) + END)
''', prelude=PY_INI)
    return StepResult(
        output=Report(path=out, phrase=f"the `{key}` setting of every section of "
                      f"{config.phrase}", lines=lines),
        instruction=sentence, solution=solution,
        # python's configparser
        alternative=alternative,
        checks=[FileText(f"{out} lists {key} per section", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("awk",) + (("sort",) if sort else ()), notes=(COMMENTS,), rules=wrong)


@primitive("config.to_env")
def to_env(ctx: StepContext, source) -> StepResult:
    """Every setting as an environment variable line."""
    config = _config(source)
    found = settings(config.lines)
    prefix = ctx.rng.choice(["", "", f"{ctx.domain.name.upper()}_", "APP_"])
    exported = ctx.rng.random() < 0.4

    def name(section: str, key: str, *, clean: bool = True) -> str:
        raw = f"{prefix}{section}_{key}".upper()
        return re.sub(r"[^A-Z0-9]", "_", raw) if clean else raw

    def env(settings, *, clean: bool = True) -> tuple[str, ...]:
        return tuple(f'export {name(s, k, clean=clean)}="{v}"' if exported else
                     f"{name(s, k, clean=clean)}={v}" for s, k, v in settings)

    lines = env((s, k, v) for _, s, k, v in found)
    out = ctx.output_path(config.path.rsplit("/", 1)[-1].rsplit(".", 1)[0], "env")
    naming = (f"`{prefix}SECTION_KEY`" if prefix else "`SECTION_KEY`") + (
        " in upper case, every character that is not a letter or digit replaced by `_`")
    shape = ("`export NAME=\"value\"` (value in double quotes)" if exported else
             "`NAME=value` (the value exactly as in the file, unquoted)")
    sentence = ctx.phrase([
        f"Convert every setting of {config.phrase} into a line {shape} in {out}, where NAME "
        f"is {naming}; keep the order of the file.",
        f"Write the env file {out}: one line {shape} per `key = value` setting of "
        f"{config.phrase}, in file order, with NAME built as {naming}.",
        f"Export the settings of {config.phrase} to {out} as {shape} lines (NAME = {naming}), "
        "one per setting, in the order they appear.",
    ]) + ctx.hint("awk with toupper() and gsub()")
    value = "\"export \" n \"=\\\"\" v \"\\\"\"" if exported else "n \"=\" v"
    program = (f"{AWK_SETTING}; n = toupper(p s \"_\" k); gsub(/[^A-Z0-9]/, \"_\", n); "
               f"print {value} }}")
    solution = f"awk -v p={q(prefix)} '{program}' {q(config.path)} > {q(out)}"
    compare = ctx.compare(order_matters=True)
    wrong = exercised(
        (differs(env(awk_settings(config.lines, comments=True)), lines, compare),
         Rule("comments", "that commented-out settings are not exported",
              solution.replace(SKIP_COMMENTS, ""))),
        (differs(env(awk_settings(config.lines), clean=False), lines, compare),
         Rule("names", "that characters other than letters and digits in a name become `_`",
              solution.replace('gsub(/[^A-Z0-9]/, "_", n); ', ""))))
    alternative = ctx.python([config.path, out, prefix, "quoted" if exported else "plain"],
                             r'''
out, prefix, shape = sys.argv[2:]
lines = []
for section in config.sections():
    for key, value in config[section].items():
        name = "".join(c if c.isascii() and c.isalnum() else "_"
                       for c in f"{prefix}{section}_{key}".upper())
        lines.append(f'export {name}="{value}"' if shape == "quoted" else f"{name}={value}")
with open(out, "w", encoding="utf-8") as handle:
    handle.write("\n".join(lines) + END)
''', prelude=PY_INI)
    return StepResult(
        output=TextFile(path=out, phrase=f"the settings of {config.phrase} as environment "
                        "variables", lines=lines),
        instruction=sentence, solution=solution,
        # python's configparser
        alternative=alternative,
        checks=[FileText(f"{out} holds every setting", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("awk",), notes=(COMMENTS,), rules=wrong)
