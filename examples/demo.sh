#!/usr/bin/env bash
# `make demo`: a real `cadillac build`, offline. The model's turns are a recorded session
# (examples/wordfreq/session.llm.jsonl, written by hand as a scripted policy and recorded
# through a real build); everything else runs for real: the workspace, the tools, the
# sandboxed commands, the phase checks, the tests, reflection, lessons and budgets; a note
# told with `memory remember` is pinned into every phase's prompt. Then
# `cadillac iterate` makes the next version of the project (a recorded session too):
# a change on its own branch, with the project's tests kept, and a patch.
# To run the same task on a real model, replace the --model value, e.g.
#   cadillac build "$TASK" --model anthropic/claude-sonnet-4-5
set -euo pipefail
cd "$(dirname "$0")/.."

home=runs/demo-home
rm -rf "$home"
mkdir -p "$home"
cp tests/fixtures/cadillac_corpus/lessons.jsonl "$home/memory.jsonl"
cp tests/fixtures/cadillac_corpus/budget_history.jsonl "$home/phase_budgets.jsonl"
export CADILLAC_HOME="$PWD/$home"
export CADILLAC_GLOBAL_DIR="$PWD/$home/global"  # the demo reads none of your global notes
TASK=$(python -c 'import sys; sys.path.insert(0, "examples/wordfreq"); import policy; print(policy.TASK)')

step() {
    printf '\n\033[1m$ %s\033[0m\n' "$*"
    "$@"
}

echo "example home: $CADILLAC_HOME (seeded with 403 real lessons and 261 budget rows)"
step cadillac memory recall "$TASK" --limit 5
step cadillac memory remember "Command-line tools print errors as one line on stderr and exit 1" \
    --name cli-errors --type convention
step cadillac memory notes
step cadillac build "$TASK" --model "replay:examples/wordfreq/session.llm.jsonl"
run_id=$(cadillac runs list --json | python -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
step cadillac runs list
step ls "$home/runs/$run_id" "$home/runs/$run_id/workspace"
step "$home/runs/$run_id/workspace/.venv/bin/python" "$home/runs/$run_id/workspace/wordfreq.py" \
    "$home/runs/$run_id/workspace/sample.txt" --top 3
ITERATE=$(python -c 'import sys; sys.path.insert(0, "examples/wordfreq"); import policy; print(policy.ITERATE)')
step cadillac iterate "$run_id" "$ITERATE" --model "replay:examples/wordfreq/iterate.llm.jsonl"
next_id=$(cadillac runs list --json | python -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
step cat "$home/runs/$next_id/changes.patch"
step "$home/runs/$next_id/workspace/.venv/bin/python" "$home/runs/$next_id/workspace/wordfreq.py" \
    "$home/runs/$next_id/workspace/sample.txt" --top 3 --min-length 4
step cadillac index search "count words" --path "$home/runs/$next_id/workspace"
step cadillac memory stats
step cadillac budgets --tags python
echo
echo "done: the build is in $home/runs/$run_id, its next version (iterate) in $home/runs/$next_id"
