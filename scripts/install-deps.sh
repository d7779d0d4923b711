#!/usr/bin/env bash
# Install what hyscope needs to build and test, on Debian 12 as root.
# Idempotent: does nothing (no network) when everything is already there.
# Used by the README's commands and by .ci/run.
set -euo pipefail

# System packages. Other parts of hyscope append their packages to this one line.
APT_PACKAGES="clang-19 libomp-19-dev openmpi-bin libopenmpi-dev libclang-dev pkg-config gfortran tmux xvfb xauth x11-apps libgl1-mesa-dri libxkbcommon-x11-0 libotf2-trace-dev otf2-tools mpich libmpich-dev"

say() { echo "install-deps: $*" >&2; }

# --- apt packages: only when something is missing --------------------------
missing=()
for pkg in $APT_PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        say "missing Debian packages: ${missing[*]} (run this script as root to install them)"
        exit 1
    fi
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    say "Debian packages present"
fi

# --- python3 + pyarrow (the outside-client test reads traces with pyarrow) --
if ! command -v python3 >/dev/null 2>&1; then
    say "installing python3"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3 python3-pip
fi
if python3 -c 'import pyarrow' >/dev/null 2>&1; then
    say "pyarrow present ($(python3 -c 'import pyarrow; print(pyarrow.__version__)'))"
else
    if ! python3 -m pip --version >/dev/null 2>&1; then
        say "installing python3-pip"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends python3-pip
    fi
    say "pip install pyarrow"
    # Debian's own python3 is "externally managed" (PEP 668): retry with the override.
    python3 -m pip install -q pyarrow ||
        python3 -m pip install -q --break-system-packages pyarrow
    python3 -c 'import pyarrow' || { say "pyarrow still not importable by $(command -v python3)"; exit 1; }
fi

# --- NVTX v3 C headers (NVIDIA, header-only, Apache-2.0 WITH LLVM-exception) --
# The NVTX tests build NVTX-annotated programs. Debian 12 packages no NVTX
# headers; NVIDIA publishes them on crates.io in the crate nvtx-sys
# (c/include/nvtx3). Fetched with cargo (below, after cargo is checked) into
# /usr/local/include/nvtx3, where every compiler looks.
NVTX_SYS_VERSION=2.0.0
NVTX_INCLUDE=/usr/local/include/nvtx3
install_nvtx_headers() {
    if [[ -f $NVTX_INCLUDE/nvToolsExt.h ]]; then
        say "NVTX headers present ($NVTX_INCLUDE)"
        return
    fi
    if [[ $(id -u) -ne 0 ]]; then
        say "NVTX headers missing: run this script as root to install them into $NVTX_INCLUDE"
        exit 1
    fi
    say "fetching the NVTX headers (crate nvtx-sys $NVTX_SYS_VERSION)"
    local tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/src"
    : >"$tmp/src/lib.rs"
    printf '[package]\nname = "nvtx-headers"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nnvtx-sys = "=%s"\n' \
        "$NVTX_SYS_VERSION" >"$tmp/Cargo.toml"
    (cd "$tmp" && cargo fetch -q)
    local manifest
    manifest=$(cd "$tmp" && cargo metadata -q --format-version 1 |
        grep -o "\"manifest_path\":\"[^\"]*/nvtx-sys-$NVTX_SYS_VERSION/Cargo.toml\"" | head -n 1 | cut -d'"' -f4)
    rm -rf "$tmp"
    local src=${manifest%/Cargo.toml}/c/include/nvtx3
    [[ -f $src/nvToolsExt.h ]] || { say "nvtx-sys $NVTX_SYS_VERSION has no $src/nvToolsExt.h"; exit 1; }
    mkdir -p "$(dirname "$NVTX_INCLUDE")"
    cp -r "$src" "$NVTX_INCLUDE"
    say "NVTX headers installed into $NVTX_INCLUDE"
}

# --- Rust toolchain ---------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        say "cargo is in \$HOME/.cargo/bin but not on PATH: add it (export PATH=\$HOME/.cargo/bin:\$PATH)"
    else
        say "cargo not found: install a stable Rust toolchain (>= 1.95), e.g. with rustup"
    fi
    exit 1
fi
say "cargo present ($(cargo --version))"
install_nvtx_headers
