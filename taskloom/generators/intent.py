"""A request in words → intent atoms → the skill path that covers them, offline.

A request is cut into actions in the order they must happen ("load the CSV into SQLite,
then report totals per region"; "report the totals after loading the CSV" is the same
order). A clause that adds no work goes with the action it is about: what was done before
("I copied /srv to /mnt; tell me what differs"), how the result must be ("they should be
deleted, not listed", "and report them in groups"). Each action has the formats it reads
and writes (`from` and `to`: "turn the YAML export into CSV" is YAML → CSV, never the other
way round) and its constraints ("keep 5", "skipping drafts", "larger than 10 MB"). Each
action is matched to the skills by the sentence embedding of its words against every
skill's texts (name, description and the everyday phrases of the graph) plus the rare words
they share (`SkillTexts`), adjusted by the formats: a skill that writes the target format
gains, one that reads it loses. The path is the best-scoring choice of one skill
per action whose consecutive skills chain in the graph; an action no skill matches well
enough, or one that names a format taskloom cannot make, stays uncovered, and the caller
decides (`make` writes nothing unless told `--best-effort`).

Requests that reach outside a sandbox (the network, real hosts) or ask for harm are
refused before any matching, with the reason.

Example:
    >>> intent = parse_intent("convert the JSON readings to CSV, then sort by time",
    ...                       graph, embedder)                       # doctest: +SKIP
    >>> intent.path                                                   # doctest: +SKIP
    ('json.to_csv', 'csv.sort_rows')
"""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING

from pydantic import Field

from taskloom.embedding import Embedder, embed_cached
from taskloom.errors import NoMatch
from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph

if TYPE_CHECKING:
    import numpy as np

NO_MATCH_FIX = ("name what the agent must do with files, logs, CSV/JSON, archives, checksums, "
                "SQLite, git, permissions, cron, config files, code, local services, "
                "statistics or calendars (`taskloom graph list skills` lists them)")
REFUSAL_FIX = ("ask for work on files, logs, data, archives, git, permissions, cron, config, "
               "code or local services inside the task's own environment")
MIN_ACTION_SCORE = 0.36  # an action's best skill scores below this: not covered
ELABORATION_WORDS = 4  # a short clause after an action, matching no skill, says more of it
CANDIDATES = 6  # skills per action considered when choosing a chaining path
TARGET_BONUS = 0.12  # the skill writes the format the action turns its input into
SOURCE_BONUS = 0.06  # the skill reads the format the action names as its input
REVERSED = 0.15  # the skill goes the other way (reads the target, writes the source)
TARGET_MISS = 0.06  # the action names what it makes, and the skill makes something else
SUBSTITUTE = 0.3  # a skill this far below an action's best does not cover it (_best_path)
CUE_BONUS = 0.08  # the action names the skill's own operation (see CUES)
TOOL_BONUS = 0.05  # a tool the user named (awk, jq, git...) and the skill uses
WORD_WEIGHT = 0.15  # weight of the shared words (SkillTexts.words) beside the embedding

# Words for the artifact types of the graph, most specific first; `None`: a format no
# skill reads or writes.
FORMAT_WORDS: tuple[tuple[str, str | None], ...] = (
    (r"access[-_ ]logs?|nginx|apache|web[- ]server logs?|http logs?|request logs?", "access_log"),
    (r"(?:ya?ml|xml|xlsx|excel|parquet|pdf|toml|html|markdown|protobuf|avro|helm|"
     r"postgres(?:ql)?|mysql|mariadb|mongo(?:db)?|redis|elasticsearch|"
     r"kubernetes|k8s|dockerfile|docker images?|terraform|ansible|systemd)s?|"
     r"(?:photos?|images?|pictures?|videos?|audio|mp3|mp4)(?= (?:by|\d|to|so|90|180))",
     None),
    (r"csv|spreadsheet export|comma[- ]separated|tsv", "csv_table"),
    (r"json|jq", "json_doc"),
    (r"sqlite3?|database|\bdb\b|sql", "sqlite_db"),
    (r"tar(?:ball)?s?|\.tar\.gz|tgz|archives?|zip(?:file)?s?", "archive"),
    (r"ini(?: file)?|config(?:uration)? files?|settings files?", "config_file"),
    (r"crontab|cron", "crontab_file"),
    (r"git|repo(?:sitory)?|commits?", "git_repo"),
    (r"manifest|checksums?|sha-?256|md5", "checksum_list"),
    (r"(?:app(?:lication)?|service) logs?|logs?", "log_file"),
)
_FORMAT = re.compile("|".join(f"(?P<f{i}>(?<![\\w-])(?:{words})(?![\\w-]))"
                              for i, (words, _) in enumerate(FORMAT_WORDS)), re.I)
# An extension as a kind of file in a tree (".xlsx", "*.pdf", "pdf/"), not a format to read:
# the text before the format word ends in "." or "*." after a non-word character.
_EXTENSION_BEFORE = re.compile(r"(?:^|[^\w.])\*?\.\Z")
# After a "/", a format word names a folder ("/etc/nginx"), except a log file's own name
# ("/var/log/httpd/access_log").
_LOG_FILE = re.compile(r"access[-_]logs?", re.I)
# A list in brackets names the kinds of file the work touches ("in every config (ini, yaml,
# .env, the systemd unit)"), not formats read or written, nor work of its own.
_LISTED = re.compile(r"\([^()]*,[^()]*\)")
# Who will open the result, not its format: "a CSV for Excel", "so finance can open it in
# Excel" (an Excel workbook, "to xlsx", stays a format no skill writes).
_QUOTED = re.compile(r"(?<!\w)'[^']+'(?!\w)|\"[^\"]+\"")
_READER = re.compile(r"\b(?:for|in|with|using)\s+(?:ms\s+|microsoft\s+)?excel\b|"
                     r"\bexcel\s+(?:can|will|could)\s+(?:open|read)\b", re.I)
# Before a format it writes: "into CSV", "as JSON", "make a tar.gz of", "write a manifest".
_TO = re.compile(r"(?:\b(?:(?<!according )to|into|as|make|made|makes|create|created|creates|build|"
                 r"built|builds|write|wrote|written|writes|produce|produced|produces|generate|"
                 r"generated|generates|give me|need|want|bundle|bundled|pack|packed)\s+"
                 r"(?:an?\s+|the\s+|one\s+|proper\s+|plain\s+|new\s+)?(?:\w+\s+)?"
                 r"(?:[\w/-][\w./-]*\.)?)$", re.I)  # "into site-1.2.tar.gz": a file name's stem

# Verbs that start an action; a clause is cut before one of them after "and" or a comma.
VERBS = frozenset((
    "add", "aggregate", "append", "archive", "audit", "back", "backup", "bundle", "calculate",
    "change", "check", "chmod", "chown", "clean", "collect", "combine", "commit", "compare",
    "compress", "compute", "convert", "copy", "count", "create", "cut", "dedupe",
    "deduplicate", "delete", "drop", "dump", "export", "extract", "fetch", "filter", "find",
    "fix", "flag", "flatten", "generate", "get", "give", "grab", "group", "gzip", "hand",
    "identify", "import", "install", "keep", "list", "load", "locate", "make", "merge",
    "mirror", "move", "normalize", "order", "output", "pack", "parse", "pick", "prune", "pull",
    "put", "rank", "read", "record", "remove", "rename", "reorder", "replace", "report",
    "reshape", "restore", "retain", "revert", "rewrite", "rotate", "run", "save", "schedule",
    "select", "set", "show", "sort", "split", "strip", "substitute", "sum", "summarize",
    "swap", "tally", "tar", "tidy", "total", "transform", "trim", "turn", "undo", "unpack",
    "unzip", "update", "verify", "write", "zip",
))
_SEQUENCE = re.compile(r"\s*(?:[;,]?\s*(?:and\s+)?(?:after\s+that|once\s+(?:that|it|this)(?:'s|"
                       r"\s+is|\s+has\s+finished)(?:\s+done)?|when\s+(?:that|it)(?:'s|\s+is)"
                       r"\s+done),?\s+|;|,?\s+and\s+then,?\s+|,?\s+then,?\s+|"
                       r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)\.\s+(?:then\s+)?|\s+(?:—|–|--)\s+|"
                       r",?\s+and\s+afterwards\s+|,?\s+followed\s+by\s+|"
                       r",?\s+and\s+finally\s+|,\s*finally,?\s+|,?\s+next,?\s+(?!to\b))\s*", re.I)
_AND = re.compile(r"\s*(?:,\s*and\s+|\s+and\s+|,\s+|\s+plus\s+|\s+also\s+)(?=(\w+))", re.I)
_AFTER = re.compile(r"\s*,?\s*\b(after|once|before)\s+", re.I)
_FIRST = re.compile(r"\s*,?\s*but\s+first\s+", re.I)
_TASK = (r"(?:task|exercise|environment|scenario|challenge|job|drill|lab|problem|puzzle|"
         r"assignment)s?\b")
# who is asked to do the task
_ROLE = (r"(?:agent|user|someone|model|person|candidate|trainee|learner|solver|player|participant|"
         r"student|engineer|admin|operator)")
_PREAMBLE = re.compile(
    r"^\s*(?:(?:please|hey|ok|so)[,!]?\s+)?"
    r"(?:(?:can|could|would|will)\s+you\s+|i\s+(?:need|want|would like)\s+|let'?s\s+|"
    rf"(?:can|could|would|will)\s+(?=(?:(?:the|an?|our|my)\s+)?{_ROLE}\b))?"
    r"(?:(?:(?:make|create|build|generate|give|set up|write|prepare|design)\s+(?:me\s+|us\s+)?)?"
    rf"(?:(?:an?|one|some)\s+(?:\w+\s+)?{_TASK}\s*(?:where|in which|that|for|to|:|-|,)?|"
    rf"{_TASK}\s*[:,-])"
    r"\s*)?"
    rf"(?:(?:(?:the|an?|our|my)\s+)?{_ROLE}|they|you)?\s*"
    r"(?:must|has to|have to|should|needs? to|will|is asked to|gets? to|can)?\s*[:,-]?\s*",
    re.I)
_TASK_WORDS = re.compile(rf"\b{_TASK}", re.I)
# "agent should print ...": the one asked, mid-request
_ASKED = re.compile(rf"\b{_ROLE}\s+(?:must|has to|should|needs? to|is asked to)\s*[:,-]?\s*$",
                    re.I)
# "..., keeping the subfolders": how the action before is done
_MANNER = re.compile(r"(?:keeping|leaving|preserving|retaining|excluding|skipping|ignoring|"
                     r"without|but not|except)\b", re.I)
# "from prices.csv, report ...": where the action happens, not an action of its own
_SETTING = re.compile(r"(?:from|in|on|for|using|with|inside|within|at)\s+[^,]*\Z", re.I)
_ON_WHAT_CAME_BEFORE = re.compile(r"\w+\s+(?:them|it|those|these|the results?|the rest)\s*$",
                                  re.I)
# "I copied ...", "we have checksums for ...", "our intern uploaded ...": the state before
_BACKSTORY = re.compile(r"^(?:(?:i|we)\s+(?:teach|run|manage|maintain|work|host|own|"
                        r"grade|mentor|lead|support|operate)\b|"
                        r"(?:i'm|i am|we're|we are|they're)\s+\w+ing\b|(?:i|we|they|"
                        r"someone|somebody|there|(?:our|my|the|this|a|an)\s+"
                        r"(?:[\w./-]+\s+){0,3}?[\w./-]+|\w+)\s+(?:am|have|has|had|\w+ed|was|"
                        r"were|is|are|got|left|put|ran|made|keep|keeps|wrote|sent|comes?|"
                        r"may have|might have|here)\b(?!\s+to\b))", re.I)
# "Make that a task.", "Can you make that an exercise?", "exercise pls": the request's frame
_FRAME = re.compile(rf"^(?:(?:[\w']+\s+){{0,6}}(?:that|this|it|around that|around this)\s+"
                    rf"(?:[\w']+\s+){{0,3}}(?:as\s+|into\s+)?(?:an?\s+)?(?:\w+\s+)?{_TASK}|"
                    rf"(?:an?\s+)?{_TASK})\W*(?:pls|please|thanks)?\W*$", re.I)
# "they should be deleted", "the output must ...", "and report them in clusters", "save the
# result as x.csv": how the result of the action before must be, not more work
_SAYS_MORE = re.compile(r"^(?:(?:they|it|this|that|these|those|the\s+\w+)\s+(?:should|must|"
                        r"need|needs|has to|have to|is to|are to|will|ought|stays?|remains?|"
                        r"can't|cannot|may not)\b|(?:e\.g|i\.e|for example|such as|like)\b|"
                        r"(?:nothing|none|neither)\b|"
                        r"(?:the\s+)?(?:header(?:\s+row)?|output|result|format|order)\s+(?:is\s+|are\s+)?"
                        r"(?:included|kept|stays?|remains?|still|unchanged|intact|preserved)\b|"
                        r"['\"][^'\"]+['\"]\s*(?:->|=>|→)|(?:report|output|print|show|list|write|"
                        r"save|store|display|return|put|emit|give)\w*\s+(?:out\s+)?(?:them|it|"
                        r"that|this|those|these|(?:its|their)\s+\w+|the\s+(?:result|output|list|matches|names|"
                        r"values)s?)\b(?!\s+of\b)|(?:no|not|never|don't|do not|without)\b|"
                        r"(?:the\s+)?expected output\b|"
                        r"(?:\w+\s+){0,3}(?:looks? like|should look like)\b|"
                        # what was built, tried: "query it", "check that it answers"
                        r"(?:query|curl|probe|hit)\s+(?:it|them|each(?:\s+one)?|both)\b|"
                        r"check\s+that\s+(?:it|they)\s+(?:answer|respond|repl|work|serve)\w*|"
                        # a service's own start script
                        r"(?:write|create|add)\s+(?:its\s+|the\s+|a\s+)?(?:start(?:up)?[- ]?"
                        r"script|start\.sh|launcher)\b)", re.I)
# "only that one key may change", "comments stay identical": a statement, not an action
_MODAL = re.compile(r"^(?:\w+\s+){0,5}?(?:should|must|may|can't|cannot|stays?|remains?|"
                    r"needs? to|has to|have to|is to|are to)\b", re.I)
_SUBJECT = re.compile(r"^(?:you've|you have|you|we've|we have|we|they've|they|it's|it is)\s+",
                      re.I)
CONSTRAINTS = (
    ("count", re.compile(r"\b(?:keep(?:ing)?|retain(?:ing)?|top|last|newest|first|best|"
                         r"biggest|largest)\s+(?:the\s+|only\s+)?(?:(?:newest|latest|last|"
                         r"most recent|recent|top)\s+)?(\d+|one|two|three|four|five|six|"
                         r"seven|eight|nine|ten|twelve|twenty)\b", re.I)),
    ("exclude", re.compile(r"\b(?:skip(?:ping)?|exclud(?:e|ing)|except(?:\s+for)?|but not|"
                           r"leav(?:e|ing) out|ignor(?:e|ing)|without)\s+(?:the\s+|any\s+)?"
                           r"([\w.*-]+(?:\s+[\w.*-]+)?)", re.I)),
    ("threshold", re.compile(r"\b(?:older|newer|larger|bigger|smaller|more|less|fewer|"
                             r"greater)\s+than\s+([\w.]+(?:\s+\w+)?)", re.I)),
    ("order", re.compile(r"\b(?:sorted|ordered|ranked|oldest first|newest first|largest "
                         r"first|by time|alphabetical(?:ly)?)\b(?:\s+by\s+(\w+))?", re.I)),
)

# Words too common in requests and skill texts to tell skills apart.
_COMMON = frozenset((
    "a", "all", "an", "and", "any", "are", "as", "at", "be", "by", "each", "every", "file",
    "files", "for", "from", "give", "in", "into", "is", "it", "its", "make", "me", "my",
    "need", "of", "on", "one", "or", "our", "please", "so", "some", "that", "the", "their",
    "them", "then", "there", "these", "this", "those", "to", "want", "we", "what", "when",
    "where", "which", "who", "with", "agent", "someone", "user", "task", "exercise",
    "environment",
))
_WORD = re.compile(r"[a-z][a-z0-9]+")

# Words that name an operation outright, which a sentence embedding weighs little against
# the nouns around them ("set the stock of discontinued items to 0" reads like deleting).
CUES: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = (
    (re.compile(r"\b(?:keep|select|only|just|drop|remove|pick)\b.*\bcolumns\b", re.I),
     ("csv.select_columns",)),
    (re.compile(r"^(?=.*\b(?:csv|tsv|spreadsheet|table)\b).*\b(?:keep|select|only|just|pick|"
                r"retain)\s+(?:only\s+)?(?:the\s+)?[\w-]+,\s+[\w-]+(?:,\s+[\w-]+)*,?\s+and\s+"
                r"[\w-]+|\bin that order\b", re.I), ("csv.select_columns",)),
    (re.compile(r"\b(?:set|mark|change|raise|bump|increase|decrease|correct|flag)\b", re.I),
     ("sqlite.update_rows",)),
    (re.compile(r"\b(?:delete|remove|purge|drop)\b.*\b(?:rows|records|entries)\b", re.I),
     ("sqlite.delete_rows",)),
    (re.compile(r"\b(?:top|slowest|fastest|largest|biggest|highest|lowest|smallest|"
                r"cheapest|most expensive)\s+\d+\b|\b\d+\s+(?:slowest|fastest|largest|"
                r"biggest|highest|lowest|smallest|cheapest|most expensive)\b", re.I),
     ("csv.top_n",)),
    (re.compile(r"\b(?:5\d\d|5xx)s?\b", re.I), ("logs.failing_paths",)),
    (re.compile(r"\b(?:first|top|last|bottom|final)\s+(?:\d+|one|two|three|four|five|ten)\s+"
                r"lines?\b", re.I), ("text.head_tail",)),
    (re.compile(r"\b(?:per|by|each)\s+(?:http\s+)?(?:response|status)(?:\s+codes?)?\b", re.I),
     ("logs.status_summary",)),
    # a condition on a value: "with an amount over 1000", "priced below 5"
    (re.compile(r"\b(?:over|above|below|under|more than|less than|at least|at most|"
                r"greater than)\s+\$?\d(?![\d.]*\s*(?:standard|std|sds?\b|sigmas?\b|σ|times the))",
                re.I), ("csv.filter_rows", "json.filter_records")),
    (re.compile(r"\boutliers?\b|\b(?:more than|beyond|outside|over|further than|at least)\s+"
                r"[\d.]+\s*(?:standard deviations?|std\.?\s*devs?|sds?\b|sigmas?\b|σ)|\btukey\b|"
                r"\biqr\b|\bz-?scores?\b", re.I), ("stats.flag_outliers",)),
    # an env file named, and (a second cue) its lines shown: "like DATABASE_HOST=db1"
    (re.compile(r"\b(?:env|dotenv|environment|shell)\s+(?:files?|variables?|vars)\b|\.env\b"),
     ("config.to_env",)),
    (re.compile(r"\b[A-Z]+_[A-Z_]+="), ("config.to_env",)),
    # what an archive holds, not unpacking it
    (re.compile(r"\blist(?:s|ing)?\s+(?:the|all|every|what)\b|\bwhat(?:'s| is) (?:in|inside)\b|"
                r"\bcontents\b", re.I),
     ("archive.list_members",)),
    # the commit that made a change
    (re.compile(r"\bcommit\s+(?:\S+\s+){0,5}?(?:that|which)\s+(?:first\s+)?(?:added|introduced|"
                r"removed|deleted|changed|broke)\b|\bwhich commit\b", re.I), ("git.find_commit",)),
    # totals per group
    (re.compile(r"\b(?:add(?:s|ing)? up|sum(?:s|med|ming)?|total(?:led|ling)?)\b.*\b(?:per|for "
                r"(?:each|every)|by|grouped)\b", re.I), ("csv.group_sum", "sqlite.group_by")),
    # fields of records renamed or dropped
    (re.compile(r"\brenam\w*\s+(?:the\s+)?(?:field\s+|key\s+)?['\"]\w+['\"]\s+(?:to|as|into)\b|"
                r"\b(?:fields?|keys?|attributes?)\b.*\b(?:renam|drop|remov)\w*|\b(?:renam|drop|"
                r"remov)\w*\b.*\b(?:fields?|keys?|attributes?)\b|\w+\s+becomes\s+\w+", re.I),
     ("json.reshape",)),
    # checksums written, or checked against
    (re.compile(r"\b(?:record|write|create|make|generate|produce|compute)\w*\s+(?:an?\s+|the\s+)?"
                r"(?:sha-?256\s+|md5\s+)?(?:checksums?|hashes|manifest|sums)\b", re.I),
     ("integrity.make_manifest",)),
    (re.compile(r"\b(?:verify|check|against|no longer match|still match|changed|"
                r"altered|corrupt\w*)\b", re.I), ("integrity.verify_manifest",)),
    # which files of a copy differ from the original or are missing
    (re.compile(r"\bdiffer\w*|\bdiff\b|\bmissing from\b|\bdid(?:n't| not) make it\b", re.I),
     ("integrity.compare_trees",)),
    # a window of time: "09:00-11:00", "between 2 and 3 am"
    (re.compile(r"\b\d{1,2}:\d\d\s*(?:-|–|to|and|until)\s*\d{1,2}:\d\d\b|\bbetween\s+\d{1,2}\s*"
                r"(?:am|pm)?\s+and\s+\d", re.I), ("logs.time_window",)),
    # lines that match, kept (counting them is another skill)
    (re.compile(r"^(?!.*\b(?:count|how many|number of)\b).*\b(?:containing|mentioning|that "
                r"(?:contain|mention|match)|matching|whose\s+"
                r"(?:\w+\s+){1,3}(?:is|equals|=|matches)|equals?|rows?\s+(?:with|where|whose)|"
                r"where\s+\w+\s+(?:is|equals|matches)|where\s+\w+\s*(?:=|==|>|<))", re.I),
     ("text.filter_lines", "csv.filter_rows", "json.filter_records")),
    (re.compile(r"\bcop(?:y|ies|ying)\b", re.I), ("files.copy_matching",)),
    # a service: something that listens, starts and answers
    (re.compile(r"\b(?:service|server|daemon|listen\w*|port\s+\d+|health\w*|start(?:up)?[- ]?"
                r"script|start\.sh|launcher|bind\w*\s+to)\b", re.I),
     ("services.configure_http", "services.configure_tcp")),
    (re.compile(r"\b(?:rewrit|replac|substitut)\w*\s+(?:every|all|each)\b(?!.*\bconfig)", re.I),
     ("text.replace_pattern",)),
    # a credential replaced wherever it is used, or one setting of one named file
    (re.compile(r"\brotat\w*|\beverywhere\b|\bwherever\b|\b(?:all|every|each)\s+(?:the\s+|of\s+"
                r"the\s+)?(?:config\w*|settings?|files?)\b", re.I),
     ("security.rotate_credential",)),
    (re.compile(r"^(?!.*\b(?:rotat\w*|everywhere|wherever|all|every|each)\b).*\b(?:set|change|"
                r"update|edit)\w*\b.*\b(?:in|of)\s+\S+\.(?:ini|conf|cfg|toml|env)\b", re.I),
     ("config.set_value",)),
    (re.compile(r"\bsort(?:s|ed|ing)?\b|\border(?:ed)? by\b", re.I),
     ("csv.sort_rows", "json.sort_records", "text.sort_unique")),
    (re.compile(r"\bhow many\b(?!.*\b(?:each|per|every|by)\b)", re.I), ("text.count_lines",)),
    # keeping what matches a condition, not the newest N or some columns
    (re.compile(r"\b(?:keep|leave|retain) only\b(?!\s+(?:the\s+)?[\w-]+,\s)"
                r"(?!.*\b(?:columns?|newest|latest|oldest|most recent|\d+)\b)", re.I),
     ("csv.filter_rows", "json.filter_records", "text.filter_lines")),
)

# Work no skill does, whatever files it names: building software, machine learning,
# running servers.
OUT_OF_SCOPE: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\b(?:compil(?:e|es|ed|ing)|cmake|cargo build|make install|gcc|javac|"
                r"undefined reference|link(?:er| time)|c\+\+|c project)\b",
                re.I), "compiling code"),
    (re.compile(r"\b(?:train(?:s|ed|ing)?\b.*\b(?:model|classifier|network)|classifier|"
                r"logistic\s+regression|random forest|xgboost|k-?means|"
                r"machine learning|neural net(?:work)?s?|fine-?tun(?:e|ing))\b", re.I),
     "machine learning"),
    (re.compile(r"\b(?:set(?:ting)? up|install(?:ing)?|configur(?:e|ing)|deploy(?:ing)?|run"
                r"(?:ning)?)\b.*\b(?:web|http|mail|dns|database|ftp|vpn)\s+servers?\b|"
                r"\b(?:tls|ssl)\b|\bcertificates?\b", re.I), "setting up servers"),
    # The machine's own settings: its clock, time zone and locales.
    (re.compile(r"\b(?:system(?:'s)?\s+time\s*zone|time\s*zone\s+of\s+the\s+(?:system|"
                r"machine|server|host)|timedatectl|locale-gen|(?:generate|install)\s+(?:the\s+)?"
                r"[a-z]{2}_[A-Z]{2}(?:\.utf-?8)?\s+locale|system\s+locale)\b", re.I),
     "changing the system's time zone or locale"),
    (re.compile(r"\b(?:transcod\w*|ffmpeg|imagemagick|(?:resiz|crop|watermark)"
                r"\w*\s+(?:(?:the|all|every|our|my)\s+)*(?:\w+\s+)?(?:images?|photos?|pictures?|"
                r"videos?|jpe?gs?|pngs?|gifs?)|(?:audio|video)\s+tracks?|seconds?\s+off|\bfps|"
                r"(?:images?|photos?|pictures?|videos?)\s+(?:\w+\s+)?(?:to|into|as)\s+"
                r"(?:png|jpe?g|webp|gif|mp4|mp3|mov|avi))\b", re.I),
     "editing images, audio or video"),
    (re.compile(r"\b(?:encrypt\w*|decrypt\w*|gpg|pgp|openssl\s+enc)\b", re.I),
     "encrypting files"),
    (re.compile(r"\btranslat(?:e|es|ed|ing|ion)\b.*\b(?:english|spanish|french|german|"
                r"italian|portuguese|chinese|japanese|korean|russian|arabic|dutch|hindi|"
                r"languages?)\b", re.I), "translating text between languages"),
    (re.compile(r"\b(?:merg|split|sign|fill)\w*\b.*\bpdfs?\b|\bpdfs?\b.*\b(?:merg|split)\w*\b",
                re.I), "editing PDF documents"),
    (re.compile(r"\b(?:dns|mx|cname)\s+(?:records?|zones?|entr(?:y|ies))|\bzone files?\b|"
                r"\bbind9?\s+server\b|\bnamed\.conf\b|\b(?-i:A|AAAA|PTR)\s+records?\b",
                re.I), "managing DNS"),
    (re.compile(r"^\s*e-?mail\b(?!\s+(?:address|column|field|list))|\bsend\w*\s+(?:\w+\s+)?"
                r"(?:an?\s+)?e-?mails?\b(?!\s+(?:address|column|field))", re.I), "sending email"),
    (re.compile(r"\b(?:ufw|iptables|nftables|firewall\w*)\b", re.I), "configuring a firewall"),
    (re.compile(r"\b(?:pre-commit|post-commit|pre-push|pre-receive|git)\s+hooks?\b", re.I),
     "writing git hooks"),
    (re.compile(r"\b(?:sudoers|visudo|sudo rules?)\b", re.I), "granting sudo rights"),
    (re.compile(r"\b(?:active directory|ldap|kerberos|(?-i:AD)\s+(?:accounts?|users?|"
                r"passwords?))\b|\breset\w*\s+(?:the\s+|a\s+)?(?:\w+\s+)?passwords?\b|"
                r"\bunlock\w*\s+(?:\w+\s+)?accounts?\b", re.I),
     "managing directory accounts and passwords"),
    (re.compile(r"\b(?:cprofile|profil(?:e|es|ing)\s+\S+\.py|flame ?graphs?)\b", re.I),
     "profiling code"),
    (re.compile(r"\b(?:lvm|logical volumes?|resize2fs|mkfs|fdisk|partition\w*|disk quotas?|"
                r"quotas?\s+(?:of|for)|mount(?:s|ed|ing)?\s+(?:the\s+)?(?:disk|drive|volume)|"
                r"swap (?:file|space))\b", re.I), "managing disks"),
    (re.compile(r"\b(?:process(?:es)?\s+(?:is\s+)?(?:holding|listening|using|bound)|holding\s+"
                r"port|kill\w*\s+(?:the\s+)?process|systemctl|systemd units?)\b", re.I),
     "managing processes and services"),
    (re.compile(r"\b(?:plot\w*|(?:draw|render)\w* (?:an? |the )?histograms?|histograms? "
                r"(?:image|plot|png|svg)|charts?|gnuplot|matplotlib|graphs? of)\b", re.I),
     "plotting charts"),
    (re.compile(r"\bunit[- ]tests?\b|\bpytest\b|\btest suites?\b|\bwrite\s+(?:\w+\s+)?tests\b",
                re.I), "writing software tests"),
)

REFUSALS = (
    ("it asks for harm: taskloom makes practice tasks, not attacks on real systems or people",
     re.compile(r"\b(?:malware|ransomware|keylogger|virus|trojan|worm|backdoor|rootkit|"
                r"botnet|fork[- ]?bomb|phish\w*|steal\w*|stole|crack\w*\b.*\b(?:password|hash|"
                r"login)\w*|(?:password|hash)\w*\b.*\bcrack\w*|brute[- ]?forc\w*|"
                r"credential\s+stuffing|wipe\s+(?:the\s+|a\s+|my\s+|our\s+)?(?:real\s+|"
                r"host\s+|physical\s+|entire\s+)*(?:disk|drive|machine|server|host)|"
                r"wip(?:e|es|ing)\b.*\b(?:co-?worker|colleague|boss|someone|somebody|his|her|"
                r"their|other people)|ransom\w*|bitcoin|"
                r"wip\w*\b.*\b(?:auth|audit|security)\s+logs?|"
                r"cover(?:ing)?\s+(?:\w+\s+)?tracks|so (?:that )?nobody (?:can see|knows|"
                r"notices)|rm\s+-rf\s+/(?:\s|$)|dd\s+\w+\s+"
                r"(?:over|onto|to)\b|harvest\w*\s+(?:the\s+)?(?:\w+\s+){0,3}(?:credentials|passwords|"
                r"keys|tokens)|"
                r"denial[- ]of[- ]service|exploit\s+(?:a\s+|the\s+)?(?:real|live|"
                r"production|someone)|spyware|deface|reverse[- ]shell|bind[- ]shell|"
                r"victim\w*)", re.I)),
    ("it reaches outside the sandbox: a task runs with no network and touches nothing "
     "but its own environment, so nothing can be downloaded, sent, scanned or done to the "
     "host",
     re.compile(r"https?://\w|\b(?:download(?:ing)?\s+"
                r"(?!folder|dir)|wget|curl|nmap|ddos|pastebin|\w*[- ]?flood(?:s|ed|ing)?\b|"
                r"(?:on|of|from|over)\s+the\s+host(?:'s)?\b|host machine|ping\s+(?:the|a|our|every|"
                r"all)\b|port[- ]?scan|scan(?:ning)?\s+(?:the\s+|a\s+|our\s+|real\s+|every\s+|"
                r"all\s+)*(?:[\w./:-]+\s+)?(?:network|subnet|hosts?|ports?|lan|servers?|ip range)|"
                r"(?:send|post|upload|push|forward|mail|email|exfiltrat\w*)\b[^.]*?\b(?:to|"
                r"at)\s+(?:a\s+|an\s+|the\s+|our\s+|my\s+)?(?:remote|external|real|"
                r"production|live|public)\b|exfiltrat\w*|"
                r"from\s+the\s+(?:internet|web)(?![\s-]*(?:server|access|logs?\b|app))|"
                r"over\s+the\s+(?:internet|network|wan)\b|(?:public|live)\s+web\s*sites?|"
                r"(?:@|\b(?:server|database|db|host|box|machine)\s+(?:at|on)\s+)(?!127\.|0\.0\.0\.0)"
                r"(?:\d{1,3}\.){3}\d{1,3}\b|"
                r"e-?mail(?:s|ed|ing)?\s+(?:it|them|this|that|the\s+\w+)\s+to\b|"
                r"off\s+the\s+(?:internet|web)|ssh(?:es|ed|ing)?\s+(?:in)?to|(?:over|via)\s+ssh|"
                r"real\s+hosts?|scrap(?:e|es|ing)\b|[\w-]+(?:\.[\w-]+)*\.(?:internal|local|corp|lan):"
                r"\d{2,5}\b|(?:from|to|at|on|into)\s+(?:[\w-]+\.)+(?:com|net|org|io|dev|cloud|"
                r"internal|corp)\b|"
                r"(?:production|live)\s+servers?|(?:\d{1,3}\.){3}\d{1,3}/\d{1,2}\b|"
                r"(?:send|mail|e-?mail|forward)\w*\b.*\b(?:to|at)\s+[\w.+-]+@[\w-]+\.[a-z]{2,}|"
                r"\b[\w-]+\.(?:com|org|net|io|dev|cloud)/\S+)", re.I)),
)


class Atom(Frozen):
    """One thing the request asks for, and what covers it."""

    kind: str = Field(description="action, constraint or value.")
    text: str = Field(description="The words of the request it stands for.")
    source: str | None = Field(default=None, description="Format read (action).")
    target: str | None = Field(default=None, description="Format written (action).")
    covered_by: str | None = Field(default=None, description="Skill id that covers an "
                                   "action; None when no skill does, and for constraints "
                                   "and values (whether the task uses those is known only "
                                   "once it is made).")
    score: float | None = Field(default=None, description="Match score of the skill.")
    why: str = Field(default="", description="Why it is not covered, when it is not.")


class Intent(Frozen):
    """A request as actions in order, their constraints and values, and the skill path."""

    text: str = Field(description="The request as given.")
    atoms: tuple[Atom, ...] = Field(description="Actions in execution order, then "
                                    "constraints and named values.")
    path: tuple[str, ...] = Field(description="Skills covering the actions, in order.")
    scores: tuple[float, ...] = Field(description="Match score of each skill of the path.")
    nearest: tuple[tuple[str, float], ...] = Field(
        description="Top skills for the whole request, matched or not.")


def uncovered(atoms: tuple[Atom, ...]) -> tuple[Atom, ...]:
    """The actions among `atoms` that no skill of the path covers."""
    return tuple(a for a in atoms if a.kind == "action" and a.covered_by is None)


def refusal(text: str) -> str | None:
    """Why taskloom will not make a task for this request, or None."""
    for reason, pattern in REFUSALS:
        found = pattern.search(text)
        if found:
            return f"{reason} ({found.group(0).strip()!r})"
    return None


def actions(text: str) -> list[str]:
    """The request's actions in the order they must happen, each as its words."""
    body = _PREAMBLE.sub("", text.strip(), count=1).strip().rstrip(".!?") or text.strip()
    ordered: list[str] = []
    for piece in (p for p in _SEQUENCE.split(body) if p and p.strip()):
        ordered += _reorder(_after_task_words(piece.strip(" ,")))
    clauses: list[str] = []
    for piece in ordered:
        clauses += _split_on_verbs(piece)
    return _joined([c for c in clauses if c]) or [body]


def _after_task_words(piece: str) -> str:
    """The piece without a leading "make a task where the agent".

    It may come after some context: "our intern uploaded ...; make a task where ...".
    """
    found = _PREAMBLE.match(piece)
    if found and (_TASK_WORDS.search(found.group(0)) or _ASKED.search(found.group(0))) and \
            piece[found.end():].strip():
        return piece[found.end():]
    return piece


_CONTEXT = "; "  # joins what was done before to the action it explains (see parse_intent)


def _joined(clauses: list[str]) -> list[str]:
    """Clauses that add no work, joined to the action they are about.

    What was done before ("I copied /srv to /mnt; tell me what differs") goes with the
    next action; how the result must be ("they should be deleted, not listed"; "and report
    them in clusters") with the action before.
    """
    joined: list[str] = []
    context = ""
    for clause in clauses:
        first = clause.split()[0] if clause.split() else ""
        if _FRAME.match(clause) and len(clauses) > 1:
            continue
        if _BACKSTORY.match(clause) and not joined and not _verb(first):
            context = f"{context}{clause}{_CONTEXT}"
        elif joined and (_SAYS_MORE.match(clause) or
                         (_MODAL.match(clause) and not _verb(first))):
            joined[-1] = f"{joined[-1]}, {clause}"
        else:
            joined.append(context + clause)
            context = ""
    return joined + ([context.removesuffix(_CONTEXT)] if context else [])


def _reorder(piece: str) -> list[str]:
    """'report X after loading Y' → [loading Y, report X]; 'X but first Y' → [Y, X]."""
    first = _FIRST.split(piece, maxsplit=1)
    if len(first) == 2:
        return [first[1], first[0]]
    found = _AFTER.search(piece)
    if not found:
        return [piece]
    word = found.group(1).lower()
    head = piece[:found.start()].strip(" ,")
    tail = _SUBJECT.sub("", piece[found.end():].strip(" ,"))
    if not head:  # "after loading Y, report X"
        sub, _, rest = tail.partition(",")
        head, tail = rest.strip(), sub.strip()
        if not head or not _verb(tail.split()[0]):
            return [piece]  # "before tomorrow's migration, ...": a time, not an action
        return [tail, head] if word != "before" else [head, tail]
    words = tail.split()
    done = next((i + 1 for i, w in enumerate(words[:3]) if w.lower() in ("has", "have")), 0)
    if done and done < len(words) and _verb(words[done]):
        # "once rsync has copied X": copied X by rsync
        tail = " ".join(words[done:] + ["by"] * (done > 1) + words[:done - 1])
    elif not _verb(words[0] if words else ""):
        return [piece]  # "after midnight", "once a day": not an action
    return [tail, head] if word in ("after", "once") else [head, tail]


def _split_on_verbs(piece: str) -> list[str]:
    parts, start = [], 0
    for found in _AND.finditer(piece):
        before = piece[start:found.start()].strip()
        rest = piece[found.end():]
        words = re.split(r"\s*(?:,|\band\b)\s*", rest, maxsplit=1)[0].split()
        listed = re.match(r"\w+\s+(?:columns|fields|keys|attributes)\b", rest, re.I)
        relative = found.group(1).endswith("s") and \
            re.search(r"\b(?:that|which|who)\s+\w+s\b", before, re.I)
        if _verb(found.group(1)) and len(before.split()) >= 2 and not listed and \
                not relative and \
                not _SETTING.match(before) and \
                (len(words) >= 3 or _ON_WHAT_CAME_BEFORE.match(rest)) and \
                not CONSTRAINTS[0][1].match(rest) and not _MANNER.match(rest):
            # "..., keeping 5", "..., keeping the subfolders" say how, not what;
            # "... and count them" is an action on what came before
            parts.append(before)
            start = found.end()
    parts.append(piece[start:].strip())
    return [p for p in parts if p]


def _verb(word: str) -> bool:
    word = word.lower()
    if word in VERBS:
        return True
    for suffix, replace in (("ing", ""), ("ing", "e"), ("s", ""), ("es", ""), ("ed", ""),
                            ("ed", "e"), ("ied", "y"), ("ies", "y")):
        if word.endswith(suffix) and word[:-len(suffix)] + replace in VERBS:
            return True
    return len(word) > 5 and word.endswith("ing") and word[:-4] in VERBS  # "zipping"


def formats(clause: str) -> tuple[str | None, str | None, list[str]]:
    """(source type, target type, formats no skill handles) an action names."""
    source = target = None
    unknown: list[str] = []
    clause = _READER.sub(lambda m: " " * len(m.group(0)), clause)
    # a quoted example ("names like 'Tax Return.PDF'") names a file, not a format
    clause = _QUOTED.sub(lambda m: " " * len(m.group(0)), clause)
    for found in _FORMAT.finditer(clause):
        kind = FORMAT_WORDS[int(found.lastgroup[1:])][1]
        before, after = clause[:found.start()], clause[found.end():found.end() + 1]
        written = _EXTENSION_BEFORE.search(before) and _TO.search(before[:-1].rstrip("*"))
        if (_EXTENSION_BEFORE.search(before) and not written) or after in ("/", "]") or \
                (before.endswith("/") and not _LOG_FILE.fullmatch(found.group(0))):
            # "every .docx and .xlsx", "the *.log files", "pdf/": files of a tree;
            # "/var/www/html", "/etc/nginx": a folder's name, not what is read or written
            # ("/var/log/httpd/access_log" is a file's);
            # "into an .xlsx workbook" still names what is written; "[postgres]": a section
            continue
        if kind is None:
            unknown.append(found.group(0))
            continue
        if _TO.search(clause[:found.start()][-28:]) and target is None:
            target = kind
        elif re.search(r"\bfrom\s+(?:the\s+|an?\s+)?(?:[\w-]+\s+)?(?:[\w/-][\w./-]*\.)?\Z",
                       before, re.I) and \
                source != kind:
            # "create the table in store.sqlite from products.csv": what came first is written
            target = target or source
            source = kind
        elif source is None:
            source = kind
    return source, target, unknown


def constraints(text: str) -> list[str]:
    """Constraint phrases of a request ("keep 5", "skipping drafts")."""
    found = []
    for _, pattern in CONSTRAINTS:
        found += [m.group(0).strip() for m in pattern.finditer(text)]
    return list(dict.fromkeys(found))


def parse_intent(text: str, graph: SkillGraph, embedder: Embedder, *,
                 allowed: set[str] | None = None, tools: tuple[str, ...] = ()) -> Intent:
    """The actions of a request, and the chaining skill path that covers most of them.

    Raises:
        NoMatch: The request is empty or refused. A request no skill matches gets an
            empty path, its actions uncovered with the reason.
    """
    import numpy as np

    if not text.strip():
        raise NoMatch("the request is empty", field="request",
                      fix='describe the task, e.g. "rotate nginx logs and keep 5"')
    reason = refusal(text)
    if reason:
        raise NoMatch(f"taskloom will not make {text!r}: {reason}", field="request",
                      fix=REFUSAL_FIX)
    skills = sorted(allowed or graph.skills)
    position = {skill: index for index, skill in enumerate(skills)}
    clauses = actions(text)
    table = SkillTexts.of(graph, skills, embedder)
    # what was done before ("I copied X; tell me what differs") may help an action or drown
    # it: the action matches a skill as well as either reading allows
    focus = [clause.rpartition(_CONTEXT)[2] for clause in clauses]
    vectors = embedder.embed([text, *clauses, *focus])
    whole = table.scores(vectors[0], text)
    nearest = tuple((skills[i], round(float(whole[i]), 3))
                    for i in (-whole).argsort(kind="stable")[:5])
    per_clause = []
    for clause, vector, own, own_vector in zip(clauses, vectors[1:len(clauses) + 1], focus,
                                               vectors[len(clauses) + 1:], strict=True):
        bare = _LISTED.sub(lambda m: " " * len(m.group(0)), clause)
        source, target, unknown = formats(bare)
        unknown = [f"reads or writes {word}" for word in dict.fromkeys(unknown)] + \
            [f"does {what} ({found.group(0)!r})" for pattern, what in OUT_OF_SCOPE
             if (found := pattern.search(bare))]
        scores = table.scores(vector, clause)
        if own != clause:
            scores = np.maximum(scores, table.scores(own_vector, own))
        for index, skill in enumerate(skills):
            scores[index] += _format_fit(graph, skill, source, target)
            scores[index] += TOOL_BONUS * len(set(graph.skills[skill].tools) & set(tools))
        for cue, cued in CUES:
            if cue.search(clause):
                for skill in cued:
                    if skill in position:
                        scores[position[skill]] += CUE_BONUS
        best = (-scores).argsort(kind="stable")[:CANDIDATES]
        per_clause.append((clause, source, target, unknown,
                           [(skills[i], float(scores[i])) for i in best]))
    # An action in a format nothing handles takes no part in choosing the path.
    makeable = [i for i, c in enumerate(per_clause) if not c[3]]
    chosen = dict(zip(makeable, _best_path(graph, [per_clause[i][4] for i in makeable]),
                      strict=True))
    choice = [chosen.get(i, c[4][0]) for i, c in enumerate(per_clause)]
    atoms, path, scores = [], [], []
    for index, ((clause, source, target, unknown, _), (skill, score)) in enumerate(
            zip(per_clause, choice, strict=True)):
        why = ""
        if unknown:
            why = f"no skill {'; '.join(unknown)}"
        elif path and path[-1] != skill and not graph.chains(path[-1], skill):
            why = (f"{skill} reads {graph.skills[skill].consumes}, which {path[-1]} does not "
                   f"write (no skill path does both)")
        elif score < MIN_ACTION_SCORE and (path or index < len(per_clause) - 1) and \
                len(clause.split()) <= ELABORATION_WORDS:
            # "..., and report mismatches", "don't remove them": more words on the last action;
            # "quick one: ...": words before the first
            atoms.append(Atom(kind="constraint", text=clause))
            continue
        elif score < MIN_ACTION_SCORE:
            why = f"best skill {skill} scores {score:.2f} < {MIN_ACTION_SCORE}"
        covered = None if why else skill
        atoms.append(Atom(kind="action", text=clause, source=source, target=target,
                          covered_by=covered, score=round(score, 3), why=why))
        if covered and (not path or path[-1] != covered):
            path.append(covered)
            scores.append(round(score, 3))
    atoms += [Atom(kind="constraint", text=c) for c in constraints(text)]
    return Intent(text=text, atoms=tuple(atoms), path=tuple(path), scores=tuple(scores),
                  nearest=nearest)


def _format_fit(graph: SkillGraph, skill: str, source: str | None, target: str | None) -> float:
    consumes, produces = graph.skills[skill].consumes, graph.skills[skill].produces

    def fits(kind: str | None, declared: str) -> bool:
        return kind is not None and (graph.is_a(declared, kind) or graph.is_a(kind, declared))

    fit = 0.0
    if target:
        fit += TARGET_BONUS if fits(target, produces) else -TARGET_MISS
        if fits(target, consumes) and not fits(target, produces):
            fit -= REVERSED
    if source:
        fit += SOURCE_BONUS if fits(source, consumes) else 0.0
        if target and fits(source, produces) and not fits(source, consumes):
            fit -= REVERSED
    return fit


def chained(graph: SkillGraph, skills: list[str] | tuple[str, ...]) -> bool:
    """True when each skill of `skills` reads what the one before writes (or repeats it)."""
    return all(a == b or graph.chains(a, b) for a, b in itertools.pairwise(skills))


def _best_path(graph: SkillGraph,
               candidates: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """One skill per action, the highest total score whose consecutive skills chain.

    A skill far below the action's best (`SUBSTITUTE`) is not chosen just to make a path
    chain: when no choice chains, the best of each, and the caller reports the break.
    """
    tops = [c[0] for c in candidates]
    best, best_total = tops, None
    for combo in itertools.product(*candidates):
        if not chained(graph, [name for name, _ in combo]) or any(
                score < top - SUBSTITUTE for (_, score), (_, top) in zip(combo, tops, strict=True)):
            continue
        total = sum(score for _, score in combo)
        if best_total is None or total > best_total + 1e-9:
            best, best_total = list(combo), total
    return best


def stems(text: str) -> set[str]:
    """The distinct content words of `text`, lowercased, endings cut.

    "rotate", "rotates", "rotated" and "rotating" are one word.
    """
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _COMMON:
            continue
        for suffix in ("ing", "ed", "es", "s", "e"):
            if len(word) - len(suffix) >= 3 and word.endswith(suffix):
                word = word[:-len(suffix)]
                break
        found.add(word)
    return found


class SkillTexts:
    """Every text of every skill (name, description, phrases), embedded once.

    A request matches a skill by the best cosine of its texts, plus `WORD_WEIGHT` times the
    share of the request's words (weighted by how few skills use each) that the skill's
    texts use too: the embedding of a short request weighs its nouns over the rare word
    that decides ("byte-for-byte identical", "service account"), and the words do not.

    Kept in the process and on disk (`embed_cached`), so a fresh `make` does not embed
    ~600 texts again.
    """

    _cache: dict[tuple, SkillTexts] = {}

    def __init__(self, owners: np.ndarray, vectors: np.ndarray,
                 words: list[set[str]]) -> None:
        import math

        self.owners, self.vectors, self.count = owners, vectors, len(words)
        self.words = words
        used: dict[str, int] = {}
        for bag in words:
            for word in bag:
                used[word] = used.get(word, 0) + 1
        self.rarity = {word: math.log(len(words) / n) for word, n in used.items()}

    @classmethod
    def of(cls, graph: SkillGraph, skills: list[str], embedder: Embedder) -> SkillTexts:
        """The texts of `skills` (in that order) and their vectors under `embedder`."""
        import numpy as np

        texts, owners, per_skill = [], [], []
        for index, skill_id in enumerate(skills):
            skill = graph.skills[skill_id]
            mine = (f"{skill.name}: {skill.description}", skill.name, *skill.phrases)
            texts += mine
            owners += [index] * len(mine)
            per_skill.append(mine)
        key = (getattr(embedder, "name", type(embedder).__name__), tuple(texts))
        if key not in cls._cache:
            words = [set().union(*map(stems, mine)) for mine in per_skill]
            cls._cache[key] = cls(np.asarray(owners), embed_cached(embedder, texts), words)
        return cls._cache[key]

    def scores(self, query: np.ndarray, text: str) -> np.ndarray:
        """Per skill, how well `text` (embedded as `query`) matches it (see the class)."""
        import numpy as np

        best = np.full(self.count, -1.0, dtype=np.float32)
        np.maximum.at(best, self.owners, self.vectors @ query)
        known = [(word, self.rarity[word]) for word in stems(text) if word in self.rarity]
        weight = sum(rarity for _, rarity in known)
        if weight:
            shared = np.array([sum(r for word, r in known if word in bag) for bag in self.words],
                              dtype=np.float32)
            best += WORD_WEIGHT * shared / weight
        return best
