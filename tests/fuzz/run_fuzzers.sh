#!/usr/bin/env bash
# Runs stoke's libFuzzer targets (docs/FUZZING.md): for each target, first its inputs (every
# seed in tests/fuzz/corpus/TARGET and every regression input in tests/fuzz/reproducers/TARGET,
# each of which must run clean), then SECONDS of fuzzing from those seeds.
#
#   tests/fuzz/run_fuzzers.sh [--inputs-only] [-j N] BUILD_DIR SECONDS [TARGET...]
#
#   BUILD_DIR      the fuzz build (cmake --preset fuzz; cmake --build --preset fuzz): the
#                  binaries are BUILD_DIR/bin/stoke_TARGET_fuzzer
#   SECONDS        fuzzing time per target (-max_total_time); 0 runs the inputs only
#   TARGET...      default: every tests/fuzz/*_fuzzer.cpp
#   --inputs-only  the same as SECONDS 0 (what `ctest` in the fuzz build runs)
#   -j N           targets fuzzed at once (default 1); each uses one core
#
# Every run uses -timeout=5 (shard_list: 15, see limits_for) and -rss_limit_mb=2048 (also the
# largest single allocation), so a hang or a memory blow-up is a finding like a crash. Crash inputs go to
# BUILD_DIR/fuzz-artifacts/TARGET/; the grown corpus stays in BUILD_DIR/fuzz-corpus/TARGET/
# (reused by the next run; never committed). Exits 1 when any input or any fuzzing run failed,
# after running all of them; 2 for a usage error.
set -u

here="$(cd "$(dirname "$0")" && pwd)"
jobs=1
inputs_only=0
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --inputs-only) inputs_only=1 ;;
    -j) jobs="${2:-}"; shift ;;
    -j*) jobs="${1#-j}" ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_fuzzers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
build="${positional[0]:-}"
seconds="${positional[1]:-}"
targets=("${positional[@]:2}")
if [ -z "$build" ] || ! [[ "$seconds" =~ ^[0-9]+$ ]] || ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: run_fuzzers.sh [--inputs-only] [-j N] BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
[ $inputs_only -eq 0 ] || seconds=0
build="$(cd "$build" && pwd)" || exit 2
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/*_fuzzer.cpp; do
    t="$(basename "$f" _fuzzer.cpp)"
    targets+=("$t")
  done
fi

# The limits a target runs under. shard_list's legitimate worst case, a list file of 10^6
# relative names (the cap), takes about 3.5 s of CPU under ASan, too close to 5 s on a busy
# machine; a hang there still shows at 15 s.
limits_for() {
  case "$1" in
    shard_list) echo -timeout=15 -rss_limit_mb=2048 ;;
    *) echo -timeout=5 -rss_limit_mb=2048 ;;
  esac
}
logs="$build/fuzz-logs"
mkdir -p "$logs"

# Runs one input file through a target: pass/fail, with the reason on failure.
run_input() {
  local bin="$1" file="$2" log="$3" limits
  read -r -a limits <<<"$(limits_for "$4")"
  if ! timeout 120 "$bin" "${limits[@]}" "$file" >"$log" 2>&1; then
    local why
    why="$(grep -m1 -E 'ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|fuzz check failed|terminate called|ALARM' "$log")"
    [ -n "$why" ] || why="exit status $? (see $log)"
    echo "FAIL  $file: $why"
    return 1
  fi
  return 0
}

# The inputs of one target: its seeds (one process over the folder) and each regression input
# (one process each, so that every failing one is named).
check_inputs() {
  local t="$1" bin="$build/bin/stoke_${1}_fuzzer" failed=0 n=0 limits
  read -r -a limits <<<"$(limits_for "$t")"
  if [ -d "$here/corpus/$t" ]; then
    if ! timeout 300 "$bin" "${limits[@]}" -runs=0 "$here/corpus/$t" >"$logs/$t.seeds.log" 2>&1; then
      echo "FAIL  tests/fuzz/corpus/$t: a seed fails (see $logs/$t.seeds.log)"
      failed=1
    fi
  fi
  if [ -d "$here/reproducers/$t" ]; then
    for f in "$here/reproducers/$t"/*; do
      [ -f "$f" ] || continue
      n=$((n + 1))
      run_input "$bin" "$f" "$logs/$t.reproducer.$(basename "$f").log" "$t" || failed=1
    done
  fi
  local seeds
  seeds="$(find "$here/corpus/$t" -type f 2>/dev/null | wc -l)"
  if [ $failed -eq 0 ]; then
    echo "ok    $t: $seeds seeds, $n regression inputs"
  fi
  return $failed
}

# SECONDS of fuzzing one target; prints one summary line.
fuzz_target() {
  local t="$1" bin="$build/bin/stoke_${1}_fuzzer"
  local work="$build/fuzz-corpus/$t" art="$build/fuzz-artifacts/$t" limits
  read -r -a limits <<<"$(limits_for "$t")"
  mkdir -p "$work" "$art"
  local dict=()
  [ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
  local log="$logs/$t.fuzz.log"
  timeout $((seconds + 120)) "$bin" "${limits[@]}" -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "$work" "$here/corpus/$t" \
    >"$log" 2>&1
  local rc=$?
  local execs per_s cov
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  per_s="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)"
  if [ $rc -eq 0 ]; then
    printf 'ok    %-14s %4ss  %9s execs  %7s exec/s  %s  corpus %s\n' "$t" "$seconds" \
      "${execs:-?}" "${per_s:-?}" "${cov:-?}" "$(find "$work" -type f | wc -l)"
    return 0
  fi
  local what
  what="$(grep -m1 -E '^==[0-9]+== ?ERROR|runtime error|fuzz check failed|ALARM' "$log")"
  echo "FAIL  $t after fuzzing: ${what:-exit status $rc}"
  grep -E '^(artifact_prefix|Test unit written to)' "$log" | sed 's/^/      /'
  echo "      log: $log"
  echo "      keep it: cp ARTIFACT tests/fuzz/reproducers/$t/<what-it-triggers>"
  return 1
}

status=0
for t in "${targets[@]}"; do
  if [ ! -x "$build/bin/stoke_${t}_fuzzer" ]; then
    echo "FAIL  $t: $build/bin/stoke_${t}_fuzzer is not built (cmake --build --preset fuzz)"
    status=1
  fi
done
[ $status -eq 0 ] || exit 1

echo "== inputs (seeds and regression inputs), each with $(limits_for any) (shard_list: $(limits_for shard_list))"
for t in "${targets[@]}"; do check_inputs "$t" || status=1; done

if [ "$seconds" -gt 0 ]; then
  echo "== fuzzing ${seconds}s per target, $jobs at a time"
  results="$(mktemp -d)"
  running=0
  for t in "${targets[@]}"; do
    (fuzz_target "$t" >"$results/$t" 2>&1; echo $? >"$results/$t.rc") &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
      wait -n
      running=$((running - 1))
    fi
  done
  wait
  for t in "${targets[@]}"; do
    cat "$results/$t"
    [ "$(cat "$results/$t.rc")" = 0 ] || status=1
  done
  rm -rf "$results"
fi
exit $status
