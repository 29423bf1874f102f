#!/usr/bin/env bash
# Check the `main` patch series and the exported tasks on lmms-eval main, at the commit the series is for
# (`stack.MAIN_COMMIT`). CI has no network, so this needs a local clone of lmms-eval (any clone that has the commit):
#
#   scripts/check_lmms_eval_main.sh /path/to/lmms-eval
#
# Uses this repository's .venv (lmms-eval 0.7.3's dependencies), with PYTHONPATH pointing at each checkout. Steps:
#   1. lmms-eval's own test/ at the commit, as it is (the baseline);
#   2. `git am -3` of patch_series/main/*.patch, then test/ again;
#   3. in a fresh checkout, `export-upstream --tree` (it picks the main series by itself), `git am` of it, then the
#      exported tests with lmms_tasks made unimportable, lmms-eval's test/ again, and the end-to-end comparison of
#      every task and group through main's CLI (no --include_path) with the same runs through --include_path.
# It fails when the series does not apply, when a test that passed at the baseline fails after it, or when an
# exported test or the comparison fails. Checkouts are made as git worktrees in a temporary folder, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
clone=$(cd "${1:?usage: $0 /path/to/lmms-eval-clone}" && pwd)
repo=$(pwd)
py="$repo/${LMMS_TASKS_VENV:-.venv}/bin/python"
commit=$("$py" -c 'from lmms_tasks.utils.commands.upstream.stack import MAIN_COMMIT; print(MAIN_COMMIT)')
work=$(mktemp -d)
git="git -c user.name=lmms-tasks -c user.email=lmms-tasks@example.invalid -c commit.gpgsign=false"
cleanup() {
  for tree in base series exported; do
    [ -d "$work/$tree" ] && git -C "$clone" worktree remove --force "$work/$tree" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/hide/lmms_tasks"
echo 'raise ImportError("lmms_tasks is hidden: the exported tasks must not import it")' >"$work/hide/lmms_tasks/__init__.py"

failures() { # the FAILED/SUBFAILED/ERROR lines of a pytest log, without the worktree's path (a subtest's name may hold it), sorted
  grep -E '^(SUBFAILED|FAILED|ERROR)[ (]' "$1" | sed -E "s/ - .*//; s#$work/[a-z]+/##g" | sort || true
}
lmms_eval_tests() { # $1: checkout, $2: log; lmms-eval's test/ on 2 workers (its own failures do not stop us here)
  (cd "$1" && PYTHONPATH="$work/hide:$1" "$py" -m pytest -q -p no:cacheprovider -p no:randomly -n 2 test >"$2" 2>&1) || true
  echo "  $(basename "$2" .log): $(tail -n 1 "$2")"
}

echo "lmms-eval $commit (from $clone)"
for tree in base series exported; do
  git -C "$clone" worktree add -q --detach "$work/$tree" "$commit"
done

echo "1. the baseline"
lmms_eval_tests "$work/base" "$work/base.log"

echo "2. the main patch series"
(cd "$work/series" && $git am -q -3 "$repo"/utils/commands/upstream/patch_series/main/*.patch)
lmms_eval_tests "$work/series" "$work/series.log"

echo "3. the exported tasks on the series"
"$py" -m lmms_tasks export-upstream "$work/exported" --tree >"$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
(cd "$work/exported" && $git am -q lmms_tasks_patches/*.patch && rm -r lmms_tasks_patches)
exported_tests=$(cd "$work/exported" && git status --porcelain --untracked-files=normal test | sed -E 's/^\?\? //; s#/$##')
(cd "$work/exported" && PYTHONPATH="$work/hide:$work/exported" "$py" -m pytest -q -p no:cacheprovider -p no:randomly -n 2 $exported_tests) >"$work/exported_tests.log" 2>&1 \
  || { tail -n 40 "$work/exported_tests.log"; echo "FAIL: the exported tests"; exit 1; }
echo "  exported tests ($(echo $exported_tests)): $(tail -n 1 "$work/exported_tests.log")"
lmms_eval_tests "$work/exported" "$work/exported.log"
LMMS_TASKS_UPSTREAM_SITE="$work/exported" "$py" -m pytest -q -p no:cacheprovider -p no:randomly -s \
  "tests/upstream/test_export_real.py::test_fixture_runs_give_the_same_metrics_as_through_include_path" >"$work/e2e.log" 2>&1 \
  || { tail -n 40 "$work/e2e.log"; echo "FAIL: the end-to-end comparison"; exit 1; }
echo "  end to end through main's CLI: $(grep -o 'compared [0-9]* metric values in [0-9]* task/group result sections' "$work/e2e.log")"

status=0
for after in series exported; do
  new=$(comm -13 <(failures "$work/base.log") <(failures "$work/$after.log"))
  if [ -n "$new" ]; then
    echo "FAIL: failing after the $after step and not at the baseline:"
    echo "$new"
    status=1
  fi
done
echo "failing at the baseline too (lmms-eval's own, under 0.7.3's dependencies): $(failures "$work/base.log" | wc -l)"
failures "$work/base.log" | sed 's/^/  /'
exit $status
