#!/usr/bin/env bash
# `make demo`: cadillac's memory and budget commands on an example home holding the
# real lesson corpus and phase history of the earlier system (403 lessons, 261 rows).
# The build loop is not there yet; when it lands, this demo runs a build instead.
set -euo pipefail
cd "$(dirname "$0")/.."

home=runs/demo-home
rm -rf "$home"
mkdir -p "$home"
cp tests/fixtures/cadillac_corpus/lessons.jsonl "$home/memory.jsonl"
cp tests/fixtures/cadillac_corpus/budget_history.jsonl "$home/phase_budgets.jsonl"
export CADILLAC_HOME="$PWD/$home"

step() {
    printf '\n\033[1m$ %s\033[0m\n' "$*"
    "$@"
}

echo "example home: $CADILLAC_HOME"
step cadillac memory stats
step cadillac memory recall "Build a Flask todo API with SQLite" --limit 5
step cadillac memory recall "Build a Flask todo API with SQLite" --limit 5 --explain
step cadillac memory recall "Build a Flask todo API with SQLite" --limit 5 --scorer seed
step cadillac memory add --type dependency --trigger "flask-sqlalchemy 3 drops the query property" \
    --fix "use db.session.execute(db.select(Model)) instead of Model.query"
step cadillac memory list --tag flask --polarity dont --limit 5
step cadillac budgets --tags python,flask
step cadillac budgets --tags typescript,react
echo
echo "done: the example home is $home (delete it at will)"
