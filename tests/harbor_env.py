"""A real Harbor for tests: a pinned release in its own Python 3.12 virtualenv, and the
Docker Compose v2 plugin its docker environment needs, both cached between runs. Harbor
also runs taskloom's bwrap environment plugin from this checkout (`plugin=True`).

Harbor needs Python >= 3.12 (pyenv has it on these machines) and `docker compose`, which
Debian bookworm does not ship: the plugin binary is unpacked from Debian trixie's
docker-compose package (no install; it goes into a private DOCKER_CONFIG). Offline, Harbor
0.26's docker environment refuses tasks whose network is off (its egress-control sidecar
cannot be pulled), so `harbor_copy` drops those keys from a copy of the task and
`COMPOSE_OVERLAY` takes the network away again (`network_mode: none`).
"""

from __future__ import annotations

import glob
import json
import lzma
import os
import shutil
import subprocess
import tomllib
import urllib.request
from pathlib import Path

import tomli_w

HARBOR_VERSION = "0.26.0"
CACHE = Path(os.environ.get("TASKLOOM_TEST_CACHE", "/var/cache/taskloom-tests"))
DEBIAN = "http://deb.debian.org/debian"
COMPOSE_OVERLAY = "services:\n  main:\n    network_mode: none\n"
# Harbor imports litellm, which fetches a price list from the internet unless told not to.
QUIET = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def python312() -> str:
    """A Python >= 3.12 interpreter (pyenv's on these machines)."""
    # pyenv's own interpreters first: its `python3.12` shim fails when 3.12 is not selected.
    found = next(iter(sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.1[2-9]*/bin/"
                                               "python3.1[2-9]")))), None) \
        or shutil.which("python3.12")
    if found is None:
        raise RuntimeError("Harbor needs Python >= 3.12: install it (pyenv install 3.12)")
    return found


def harbor_bin() -> Path:
    """The `harbor` command of the pinned release, installed on first use (~2 minutes)."""
    venv = CACHE / f"harbor-{HARBOR_VERSION}"
    command = venv / "bin" / "harbor"
    if not command.exists():
        # An install killed half-way leaves a venv without pip, which `venv` does not mend.
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python312(), "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        f"harbor=={HARBOR_VERSION}"], check=True)
    return command


# What Harbor's interpreter needs to import taskloom's environment plugin from this
# checkout (put on PYTHONPATH): taskloom's dependencies the plugin's modules import.
PLUGIN = "taskloom.sandbox.harbor_plugin:BwrapEnvironment"
PLUGIN_NEEDS = ("tomli-w",)
REPO = Path(__file__).resolve().parents[1]


def plugin_env() -> dict[str, str]:
    """The environment variables under which Harbor imports the plugin from this checkout
    (its dependencies installed into Harbor's virtualenv on first use)."""
    python = harbor_bin().with_name("python")
    probe = subprocess.run([str(python), "-c", "import tomli_w"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", *PLUGIN_NEEDS], check=True)
    return {"PYTHONPATH": f"{REPO}{os.pathsep}{AGENTS}"}


def docker_config() -> Path:
    """A DOCKER_CONFIG folder whose cli-plugins hold docker compose (unpacked once)."""
    folder = CACHE / "docker-config"
    plugin = folder / "cli-plugins" / "docker-compose"
    if not plugin.exists():
        index = lzma.decompress(urllib.request.urlopen(
            f"{DEBIAN}/dists/trixie/main/binary-amd64/Packages.xz", timeout=120).read())
        stanza = next(s for s in index.decode().split("\n\n")
                      if s.startswith("Package: docker-compose\n"))
        filename = next(line.split(": ", 1)[1] for line in stanza.splitlines()
                        if line.startswith("Filename: "))
        deb = folder / "docker-compose.deb"
        deb.parent.mkdir(parents=True, exist_ok=True)
        deb.write_bytes(urllib.request.urlopen(f"{DEBIAN}/{filename}", timeout=300).read())
        unpacked = folder / "unpacked"
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        plugin.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(unpacked / "usr/libexec/docker/cli-plugins/docker-compose", plugin)
        shutil.rmtree(unpacked)
        deb.unlink()
    return folder


def harbor_copy(task: Path, target: Path) -> Path:
    """A copy of a task folder that Harbor 0.26's docker environment runs offline."""
    shutil.copytree(task, target)
    config = tomllib.loads((target / "task.toml").read_text())
    environment = config.get("environment", {})
    environment.pop("network_mode", None)
    environment.pop("allow_internet", None)
    (target / "task.toml").write_text(tomli_w.dumps(config))
    return target


AGENTS = Path(__file__).with_name("harbor_agents")


def harbor_reward(task: Path, agent: str, jobs: Path, *, probe: str | None = None,
                  plugin: bool = False) -> float | None:
    """The reward Harbor's own `agent` (oracle or nop) earns on `task`, run offline.

    With `probe` (a probe's script), the agent is tests/harbor_agents' ProbeAgent, which
    runs it in the agent phase instead. With `plugin`, the trial runs in taskloom's bwrap
    environment plugin instead of Harbor's docker environment.
    """
    return harbor_rewards(task, agent, jobs, probe=probe, plugin=plugin).get("reward")


def harbor_rewards(task: Path, agent: str, jobs: Path, *, probe: str | None = None,
                   plugin: bool = False) -> dict[str, float]:
    """Every named reward of the trial, as `harbor_reward` runs it (a multi-step task's
    combined from its steps')."""
    result = _harbor_run(task, agent, jobs, probe=probe, plugin=plugin)[-1]
    return (result.get("verifier_result") or {}).get("rewards") or {}


def harbor_dataset_rewards(dataset: Path, agent: str, jobs: Path, *,
                           plugin: bool = False) -> dict[str, float | None]:
    """The reward Harbor's `agent` earns on every task of a folder of task folders (one
    job, two trials at once), by Harbor's task name.

    In Harbor's docker environment, run offline as `harbor_reward` runs a task (give it a
    folder of `harbor_copy`s); with `plugin`, in taskloom's bwrap environment plugin, on
    the folders as they are.
    """
    return {result["task_name"]: ((result.get("verifier_result") or {}).get("rewards")
                                  or {}).get("reward")
            for result in _harbor_run(dataset, agent, jobs, concurrent=2, plugin=plugin)}


def harbor_exceptions(jobs: Path, agent: str) -> list[str]:
    """The exception.txt of every trial of the `agent` job under `jobs`."""
    return [path.read_text() for path in sorted((jobs / agent).glob("*/*/exception.txt"))]


def harbor_reads_manifest(manifest: Path, folders: Path) -> dict:
    """What Harbor's own classes make of a dataset.toml and the task folders beside it:
    {"dataset": name, "pinned": {task: digest}, "hashed": {task: digest}}, the pinned
    digests read by `DatasetManifest`, the hashed ones computed by Harbor's publisher from
    each folder `Task` accepts."""
    script = (
        "import json, sys\nfrom pathlib import Path\n"
        "from harbor.models.dataset.manifest import DatasetManifest\n"
        "from harbor.models.task.task import Task\n"
        "from harbor.publisher.packager import Packager\n"
        "manifest = DatasetManifest.from_toml_file(sys.argv[1])\n"
        "hashed = {}\n"
        "for folder in sorted(Path(sys.argv[2]).iterdir()):\n"
        "    if Task.is_valid_dir(folder):\n"
        "        hashed[Task(folder).name] = 'sha256:' + Packager.compute_content_hash(folder)[0]\n"
        "print(json.dumps({'dataset': manifest.dataset.name, 'hashed': hashed,\n"
        "                  'pinned': {t.name: t.digest for t in manifest.tasks}}))\n")
    python = harbor_bin().with_name("python")
    done = subprocess.run([str(python), "-c", script, str(manifest), str(folders)],
                          capture_output=True, text=True, env={**os.environ, **QUIET},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _harbor_run(path: Path, agent: str, jobs: Path, *, probe: str | None = None,
                concurrent: int = 1, plugin: bool = False) -> list[dict]:
    """The trial results of one `harbor run -p path`: offline in Harbor's docker
    environment (see the module docstring), or in taskloom's plugin."""
    jobs.mkdir(parents=True, exist_ok=True)
    out = jobs / agent
    if plugin:
        env = {**os.environ, **QUIET, **plugin_env()}
        environment = ["-e", PLUGIN]
    else:
        overlay = jobs / "no-network.yaml"
        overlay.write_text(COMPOSE_OVERLAY)
        env = {**os.environ, **QUIET, "DOCKER_CONFIG": str(docker_config()),
               "PYTHONPATH": str(AGENTS)}
        environment = ["--extra-docker-compose", str(overlay)]
    chosen = ["-a", agent]
    if probe is not None:
        script = jobs / f"{agent}.sh"
        script.write_text(probe)
        chosen = ["-a", "probe_agent:ProbeAgent", "--ak", f"script={script}"]
    done = subprocess.run([str(harbor_bin()), "run", "-p", str(path), *chosen, *environment,
                           "-o", str(out), "-n", str(concurrent), "-y"],
                          capture_output=True, text=True, env=env, timeout=1800)
    results = sorted(out.glob("*/*/result.json"))
    if not results:
        raise AssertionError(f"harbor wrote no trial result:\n{done.stdout[-3000:]}"
                             f"\n{done.stderr[-3000:]}")
    return [json.loads(result.read_text(encoding="utf-8")) for result in results]
