# Shared helpers for the scripts in scripts/. Source it; do not run it.
# shellcheck shell=bash
# Variables here are used by the scripts that source this file; commas in -Z/-Wl flags are meant.
# shellcheck disable=SC2034,SC2054

# Repository root (the folder holding this scripts/ folder).
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The toolchain every script uses; keep in step with rust-toolchain.toml.
TOOLCHAIN="1.95.0"

# Cargo's target dir: honour CARGO_TARGET_DIR, default ./target of the repository.
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"

# The three NAS targets, in build order.
AGENT_TARGETS=(
    x86_64-unknown-linux-musl
    aarch64-unknown-linux-musl
    armv7-unknown-linux-musleabihf
)

# Targets rustup cannot fetch a prebuilt std for here: std is always built from rust-src with
# RUSTC_BOOTSTRAP=1 and -Z build-std (see ../docs/DESIGN.md "Cross builds"), for tests too.
BUILD_STD_TARGETS=" armv7-unknown-linux-musleabihf "

# Bare-metal target used to check that proto stays no_std (core built from rust-src).
NO_STD_TARGET="thumbv7em-none-eabihf"

if [[ -t 1 ]]; then
    C_RED=$'\e[31m' C_GREEN=$'\e[32m' C_BOLD=$'\e[1m' C_OFF=$'\e[0m'
else
    C_RED="" C_GREEN="" C_BOLD="" C_OFF=""
fi

log() { printf '%s\n' "${C_BOLD}==> $*${C_OFF}" >&2; }
warn() { printf '%s\n' "${C_RED}warning:${C_OFF} $*" >&2; }
die() {
    printf '%s\n' "${C_RED}error:${C_OFF} $*" >&2
    exit 1
}

# Runs as root or through sudo.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        die "need root (or sudo) for: $*"
    fi
}

# cargo pinned to the project's toolchain whatever the current directory.
pcargo() { cargo "+$TOOLCHAIN" "$@"; }

# Extra cargo arguments for a target: build-std where rustup has no std for it.
# Usage: target_cargo_args TRIPLE  -> prints one argument per line.
target_cargo_args() {
    local triple=$1
    printf '%s\n' --target "$triple"
    if [[ $BUILD_STD_TARGETS == *" $triple "* ]]; then
        printf '%s\n' -Z build-std=std,panic_abort
    fi
}

# Cargo runs with RUSTC_BOOTSTRAP=1 (build-std, the no_std check, the fuzz build) get their own
# target dir: build scripts such as proc-macro2's rerun when RUSTC_BOOTSTRAP changes, and the
# host-side build dependencies are shared per target dir, so mixing would rebuild everything
# on every switch.
BOOTSTRAP_TARGET_DIR="$TARGET_DIR/bootstrap"

# cargo with RUSTC_BOOTSTRAP=1 in its own target dir.
bootstrap_cargo() { RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$BOOTSTRAP_TARGET_DIR" pcargo "$@"; }

# The target dir cargo_for uses for TRIPLE.
target_dir_for() {
    if [[ $BUILD_STD_TARGETS == *" $1 "* ]]; then
        echo "$BOOTSTRAP_TARGET_DIR"
    else
        echo "$TARGET_DIR"
    fi
}

# Runs cargo for TRIPLE: `cargo_for TRIPLE SUBCOMMAND ARGS...`. Sets RUSTC_BOOTSTRAP (and the
# bootstrap target dir) only for build-std targets.
cargo_for() {
    local triple=$1 sub=$2
    shift 2
    local extra
    mapfile -t extra < <(target_cargo_args "$triple")
    if [[ $BUILD_STD_TARGETS == *" $triple "* ]]; then
        bootstrap_cargo "$sub" "${extra[@]}" "$@"
    else
        CARGO_TARGET_DIR="$TARGET_DIR" pcargo "$sub" "${extra[@]}" "$@"
    fi
}

# Release builds of the agent build std from rust-src for every target, in the size-tuned release
# profile (opt-level z, LTO with the agent) and without std's backtrace symbolizer (useless in a
# stripped binary): x86_64 went from 648 to 406 KiB with this. NASPROBE_PREBUILT_STD=1 uses
# rustup's prebuilt std instead where there is one (bigger binaries; a fallback if build-std
# breaks on a toolchain bump).
RELEASE_STD_ARGS=(-Z build-std=std,panic_abort -Z build-std-features=optimize_for_size)

# `cargo build --release` for TRIPLE with ARGS; prints nothing else. The binary lands in
# "$(release_dir_for TRIPLE)/nasprobe-agent" (for the agent).
release_build_for() {
    local triple=$1
    shift
    if [[ ${NASPROBE_PREBUILT_STD:-} == 1 ]]; then
        cargo_for "$triple" build --release "$@"
    else
        bootstrap_cargo build --release --target "$triple" "${RELEASE_STD_ARGS[@]}" "$@"
    fi
}

release_dir_for() {
    if [[ ${NASPROBE_PREBUILT_STD:-} == 1 ]]; then
        echo "$(target_dir_for "$1")/$1/release"
    else
        echo "$BOOTSTRAP_TARGET_DIR/$1/release"
    fi
}

# Runs scripts/setup once per process tree (scripts/test runs it, then its children skip it).
ensure_setup() {
    if [[ ${NASPROBE_SETUP_DONE:-} != 1 ]]; then
        "$REPO_ROOT/scripts/setup"
        export NASPROBE_SETUP_DONE=1
    fi
}
