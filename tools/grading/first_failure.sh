# first_failure LOG ROOT: the first failure a test log names, on one line ("rank 1: test case '...'
# at tests/...: CHECK(...) failed (...)"), from the test main's "usp: first failure on rank r: ..."
# or a rank's "[rank r] fatal: ..." line, with ROOT/ cut from paths; nothing (status 1) if the log
# names none. Sourced by grade_exercises.sh and run_mutants.sh.
first_failure() {
  local line
  line="$(grep -m 1 -oE '(usp: first failure on rank [0-9]+: |\[rank [0-9]+\] fatal: ).*' "$1")" || return 1
  line="${line#usp: first failure on }"
  line="${line#\[}"
  line="${line/\] fatal: /: }"
  echo "${line//$2\//}"
}
