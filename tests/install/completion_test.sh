#!/usr/bin/env bash
# The bash completion endure writes from its own definition: valid bash, and it completes
# verbs, nested subcommands, a verb's flags and a flag's values as `endure --help` lists them.
# Usage: completion_test.sh COMPLETION_FILE ENDURE_BINARY
set -euo pipefail
file=$1
endure=$2
bash -n "$file"
# shellcheck source=/dev/null
source "$file"

failures=0
# complete_words "LINE": what _endure offers for the last word of `endure LINE` (an empty
# last word when LINE is empty or ends with a space).
complete_words() {
  local words
  read -r -a words <<<"$1"
  [[ -n $1 && $1 != *" " ]] || words+=("")
  COMP_WORDS=(endure "${words[@]}")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _endure || true
  echo "${COMPREPLY[*]:-}"
}
expect() {  # expect "WORDS" "WANTED..." : each wanted word is offered
  local got
  got=" $(complete_words "$1") "
  for w in $2; do
    if [[ $got != *" $w "* ]]; then
      echo "FAIL: endure $1<TAB> offers [$got], not $w" >&2
      failures=$((failures + 1))
    fi
  done
}
expect_none() {  # expect_none "WORDS" "UNWANTED..."
  local got
  got=" $(complete_words "$1") "
  for w in $2; do
    if [[ $got == *" $w "* ]]; then
      echo "FAIL: endure $1<TAB> offers $w" >&2
      failures=$((failures + 1))
    fi
  done
}

# Every verb `endure --help` lists, from an empty word.
verbs=$("$endure" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
[ -n "$verbs" ] || { echo "FAIL: no verbs in endure --help" >&2; exit 1; }
expect "" "$verbs"
expect "describe-c" "describe-cluster describe-cluster-node describe-cluster-event"
expect_none "describe-c" "create-cluster"
expect "create-cluster --w" "--wait --wait-timeout"
expect "create-cluster --" "--cli-input-json --endpoint --output --help"
expect "--output " "json table"
expect "list-clusters --output t" "table"
expect "ckpt " "ls verify prune"
expect "ckpt verify --" "--help"
expect_none "describe-cluster --cluster-name demo " "create-cluster"
# After exec's --, the node's command is bash's own business.
[ -z "$(complete_words "exec --cluster-name demo --node controller-0 -- sr")" ] ||
  { echo "FAIL: completion after exec's --" >&2; failures=$((failures + 1)); }

if ((failures)); then
  echo "completion_test: $failures failures" >&2
  exit 1
fi
echo "completion_test: ok ($(wc -w <<<"$verbs") verbs)"
