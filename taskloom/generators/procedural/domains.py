"""Domains: the vocabulary that makes generated data believable for a scenario.

A scenario names a domain; sources draw service names, people, log messages, table
schemas, URL paths and file names from it, so the same skill reads as web operations in
one task and as lab data cleanup in another.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """A table column and how to make its values."""

    name: str
    kind: str  # id, name, category, int, money, date, city, code, bool


@dataclass(frozen=True)
class Domain:
    """Vocabulary of one domain."""

    name: str
    org: str
    role: str
    root: str  # where the domain's data lives, e.g. /srv/shop
    services: tuple[str, ...]
    people: tuple[str, ...]
    categories: tuple[str, ...]
    table: str
    columns: tuple[Column, ...]
    url_paths: tuple[str, ...]
    file_stems: tuple[str, ...]
    extensions: tuple[str, ...]
    words: tuple[str, ...]
    messages: tuple[tuple[str, str], ...]  # (level, template with {id} {n} {user} {svc})


_PEOPLE = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan",
           "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor",
           "wendy", "yusuf", "zoe", "amara", "bruno", "chen", "dmitri", "elif")
_CITIES = ("Lisbon", "Oslo", "Nairobi", "Osaka", "Denver", "Lyon", "Austin", "Porto",
           "Seoul", "Quito", "Tallinn", "Perth")
_COMMON_MESSAGES = (
    ("INFO", "request {id} served in {n} ms"),
    ("INFO", "user {user} logged in"),
    ("DEBUG", "cache lookup for {id} took {n} us"),
    ("DEBUG", "pool stats: {n} idle connections"),
    ("WARN", "slow response for {id}: {n} ms"),
    ("WARN", "retrying {svc} call for {id} (attempt {n})"),
    ("ERROR", "request {id} failed: upstream {svc} timed out after {n} ms"),
    ("ERROR", "could not write record {id}: disk quota exceeded"),
    ("ERROR", "user {user} session {id} rejected: invalid token"),
    ("INFO", "job {id} finished with {n} items"),
)

DOMAINS: dict[str, Domain] = {}


def _domain(**values) -> None:
    values.setdefault("people", _PEOPLE)
    values.setdefault("messages", _COMMON_MESSAGES)
    domain = Domain(**values)
    DOMAINS[domain.name] = domain


_domain(name="web", org="Larkspur Web", role="the on-call site reliability engineer",
        root="/srv/web", services=("nginx", "api", "auth", "search", "checkout"),
        categories=("landing", "api", "static", "admin", "search"), table="pageviews",
        columns=(Column("view_id", "id"), Column("page", "category"),
                 Column("country", "city"), Column("visits", "int"),
                 Column("day", "date")),
        url_paths=("/", "/login", "/api/items", "/api/cart", "/static/app.js",
                   "/static/site.css", "/search", "/admin", "/health", "/checkout"),
        file_stems=("index", "about", "pricing", "blog-post", "banner", "logo", "sitemap"),
        extensions=("html", "css", "js", "png", "svg", "txt"),
        words=("latency", "cache", "edge", "origin", "cdn", "upstream", "proxy", "tls"))
_domain(name="ops", org="Granite Ops", role="the infrastructure engineer",
        root="/srv/ops", services=("backup", "scheduler", "monitor", "storage", "dns"),
        categories=("daily", "weekly", "monthly", "adhoc"), table="jobs",
        columns=(Column("job_id", "id"), Column("kind", "category"),
                 Column("host", "code"), Column("duration_s", "int"), Column("day", "date")),
        url_paths=("/status", "/metrics", "/jobs", "/jobs/run", "/health"),
        file_stems=("backup", "snapshot", "dump", "inventory", "runbook", "host-list"),
        extensions=("tar.gz", "sql", "txt", "conf", "log", "json"),
        words=("snapshot", "retention", "volume", "replica", "quorum", "restore"))
_domain(name="sales", org="Northwind Trading", role="the data analyst",
        root="/srv/sales", services=("orders", "billing", "crm", "reports"),
        categories=("books", "garden", "kitchen", "toys", "outdoor", "office"),
        table="orders",
        columns=(Column("order_id", "id"), Column("region", "city"),
                 Column("category", "category"), Column("quantity", "int"),
                 Column("amount", "money"), Column("day", "date")),
        url_paths=("/orders", "/orders/new", "/invoices", "/customers", "/reports"),
        file_stems=("q1-report", "q2-report", "invoice", "forecast", "pipeline", "leads"),
        extensions=("csv", "xlsx", "pdf", "txt", "json"),
        words=("revenue", "margin", "discount", "invoice", "forecast", "quota"))
_domain(name="ci", org="Tessellate Build", role="the build engineer",
        root="/srv/ci", services=("runner", "compiler", "tests", "linker", "artifacts"),
        categories=("unit", "integration", "lint", "e2e", "package"), table="builds",
        columns=(Column("build_id", "id"), Column("stage", "category"),
                 Column("branch", "code"), Column("minutes", "int"), Column("day", "date")),
        url_paths=("/builds", "/builds/latest", "/artifacts", "/queue", "/health"),
        file_stems=("build", "test-report", "coverage", "artifact", "manifest", "junit"),
        extensions=("log", "xml", "json", "txt", "tar.gz"),
        words=("pipeline", "artifact", "flaky", "cache", "runner", "matrix"),
        messages=(("INFO", "step {id} passed in {n} s"),
                  ("INFO", "runner {user} picked job {id}"),
                  ("DEBUG", "restored cache key {id} ({n} MB)"),
                  ("WARN", "test {id} is slow: {n} s"),
                  ("WARN", "retrying download of {svc} artifact {id}"),
                  ("ERROR", "step {id} failed with exit code {n}"),
                  ("ERROR", "test {id} failed: assertion error in {svc}"),
                  ("ERROR", "runner {user} lost connection during job {id}")))
_domain(name="payments", org="Quillpay", role="the payments platform engineer",
        root="/srv/payments", services=("ledger", "gateway", "fraud", "payouts", "refunds"),
        categories=("card", "transfer", "wallet", "refund"), table="transactions",
        columns=(Column("txn_id", "id"), Column("method", "category"),
                 Column("merchant", "code"), Column("amount", "money"),
                 Column("day", "date")),
        url_paths=("/v1/charges", "/v1/refunds", "/v1/payouts", "/v1/balance", "/health"),
        file_stems=("settlement", "payout", "chargeback", "ledger", "reconciliation"),
        extensions=("csv", "json", "txt", "log"),
        words=("settlement", "ledger", "chargeback", "payout", "merchant", "currency"),
        messages=(("INFO", "charge {id} captured for {n} cents"),
                  ("INFO", "payout {id} sent to merchant {user}"),
                  ("DEBUG", "fraud score for {id} is {n}"),
                  ("WARN", "charge {id} flagged for review (score {n})"),
                  ("ERROR", "charge {id} declined by {svc}: insufficient funds"),
                  ("ERROR", "ledger write for {id} failed after {n} retries"),
                  ("ERROR", "refund {id} rejected: already refunded")))
_domain(name="software", org="Ferncastle Labs", role="the release engineer",
        root="/srv/src", services=("core", "cli", "docs", "plugins", "api"),
        categories=("feature", "bugfix", "docs", "refactor", "chore"), table="issues",
        columns=(Column("issue_id", "id"), Column("label", "category"),
                 Column("component", "code"), Column("points", "int"), Column("day", "date")),
        url_paths=("/releases", "/downloads", "/docs", "/api/v2", "/health"),
        file_stems=("main", "utils", "config", "parser", "README", "CHANGELOG", "setup"),
        extensions=("py", "sh", "md", "toml", "txt", "json"),
        words=("release", "changelog", "semver", "tag", "hotfix", "regression"))
_domain(name="research", org="Hollowbrook Lab", role="the research data steward",
        root="/srv/lab", services=("sequencer", "pipeline", "storage", "scheduler"),
        categories=("control", "treatment-a", "treatment-b", "placebo"), table="samples",
        columns=(Column("sample_id", "id"), Column("group", "category"),
                 Column("site", "city"), Column("score", "int"), Column("day", "date")),
        url_paths=("/datasets", "/samples", "/runs", "/health"),
        file_stems=("sample", "run", "plate", "protocol", "notes", "results"),
        extensions=("csv", "tsv", "json", "txt", "fastq"),
        words=("sample", "assay", "replicate", "cohort", "protocol", "plate"))
_domain(name="media", org="Lumen Studio", role="the media librarian",
        root="/srv/media", services=("transcoder", "library", "thumbnails", "uploads"),
        categories=("photo", "video", "audio", "document"), table="assets",
        columns=(Column("asset_id", "id"), Column("type", "category"),
                 Column("owner", "name"), Column("size_kb", "int"), Column("day", "date")),
        url_paths=("/library", "/upload", "/thumbs", "/stream", "/health"),
        file_stems=("holiday", "interview", "podcast", "poster", "trailer", "scan"),
        extensions=("jpg", "png", "mp4", "mp3", "wav", "pdf"),
        words=("album", "render", "codec", "thumbnail", "archive", "master"))
_domain(name="hr", org="Bramble & Co", role="the IT administrator",
        root="/srv/people", services=("directory", "payroll", "onboarding", "sso"),
        categories=("engineering", "sales", "finance", "support", "legal"), table="staff",
        columns=(Column("employee_id", "id"), Column("department", "category"),
                 Column("name", "name"), Column("salary", "money"), Column("start", "date")),
        url_paths=("/people", "/payroll", "/onboarding", "/sso/login", "/health"),
        file_stems=("contract", "handbook", "policy", "offer", "review", "timesheet"),
        extensions=("pdf", "docx", "txt", "csv", "md"),
        words=("onboarding", "payroll", "badge", "laptop", "contract", "review"))
_domain(name="iot", org="Tidewater Sensors", role="the telemetry engineer",
        root="/srv/telemetry", services=("ingest", "broker", "gateway", "alerts"),
        categories=("thermostat", "hygrometer", "meter", "camera", "lock"), table="readings",
        columns=(Column("reading_id", "id"), Column("device", "category"),
                 Column("site", "city"), Column("value", "int"), Column("day", "date")),
        url_paths=("/ingest", "/devices", "/alerts", "/firmware", "/health"),
        file_stems=("firmware", "readings", "calibration", "devices", "alerts"),
        extensions=("json", "csv", "bin", "log", "txt"),
        words=("sensor", "firmware", "gateway", "telemetry", "threshold", "battery"),
        messages=(("INFO", "device {id} reported {n} readings"),
                  ("DEBUG", "gateway {svc} queue depth {n}"),
                  ("WARN", "device {id} battery at {n} percent"),
                  ("WARN", "clock drift on {id}: {n} ms"),
                  ("ERROR", "device {id} offline for {n} minutes"),
                  ("ERROR", "firmware update of {id} failed on {svc}")))
_domain(name="security", org="Ironbark Systems", role="the security engineer",
        root="/srv/secure", services=("sshd", "sudo", "firewall", "auditd", "vpn"),
        categories=("low", "medium", "high", "critical"), table="findings",
        columns=(Column("finding_id", "id"), Column("severity", "category"),
                 Column("host", "code"), Column("score", "int"), Column("day", "date")),
        url_paths=("/login", "/admin", "/wp-login.php", "/.env", "/api/keys", "/health"),
        file_stems=("policy", "audit", "keys", "allowlist", "report", "baseline"),
        extensions=("conf", "txt", "pem", "log", "json"),
        words=("audit", "baseline", "hardening", "exposure", "credential", "patch"),
        messages=(("INFO", "accepted publickey for {user} from 10.0.{n}.7"),
                  ("WARN", "failed password for {user} from 10.9.{n}.4"),
                  ("WARN", "sudo: {user} ran {svc} without tty"),
                  ("ERROR", "possible break-in attempt {id} from 10.66.{n}.9"),
                  ("ERROR", "firewall dropped {n} packets for rule {id}"),
                  ("INFO", "session {id} closed for {user}")))
_domain(name="retail", org="Copperleaf Market", role="the store systems engineer",
        root="/srv/store", services=("pos", "inventory", "pricing", "loyalty"),
        categories=("produce", "dairy", "bakery", "frozen", "household", "beverages"),
        table="inventory",
        columns=(Column("sku", "id"), Column("aisle", "category"),
                 Column("supplier", "code"), Column("stock", "int"), Column("price", "money")),
        url_paths=("/pos/sale", "/inventory", "/prices", "/loyalty", "/health"),
        file_stems=("price-list", "stock-count", "planogram", "supplier", "receipt"),
        extensions=("csv", "txt", "json", "pdf"),
        words=("restock", "shrinkage", "barcode", "supplier", "promotion", "aisle"))
_domain(name="docs", org="Quarto Press", role="the documentation maintainer",
        root="/srv/docs", services=("builder", "search-index", "linkcheck", "publisher"),
        categories=("guide", "reference", "tutorial", "faq", "release-notes"), table="pages",
        columns=(Column("page_id", "id"), Column("section", "category"),
                 Column("author", "name"), Column("words", "int"), Column("day", "date")),
        url_paths=("/docs", "/docs/guide", "/docs/api", "/search", "/health"),
        file_stems=("intro", "install", "quickstart", "faq", "api", "changelog", "glossary"),
        extensions=("md", "html", "png", "txt", "yaml"),
        words=("section", "heading", "anchor", "glossary", "tutorial", "reference"))

CITIES = _CITIES


def domain(name: str) -> Domain:
    """The named domain (KeyError lists the known ones)."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise KeyError(f"unknown domain {name!r}; known: {', '.join(sorted(DOMAINS))}") \
            from None
