#!/usr/bin/env bash
# usp_setup_offline.sh SOURCE_DIR BUILD_DIR: ./usp setup where apt-get cannot reach the network
# (an apt-get first on PATH that always fails, as offline):
#   - with everything present (BUILD_DIR's configure found every library) it succeeds without
#     calling apt-get at all;
#   - with a library missing (USP_SETUP_PRETEND_MISSING=catch2) it ends non-zero with one message
#     naming it and the variable that points the build at it; as root, after apt-get's failure
#     was said and passed over.
set -euo pipefail
(($# == 2)) || { echo "usage: usp_setup_offline.sh SOURCE_DIR BUILD_DIR" >&2; exit 2; }
src="$1" build="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$work/bin"
cat >"$work/bin/apt-get" <<'APT'
#!/bin/sh
echo "apt-get $*" >>"$(dirname "$0")/../apt-get.calls"
echo "E: Temporary failure resolving 'deb.debian.org'" >&2
exit 100
APT
chmod +x "$work/bin/apt-get"
setup() { env -u USP_SETUP_DRY_RUN PATH="$work/bin:$PATH" USP_BUILD_DIR="$build" "$@" "$src/usp" setup 2>&1; }

out="$(setup)" || { echo "$out"; fail "with everything present, ./usp setup failed offline"; }
echo "$out"
[[ ! -e "$work/apt-get.calls" ]] || fail "apt-get was called although nothing is missing: $(cat "$work/apt-get.calls")"

rc=0
out="$(setup USP_SETUP_PRETEND_MISSING=catch2)" || rc=$?
echo "$out"
((rc != 0)) || fail "setup succeeded with Catch2 missing and apt-get offline"
grep -qF "Catch2 2.x: CMAKE_PREFIX_PATH=<its prefix>" <<<"$out" || fail "the message does not say how to point the build at Catch2"
(($(grep -c "^setup: missing:" <<<"$out") >= 1)) || fail "no 'setup: missing:' line"
if [[ "$(id -u)" == 0 ]]; then
  grep -qF "apt-get update failed (no network?)" <<<"$out" || fail "apt-get update's failure was not said"
  grep -qF "apt-get install" "$work/apt-get.calls" || fail "apt-get install was not tried after the failed update"
fi
echo "usp setup offline: nothing asked of apt-get when nothing is missing; one message when something is"
