#!/usr/bin/env bash
# expect_failure.sh SECONDS MESSAGE COMMAND...
# Passes when COMMAND exits non-zero within SECONDS and its output contains MESSAGE exactly once
# (one clear message, not one per rank). A hang (timeout) or a zero exit fails.
set -u
limit=$1; message=$2; shift 2
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then echo "expect_failure: command exited 0"; exit 1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "expect_failure: command hung (timeout ${limit}s)"; exit 1; fi
n=$(printf '%s\n' "$out" | grep -cF -- "$message")
if [ "$n" -ne 1 ]; then echo "expect_failure: expected the message '$message' once, saw it $n times"; exit 1; fi
echo "expect_failure: exit $rc with the message once — as expected"
