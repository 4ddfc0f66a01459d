"""On-demand tasks: request understanding with the real embedding model, `make` end to end
in the real sandbox, the no-match answer, and `check` against a live container."""

from __future__ import annotations

import subprocess
import sys

import pytest

import taskloom
from taskloom.embedding import load_embedder
from taskloom.errors import InputError, NoMatch
from taskloom.generators.backends import skill_graph
from taskloom.generators.intent import actions, constraints, formats, refusal
from taskloom.generators.request import difficulty_from_option, understand

TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


@pytest.mark.parametrize(("request_text", "skill"), [
    ("a task where the agent must rotate nginx logs and keep 5", "logs.rotate_keep"),
    ("find the 3 busiest client IPs in the web server access log", "logs.top_clients"),
    ("convert the JSON sensor readings to CSV with jq", "json.to_csv"),
    ("revert the commit that broke the build", "git.revert_commit"),
    ("create accounts for the new hires listed in a CSV", "users.create_from_csv"),
    ("schedule the cleanup script to run every night with cron", "cron.schedule_script"),
    # "keep only" what matches a condition filters; "keep only the 5 newest" prunes
    ("keep only the orders in orders.json that were refunded", "json.filter_records"),
    ("in the dumps folder keep only the 5 newest dumps, delete the others",
     "backup.prune_dated"),
])
def test_requests_match_the_right_skill(embedder, request_text, skill):
    understood = understand(request_text, skill_graph(()), embedder)
    assert understood.skills[0].id == skill, understood.nearest
    assert understood.scenario.id in skill_graph(()).scenarios_of(skill)


def test_rules_read_difficulty_paths_and_numbers(embedder):
    understood = understand("a hard, messy task: sum sales per region from /srv/sales/"
                            "orders.csv and keep the top five", skill_graph(()), embedder)
    assert understood.difficulty["noise"] == 3
    assert understood.difficulty["strictness"] == 3
    assert "/srv/sales/orders.csv" in understood.paths
    assert "orders.csv" in understood.file_names
    assert 5 in understood.numbers


def test_unrelated_request_gets_the_nearest_skills_not_a_task(embedder):
    with pytest.raises(NoMatch) as caught:
        understand("bake a chocolate cake for the party", skill_graph(()), embedder)
    assert "nearest skills" in str(caught.value)
    assert caught.value.fix


@pytest.mark.parametrize(("request_text", "clauses"), [
    ("a task where the agent must load the sales CSV into SQLite, then report totals per "
     "region", ["load the sales CSV into SQLite", "report totals per region"]),
    ("report the totals per region after loading the sales CSV into SQLite",
     ["loading the sales CSV into SQLite", "report the totals per region"]),
    ("hand the folder to the backup account and strip group write",
     ["hand the folder to the backup account", "strip group write"]),
    ("zip the reports, but first delete the drafts", ["delete the drafts", "zip the reports"]),
    ("rotate the nginx logs and keep 5", ["rotate the nginx logs and keep 5"]),
    ("count the ERROR and WARN lines in app.log", ["count the ERROR and WARN lines in app.log"]),
    ("schedule the backup script to run after midnight",
     ["schedule the backup script to run after midnight"]),
    # an action on what the one before found; "X has done Y" after "once" is an action
    ("check which cron jobs run at 4am and count them",
     ["check which cron jobs run at 4am", "count them"]),
    ("make a sha256 manifest of the mirror once rsync has copied /data to /backup/data",
     ["copied /data to /backup/data by rsync", "make a sha256 manifest of the mirror"]),
    ("mirror /srv to /backup, and once that's done record a sha256 checksum of every file",
     ["mirror /srv to /backup", "record a sha256 checksum of every file"]),
    ("create a branch, fix the typo; after that, list the history of README",
     ["create a branch", "fix the typo", "list the history of README"]),
    # a list of columns, a script's own description: one action each
    ("export the orders table to csv, then keep only the id, customer and total columns",
     ["export the orders table to csv", "keep only the id, customer and total columns"]),
    ("write a script that takes a path and reports its size, then install it into /usr/bin",
     ["write a script that takes a path and reports its size", "install it into /usr/bin"]),
    # what was done before goes with the action; how the result must be, with the action
    ("I copied /srv/photos to /mnt/usb; tell me which files differ",
     ["I copied /srv/photos to /mnt/usb; tell me which files differ"]),
    ("clear out the files older than a year. They should be deleted, not just listed",
     ["clear out the files older than a year, They should be deleted, not just listed"]),
    ("spot the duplicate photos and report them in groups",
     ["spot the duplicate photos, report them in groups"]),
    ("rename the songs to lowercase, e.g. 'My Song.mp3' -> 'my-song.mp3'",
     ["rename the songs to lowercase, e.g. 'My Song.mp3' -> 'my-song.mp3'"]),
    ("our intern uploaded scans; make a task where the agent renames them to lowercase",
     ["our intern uploaded scans; renames them to lowercase"]),
    ("I'm teaching a Linux class. Count the lines of poem.txt that contain river. Make that "
     "an exercise.",
     ["I'm teaching a Linux class; Count the lines of poem.txt that contain river"]),
    ("we run a small ISP. Sort users.csv by name",
     ["we run a small ISP; Sort users.csv by name"]),
    ("can the agent look through team.ics and list the double bookings",
     ["look through team.ics", "list the double bookings"]),
    # a statement of what must not happen, or of the output's form, says more of the action
    ("gzip the logs older than a week. Nothing gets deleted",
     ["gzip the logs older than a week, Nothing gets deleted"]),
    ("from staff.csv print the people in Sales. Header included",
     ["from staff.csv print the people in Sales, Header included"]),
    # "and then," with a comma still orders two actions; "next to" is no sequence
    ("turn orders.csv into JSON and then, from that JSON, keep the paid orders",
     ["turn orders.csv into JSON", "from that JSON, keep the paid orders"]),
    ("for each log, tally the errors and print the name next to its count",
     ["for each log, tally the errors and print the name next to its count"]),
    # a service's start script and a query of it are part of configuring it
    ("configure the health service, write its start script. Then query it",
     ["configure the health service, write its start script, query it"]),
])
def test_a_request_becomes_its_actions_in_the_order_they_happen(request_text, clauses):
    assert actions(request_text) == clauses


def test_direction_is_read_from_the_words_not_the_order_of_formats():
    assert formats("turn the JSON export into CSV") == ("json_doc", "csv_table", [])
    assert formats("build a JSON file from the CSV") == ("csv_table", "json_doc", [])
    assert formats("convert the YAML config to CSV")[2] == ["YAML"]
    assert constraints("bundle the invoices folder, skipping drafts, and keep the newest 3") \
        == ["keep the newest 3", "skipping drafts"]


def test_a_folder_named_like_a_format_is_a_path_not_a_format():
    assert formats("unpack the release tarball into /var/www/html") == ("archive", None, [])
    assert formats("make a tar.gz of /etc/nginx") == (None, "archive", [])
    assert formats("convert the nginx access log to CSV") == ("access_log", "csv_table", [])
    assert formats("once you've created a tar.gz of /etc/nginx") == (None, "archive", [])
    # an INI section, a quoted example name: not formats either
    assert formats("set max_connections in the [postgres] section") == (None, None, [])
    assert formats("clean up names like 'Tax Return 2023.PDF' into lowercase")[2] == []


@pytest.mark.parametrize("request_text", [
    "download the dataset from the internet and count its rows",
    "scan the office network for open ports",
    "write a keylogger that mails keystrokes home",
    "wipe the host disk",
    "send the customer table to an external server",
    "scan the 10.0.0.0/16 network for open ports",
    "ssh into build-07.example.org and clear its cache",
    "mail the invoices to billing at finance@example.com",
    "query the orders database at db.corp:5432",
    "clone gitlab.com/team/private-tool and count its commits",
    "encrypt the shared drive and leave a note asking for bitcoin",
    "copy the payroll table from the database server at 192.168.4.20 into payroll.csv",
    "push the nightly dump to ops@198.51.100.7:/dumps with scp",
    "export the user list and email it to my private address",
    "sync /srv/www to the mirror over the internet",
    "add a cron entry on the target's laptop that opens a reverse shell",
    "hammer the shop's public website with requests until it floods",
])
def test_requests_outside_a_sandbox_or_for_harm_are_refused_with_the_reason(embedder,
                                                                             request_text):
    with pytest.raises(NoMatch, match="will not make") as caught:
        understand(request_text, skill_graph(()), embedder)
    assert "sandbox" in str(caught.value) or "harm" in str(caught.value)


@pytest.mark.parametrize("request_text", [
    "keep the rows of users.csv whose email ends in @example.com, e.g. bob@example.com",
    "rank the paths in the web server access log by their 5xx responses",
    "rewrite every 'http://' as 'https://' in links.txt",
    "count the requests from 10.0.0.5:8080 in access.log",
    "from the web access log, count the 404s per path",
    "start the status service on 127.0.0.1:9000 and query its health path",
    "make the A record in hosts.txt point at 10.0.0.15",
])
def test_requests_that_only_mention_addresses_are_not_refused(request_text):
    assert refusal(request_text) is None


def test_two_actions_become_a_chained_path_in_the_order_asked(embedder):
    graph = skill_graph(())
    forward = understand("load the orders CSV into SQLite, then report revenue per region",
                         graph, embedder)
    backward = understand("report revenue per region after loading the orders CSV into "
                          "SQLite", graph, embedder)
    assert [m.id for m in forward.skills] == ["sqlite.import_csv", "sqlite.group_by"]
    assert [m.id for m in backward.skills] == ["sqlite.import_csv", "sqlite.group_by"]
    assert [a.covered_by for a in forward.atoms if a.kind == "action"] == \
        ["sqlite.import_csv", "sqlite.group_by"]


def test_direction_decides_between_a_conversion_and_its_reverse(embedder):
    graph = skill_graph(())
    assert understand("turn the CSV price list into JSON", graph, embedder).skills[0].id == \
        "csv.to_json"
    assert understand("turn the JSON price list into CSV", graph, embedder).skills[0].id == \
        "json.to_csv"


@pytest.mark.parametrize(("request_text", "path"), [
    ("dump the users table of crm.db to csv, then keep just the email and name columns",
     ["sqlite.export_csv", "csv.select_columns"]),  # "columns" names the operation
    ("from prices.csv, report the 3 most expensive products", ["csv.top_n"]),  # a setting
    ("which urls return 502s most often in the nginx access log", ["logs.failing_paths"]),
    ("give me a tarball of the files at HEAD of the docs repo", ["git.export_tree"]),
    ("zip up every .docx and .xlsx in the shared folder", ["archive.zip_selected"]),
    ("find the commit in /opt/app that added DEBUG=True to settings.py and write its hash to "
     "/tmp/culprit.txt", ["git.find_commit"]),
    ("count the lines of poem.txt that contain the word river", ["text.count_lines"]),
    ("set the password in app.ini to s3cret", ["config.set_value"]),
    ("change the db password used by the billing service in every config under /srv/billing",
     ["security.rotate_credential"]),
    # a distance in standard deviations is an outlier rule, not a plain threshold
    ("list the rows of loads.csv whose value is more than 2 standard deviations from the mean",
     ["stats.flag_outliers"]),
    ("rewrite every US date like 12/31/2024 in notes.txt to 2024-12-31",
     ["text.replace_pattern"]),
    ("tally the hits in /var/log/nginx/access_log by status code", ["logs.status_summary"]),
    ("sort big.txt, then keep the first 10 lines of it", ["text.sort_unique", "text.head_tail"]),
    # a service's start script and a query of it are that service's own work
    ("configure the HTTP health service to listen on 127.0.0.1:8085, write its start script "
     "so it runs as the svc user, then query it", ["services.configure_http"]),
    ("could the agent bring up the TCP line service on port 7070, and check that it answers",
     ["services.configure_tcp"]),
    # a list in brackets names the kinds of file the work touches
    ("the API token leaked: replace it in every config of /etc/shop (ini, yaml, .env, the "
     "systemd unit)", ["security.rotate_credential"]),
    # who the user is, then the ask
    ("I run a data bootcamp. Sort grades.csv by score, highest first", ["csv.sort_rows"]),
    ("can the agent look at team.ics and list the double bookings in UTC",
     ["schedule.find_conflicts"]),
])
def test_operation_words_settings_and_named_results_decide_close_skills(embedder,
                                                                        request_text, path):
    assert [m.id for m in understand(request_text, skill_graph(()), embedder).skills] == path


@pytest.mark.parametrize(("request_text", "why"), [
    ("build the go service from source with make install", "compiling code"),
    ("train a model that predicts churn from customers.csv", "machine learning"),
    ("renew the TLS certificate of the intranet site", "setting up servers"),
    ("transcode the training videos from mov to mp4", "editing images, audio or video"),
    ("resize all the product photos in /srv/shop to 800px wide",
     "editing images, audio or video"),
    ("merge the scanned contract PDFs into one document", "editing PDF documents"),
    ("add a CNAME record for the wiki to the zone file", "managing DNS"),
    ("configure the local BIND server to serve an A record for intranet.corp.local",
     "managing DNS"),
    ("set the system timezone to Europe/Berlin and generate the de_DE.UTF-8 locale",
     "changing the system's time zone or locale"),
    ("email the weekly summary to the ops team", "sending email"),
    ("reset the AD password for jsmith and unlock his account",
     "managing directory accounts and passwords"),
    ("encrypt backup.tar with gpg for the auditors", "encrypting files"),
    ("translate the user guide from German to English", "translating text between languages"),
])
def test_work_no_skill_does_is_not_covered_whatever_files_it_names(embedder, request_text,
                                                                   why):
    with pytest.raises(NoMatch, match=why):
        understand(request_text, skill_graph(()), embedder)


def test_excel_as_the_reader_is_not_a_format_but_an_excel_workbook_is(embedder):
    graph = skill_graph(())
    assert [m.id for m in understand("convert the orders JSON to CSV for Excel", graph,
                                     embedder).skills] == ["json.to_csv"]
    with pytest.raises(NoMatch, match="Excel"):
        understand("convert the orders JSON to an Excel workbook", graph, embedder)
    # an extension after "into" names what is written, not files of a tree
    assert formats("turn the figures into an .xlsx workbook")[2] == ["xlsx"]
    assert formats("zip up every .docx and .xlsx in the share")[2] == []


def test_an_action_in_a_format_nothing_handles_is_not_covered(embedder):
    with pytest.raises(NoMatch, match="YAML"):
        understand("convert the YAML inventory to CSV", skill_graph(()), embedder)
    partial = understand("remove duplicate rows from the orders CSV, then convert it to YAML",
                         skill_graph(()), embedder)
    assert [m.id for m in partial.skills] == ["csv.dedupe_rows"]
    assert [a.why for a in partial.atoms if a.kind == "action" and not a.covered_by] == \
        ["no skill reads or writes YAML"]


def test_words_a_request_shares_with_one_skill_decide_what_the_embedding_cannot(embedder):
    from taskloom.generators.intent import SkillTexts, stems

    assert stems("Rotating the nginx logs, keeping 5 files") == {"rotat", "nginx", "log",
                                                                 "keep"}
    assert stems("rotate") == stems("rotated") == stems("rotates") == {"rotat"}
    graph = skill_graph(())
    request = "hand the /srv/ci folder over to the builder service account"
    table = SkillTexts.of(graph, sorted(graph.skills), embedder)
    vector = embedder.embed([request])[0]
    words_only = table.scores(vector, request) - table.scores(vector, "")
    assert sorted(graph.skills)[int(words_only.argmax())] == "perms.chown_tree"
    assert [m.id for m in understand(request, graph, embedder).skills] == ["perms.chown_tree"]


def test_a_far_worse_skill_is_not_chosen_just_to_make_the_path_chain(embedder):
    # nothing that finds world-writable files feeds set_modes: the break is reported, and no
    # ownership task stands in for the first action
    understood = understand("find world-writable files under /var/www, then set them to 644",
                            skill_graph(()), embedder)
    assert [m.id for m in understood.skills] == ["perms.find_world_writable"]
    assert [a.why for a in understood.uncovered] == [
        "perms.set_modes reads file_tree, which perms.find_world_writable does not write (no "
        "skill path does both)"]


def test_skill_texts_are_embedded_once_then_read_from_the_cache(tmp_path, monkeypatch,
                                                                embedder):
    from taskloom.generators.intent import SkillTexts

    class Counting:
        name = "counting"
        calls = 0

        def embed(self, texts):
            Counting.calls += 1
            return embedder.embed(texts)

    monkeypatch.setenv("TASKLOOM_CACHE", str(tmp_path))
    graph = skill_graph(())
    first = SkillTexts.of(graph, sorted(graph.skills), Counting())
    SkillTexts._cache.clear()  # as in a fresh process
    again = SkillTexts.of(graph, sorted(graph.skills), Counting())
    assert Counting.calls == 1 and (again.vectors == first.vectors).all()
    [cached] = tmp_path.glob("vectors-*.npy")
    cached.write_bytes(b"torn")
    SkillTexts._cache.clear()
    SkillTexts.of(graph, sorted(graph.skills), Counting())
    assert Counting.calls == 2


def test_difficulty_option():
    assert difficulty_from_option("hard")["noise"] == 3
    assert difficulty_from_option("noise=2,steps=3") == {"noise": 2, "steps": 3}
    with pytest.raises(InputError, match="--difficulty"):
        difficulty_from_option("loud=3")


@pytest.mark.docker
def test_python_api_makes_a_verified_task_honouring_numbers(tmp_path):
    task = taskloom.make("find the 3 busiest client IPs in the access log", out=tmp_path)
    assert task.config.metadata["skills"][0] == "logs.top_clients"
    assert "3 client IPs" in task.instruction or "top 3" in task.instruction
    assert (tmp_path / task.name / "task.toml").is_file()


@pytest.mark.docker
def test_cli_make_prints_what_it_understood(tmp_path):
    done = subprocess.run([*TASKLOOM, "make", "rotate the service logs and keep 3",
                           "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "logs.rotate_keep" in done.stdout and "verified" in done.stdout
    assert "3 (used)" in done.stdout
    assert "action:" in done.stdout and "-> logs.rotate_keep" in done.stdout
    no_match = subprocess.run([*TASKLOOM, "make", "bake a chocolate cake"],
                              capture_output=True, text=True, timeout=300)
    assert no_match.returncode == 2
    assert "nearest skills" in no_match.stderr
    partial = subprocess.run([*TASKLOOM, "make", "sort the CSV by price, then convert it to "
                              "YAML", "--out", str(tmp_path / "partial")],
                             capture_output=True, text=True, timeout=300)
    assert partial.returncode == 2 and "--best-effort" in partial.stderr
    assert not (tmp_path / "partial").exists()


@pytest.mark.docker
def test_make_builds_exactly_the_two_skills_asked_for_in_order(tmp_path):
    task = taskloom.make("unpack the backup archive, then hand the files to the www-data "
                         "user", out=tmp_path)
    assert task.config.metadata["skills"] == ["archive.extract", "perms.chown_tree"]


@pytest.mark.docker
def test_check_a_live_environment_before_and_after_an_attempt(tmp_path):
    from taskloom.harbor import read_task_folder
    from taskloom.sandbox import live

    task = taskloom.make("find the 3 busiest client IPs in the access log", out=tmp_path)
    folder = tmp_path / task.name
    name = f"taskloom-test-live-{tmp_path.name[-12:]}"
    with live.session(read_task_folder(folder), name=name):
        before = subprocess.run([*TASKLOOM, "check", str(folder), "--container", name],
                                capture_output=True, text=True, timeout=300)
        assert before.returncode == 1
        assert "reward 0" in before.stdout and "failing checks" in before.stdout
        solve = task.file("solution", "solve.sh").content.decode()
        attempt = subprocess.run(["docker", "exec", "-i", name, "bash"], input=solve,
                                 capture_output=True, text=True, timeout=120)
        assert attempt.returncode == 0, attempt.stderr
        after = subprocess.run([*TASKLOOM, "check", str(folder), "--container", name],
                               capture_output=True, text=True, timeout=300)
        assert after.returncode == 0, after.stdout + after.stderr
        assert "reward 1" in after.stdout
    leftover = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"],
                              capture_output=True, text=True).stdout.strip()
    assert leftover == ""
