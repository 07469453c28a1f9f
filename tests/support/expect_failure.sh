#!/usr/bin/env bash
# expect_failure.sh [--at-least-once] SECONDS MESSAGE COMMAND...
# Passes when COMMAND exits non-zero within SECONDS and its output contains MESSAGE exactly once
# (one clear message, not one per rank). A hang (timeout) or a zero exit fails. With
# --at-least-once, MESSAGE may come from several ranks (each watchdog that fires says what it
# waited for, and several ranks may wait on the same late one).
set -u
at_least_once=0
if [ "${1:-}" = "--at-least-once" ]; then at_least_once=1; shift; fi
limit=$1; message=$2; shift 2
start_ns=$(date +%s%N)
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1); rc=$?
took_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then echo "expect_failure: command exited 0"; exit 1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "expect_failure: command hung (timeout ${limit}s)"; exit 1; fi
n=$(printf '%s\n' "$out" | grep -cF -- "$message")
if [ "$at_least_once" -eq 1 ]; then
  if [ "$n" -lt 1 ]; then echo "expect_failure: expected the message '$message', saw it $n times"; exit 1; fi
elif [ "$n" -ne 1 ]; then
  echo "expect_failure: expected the message '$message' once, saw it $n times"; exit 1
fi
printf 'expect_failure: exit %d after %d.%03d s with the message (%d times) — as expected\n' "$rc" $((took_ms / 1000)) $((took_ms % 1000)) "$n"
