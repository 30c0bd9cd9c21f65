# Step timings for scripts/test.sh's closing summary (sourced by it and by scripts/lambda-local.sh;
# not run on its own). `step NAME` ends the step before it, if any, and starts NAME; `step_end`
# ends the last one. Each finished step is a line "SECONDS<TAB>NAME" in $LINEUP_STEP_TIMES, when
# that is set (scripts/test.sh sets it; the scripts run alone just print their steps).

STEP_NAME=""
STEP_STARTED=0

step() {
  step_end
  STEP_NAME="$1"
  STEP_STARTED=$(date +%s)
  echo "==> $STEP_NAME"
}

step_end() {
  [ -n "$STEP_NAME" ] || return 0
  if [ -n "${LINEUP_STEP_TIMES:-}" ]; then
    printf '%s\t%s\n' "$(($(date +%s) - STEP_STARTED))" "$STEP_NAME" >>"$LINEUP_STEP_TIMES"
  fi
  STEP_NAME=""
}

# record_background SECONDS NAME: a step that ran beside the others (listed, not summed).
record_background() {
  if [ -n "${LINEUP_STEP_TIMES:-}" ]; then
    printf '%s\t(background) %s\n' "$1" "$2" >>"$LINEUP_STEP_TIMES"
  fi
}

# print_step_times: the table of every step recorded so far, and the total of those that ran one
# after another.
print_step_times() {
  [ -s "${LINEUP_STEP_TIMES:-}" ] || return 0
  echo "==> time per step (seconds)"
  awk -F'\t' '{ printf "%6d  %s\n", $1, $2; if ($2 !~ /^\(background\)/) total += $1 }
    END { printf "%6d  total, one after another\n", total }' "$LINEUP_STEP_TIMES"
}
