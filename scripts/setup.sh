#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for kiln (installs only missing packages) and builds it.
#
# Usage (as root, from anywhere):  scripts/setup.sh [--models] [--no-build]
#   --models    also install python3-torch/python3-torchvision (large) for scripts/gen_models.sh
#               and onnxruntime-node (npm, package.json) for the tests against ONNX Runtime
#   --no-build  install packages only
# Set KILN_JOBS=N to limit build parallelism.
# Idempotent: packages already installed are left alone, `apt-get update` runs only when
# something is missing, and the build is incremental.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want_models=0
build=1
for arg in "$@"; do
  case "$arg" in
    --models) want_models=1 ;;
    --no-build) build=0 ;;
    -h | --help)
      sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup.sh: unknown argument '$arg' (expected --models or --no-build)" >&2
      exit 2
      ;;
  esac
done

packages=(build-essential cmake ninja-build pkg-config git llvm-14-tools libprotobuf-dev protobuf-compiler
  libonnx-dev libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev python3-onnx
  python3-numpy clang libclang-rt-14-dev libbenchmark-dev qemu-user)
# Node 20 (e.g. from NodeSource) may already be installed; Debian's nodejs/npm would conflict.
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
if [[ $want_models == 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  if [[ $status != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  if [[ $(id -u) != 0 ]]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log="$(mktemp /tmp/kiln-setup-apt.XXXXXX.log)"
  # Wait for another apt/dpkg (e.g. a background install) instead of failing on its lock.
  apt_opts=(-o DPkg::Lock::Timeout=1800)
  if ! { apt-get "${apt_opts[@]}" update &&
    apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"; } \
    >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "setup.sh: apt-get failed (full log: $log)" >&2
    exit 1
  fi
  rm -f "$log"
else
  echo "setup.sh: all ${#packages[@]} packages already installed"
fi

# ONNX Runtime, the oracle of the model tests: its install script downloads, which cannot work
# here; the x64 CPU library inside the package works without it.
if [[ $want_models == 1 ]] && [[ ! -f $repo/node_modules/onnxruntime-node/package.json ]]; then
  echo "setup.sh: npm install (onnxruntime-node, see package.json)"
  (cd "$repo" && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
fi

if [[ $build == 1 ]]; then
  cd "$repo"
  echo "setup.sh: configuring and building in $repo/build"
  # Release by default (no debug info: a third faster to build); KILN_BUILD_TYPE=RelWithDebInfo
  # for a debuggable build.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${KILN_BUILD_TYPE:-Release}" \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" >/dev/null
  ninja -C build ${KILN_JOBS:+-j "$KILN_JOBS"}
  echo "setup.sh: done; run the tests with: ctest --test-dir build --output-on-failure"
fi
