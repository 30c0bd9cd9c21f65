#!/usr/bin/env bash
# `sam build`, exactly as the README's deploy step runs it, then checks what it made: every
# function's `.aws-sam/build/<Function>/bootstrap` must be an arm64 (aarch64) ELF executable under
# its size limit (below). Installs what is missing first
# (cargo-lambda and the SAM CLI in .local/tools, the aarch64-unknown-linux-gnu Rust target).
#
# scripts/test.sh runs it in the background, at the lowest CPU priority, beside the tests and
# the end-to-end run (nothing there needs its artifacts): its build (functions/Makefile) has a
# target directory of its own, so neither waits for the other's cargo lock.
#
# Two builds, one script:
#   scripts/sam-build.sh                      # the deploy build: the release profile (fat LTO,
#                                             # one codegen unit), what `sam deploy` ships;
#                                             # every binary under 5 MB (the Lambda package
#                                             # limit we hold the functions to)
#   LINEUP_SAM_BUILD=ci scripts/sam-build.sh  # CI's: the same build without optimisation or
#                                             # LTO (cargo's CARGO_PROFILE_RELEASE_* overrides):
#                                             # it proves that `sam build` builds every function
#                                             # for arm64 through functions/Makefile, in a third
#                                             # of the CPU; its binaries are far larger, so it
#                                             # checks Lambda's own 50 MB upload limit instead
# Both check that every artifact is an arm64 ELF executable. The 5 MB gate belongs to the build
# that is deployed: the README's deploy step runs this script without LINEUP_SAM_BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh
source scripts/steps.sh

# Every function: a folder functions/<name> with a Cargo.toml.
mapfile -t FUNCTIONS < <(for crate in functions/*/Cargo.toml; do basename "$(dirname "$crate")"; done)
# logical_id NAME: its resource in template.yaml (outbox-stream -> OutboxStreamFunction).
logical_id() { echo "$(echo "$1" | sed -E 's/(^|-)([a-z])/\U\2/g')Function"; }
LIMIT=5000000

# The Rust standard library for the Lambda target, installed before `sam build` (cargo-lambda
# would otherwise install it in the middle of the build).
ensure_arm64_target() {
  if rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then return; fi
  echo "==> rustup target add aarch64-unknown-linux-gnu"
  rustup target add aarch64-unknown-linux-gnu
}

# elf_machine FILE: "ELF64 LE <e_machine in hex>" from the header, e.g. "ELF64 LE 00b7" (arm64).
elf_machine() {
  local bytes
  read -ra bytes <<<"$(od -An -v -t x1 -w20 -N 20 "$1")"
  [ "${#bytes[@]}" -eq 20 ] || { echo "not ELF"; return; }
  [ "${bytes[0]}${bytes[1]}${bytes[2]}${bytes[3]}" = 7f454c46 ] || { echo "not ELF"; return; }
  local class=ELF32 data=BE
  [ "${bytes[4]}" = 02 ] && class=ELF64
  [ "${bytes[5]}" = 01 ] && data=LE
  # e_machine is the 16-bit field at offset 18, little-endian here.
  echo "$class $data ${bytes[19]}${bytes[18]}"
}

ensure_lambda_tools
ensure_arm64_target
export SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

case "${LINEUP_SAM_BUILD:-deploy}" in
  deploy) build="release profile" ;;
  ci)
    export CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_LTO=false \
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256
    build="CI's lighter build: release without optimisation or LTO"
    LIMIT=50000000
    ;;
  *) echo "error: LINEUP_SAM_BUILD is deploy or ci, not $LINEUP_SAM_BUILD" >&2; exit 2 ;;
esac
started=$(date +%s)
echo "==> sam build (the ${#FUNCTIONS[@]} functions for arm64, $build; functions/Makefile)"
# Stale artifacts must not pass for new ones.
rm -rf .aws-sam/build
sam build
took=$(($(date +%s) - started))
record_background "$took" "sam build (scripts/sam-build.sh)"
echo "==> sam build took $took s; what it made:"
printf '    %-15s %9s  %s\n' function bytes header
status=0
for function in "${FUNCTIONS[@]}"; do
  artifact=".aws-sam/build/$(logical_id "$function")/bootstrap"
  if [ ! -f "$artifact" ]; then
    echo "error: sam build made no $artifact" >&2
    status=1
    continue
  fi
  size=$(stat -c %s "$artifact")
  machine="$(elf_machine "$artifact")"
  printf '    %-15s %9d  %s\n' "$function" "$size" "$machine"
  if [ "$machine" != "ELF64 LE 00b7" ]; then
    echo "error: $artifact is not an arm64 (aarch64) ELF executable ($machine)" >&2
    status=1
  fi
  if [ "$size" -ge "$LIMIT" ]; then
    echo "error: $artifact is $size bytes, not under $((LIMIT / 1000000)) MB" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || exit 1
echo "==> the ${#FUNCTIONS[@]} artifacts are arm64 executables under $((LIMIT / 1000000)) MB ($build)"
