#!/usr/bin/env bash
# new_mutant.sh NN.K-name "what is wrong": turns your uncommitted edit of solutions/NN_name/ into
# tests/mutants/NN.K-name.patch (first line: "# what is wrong") and restores the solution.
# Commit the solution first: everything uncommitted under solutions/NN_name/ goes into the patch.
# Then: ./usp test --mutants NN.K-name must say "caught".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
id="$1" what="$2" nn="${1:0:2}"
[[ "$id" =~ ^[0-9]{2}\.[0-9]+-[a-z0-9-]+$ ]] || { echo "new_mutant: name it NN.K-what-is-wrong" >&2; exit 2; }
cd "$root"
diff="$(git diff -- "solutions/${nn}_"*)"
[[ -n "$diff" ]] || { echo "new_mutant: no change under solutions/${nn}_*/ to keep" >&2; exit 2; }
{ echo "# $what"; echo "$diff"; } >"tests/mutants/$id.patch"
git checkout -- "solutions/${nn}_"*
echo "tests/mutants/$id.patch"
