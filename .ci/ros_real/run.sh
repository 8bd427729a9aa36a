#!/usr/bin/env bash
# The real-ROS tier (`make test-ros-real`, run by .ci/run after `make test`): the README's "On a
# real arm" path, run the way a user runs it, against an emulated ROS 2 Jazzy install.
#
#  1. builds (once; cached by its inputs) the underlay ../shared/ros2-real/build-underlay.sh
#     makes: the Jazzy wheels + launch, launch_ros, ros2cli, moveit_msgs built from source;
#  2. copies this repository into a fresh colcon workspace as a user's clone has it (tracked
#     files plus untracked, not ignored ones: during development uncommitted changes are what
#     is tested; in CI the clone is fresh and this is HEAD);
#  3. runs the README's build command verbatim (`python -m colcon build`: the underlay's venv
#     Python stands in for the user's venv of the README);
#  4. `ros2 launch` with the simulated arm, the demo world (launch argument world_file; the
#     shipped parameter file loads no world) and without robot_state_publisher (not installable
#     here), then .ci/ros_real/probe.py from a separate process (and the README's
#     `ros2 topic echo --once /collision_checker/clearance ...`): clearance tables arrive, a
#     moveit_msgs CollisionObject ADD changes the table and REMOVE restores it, a PlanMotion goal
#     succeeds and a DisplayTrajectory is published, the velocity filter stops the arm at the
#     post; the nodes' start-up logs must show their kernels loaded, not compiled (build time);
#     Before the probe, `ros2 param set /collision_checker point_cloud_topics ...` (the README's
#     command) points the checker at the probe's camera cloud (its frame from a tf2 static
#     transform); after it, the README's other ros2 commands verbatim: `ros2 action send_goal`
#     (PlanMotion), `ros2 service call` (check_collision, set_protection off and on),
#     `ros2 param set /velocity_filter acceleration_limits "[5.0]"` (then `ros2 param get`),
#     `ros2 param describe` of an empty list parameter (a string array, not a byte array), and
#     `ros2 param dump /velocity_filter > velocity_filter.yaml`, whose file (no null values) then
#     starts a velocity_filter without a parameter error (the dump-edit-reuse workflow; the same
#     node name in a ROS domain of its own);
#  5. SIGINT to `ros2 launch` (Ctrl-C): every node ends cleanly (exit 0, no traceback) and
#     launch exits 0;
#  6. `colcon test` runs the package's test suite (with moveit_msgs importable: the tests that
#     use the real messages run) and `colcon test-result --verbose` reports it.
#
# Env: SHARED (default ../shared), ROS_REAL_WORK (work folder; default a new temporary one,
# removed on success), KEEP=1 keeps it, ROS_REAL_DOMAIN_ID (default: random 1..101). Exit
# status non-zero on any failure; the last lines sum up the timings.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
PROBE=$ROOT/.ci/ros_real/probe.py
t_start=$SECONDS
say() { printf '\n== ros-real: %s\n' "$*"; }
die() { printf '\n== ros-real: FAILED: %s\n' "$*" >&2; exit 1; }
timing=()

[ -f "$SHARED/ros2-real/build-underlay.sh" ] \
  || die "$SHARED/ros2-real/build-underlay.sh not found (set SHARED=<shared folder>)"

# ---------------------------------------------------------------------- 1. underlay
say "underlay (../shared/ros2-real/build-underlay.sh; cached)"
t0=$SECONDS
underlay_log=$(mktemp)
if ! bash "$SHARED/ros2-real/build-underlay.sh" "" "$ROOT" 2>&1 | tee "$underlay_log" | tail -n 3; then
  cat "$underlay_log"; die "building the underlay failed"
fi
UNDERLAY=$(sed -n 's/^use it with:  source \(.*\)\/setup\.bash$/\1/p' "$underlay_log" | tail -1)
rm -f "$underlay_log"
[ -f "$UNDERLAY/setup.bash" ] || die "no underlay setup.bash (parsed: '$UNDERLAY')"
timing+=("underlay $((SECONDS - t0)) s")

# ---------------------------------------------------------------------- 2. workspace
WORK=${ROS_REAL_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/robot_collision-ros-real.XXXXXX")}
mkdir -p "$WORK"
WS=$WORK/ws
rm -rf "$WS"
mkdir -p "$WS/src/robot_collision"
say "workspace $WS (the repository copied in as a user's clone)"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
   | python3 -c 'import os, sys; sys.stdout.buffer.write(b"\0".join(
       p for p in sys.stdin.buffer.read().split(b"\0") if p and os.path.lexists(p)))' \
   | tar --null -T - -cf -) | tar -xf - -C "$WS/src/robot_collision"

# ROS environment of this run: its own domain (concurrent runs), logs in the work folder.
export ROS_DOMAIN_ID=${ROS_REAL_DOMAIN_ID:-$((RANDOM % 101 + 1))} ROS_LOG_DIR=$WORK/ros_log
# nothing from the caller's environment (a sourced workspace, the project venv)
unset COLCON_PREFIX_PATH AMENT_PREFIX_PATH CMAKE_PREFIX_PATH PYTHONPATH VIRTUAL_ENV
# shellcheck disable=SC1091
source "$UNDERLAY/setup.bash"
cd "$WS"

# ---------------------------------------------------------------------- 3. colcon build
say "colcon build (the README's command, verbatim)"
t0=$SECONDS
python -m colcon build --packages-select robot_collision_interfaces robot_collision \
  || { tail -n 40 log/latest_build/*/stdout_stderr.log; die "colcon build failed"; }
t_build=$((SECONDS - t0))
timing+=("colcon build $t_build s")
grep -h "robot_collision: kernels compiled\|compiled kernels in" \
  log/latest_build/robot_collision/stdout_stderr.log || true
set +u
# shellcheck disable=SC1091
source install/setup.bash
set -u

# ---------------------------------------------------------------------- 4. launch + probe
say "ros2 launch (mock arm, no robot_state_publisher) + probe (ROS_DOMAIN_ID=$ROS_DOMAIN_ID)"
LAUNCH_LOG=$WORK/launch.log
# ros2 launch in the background, in its own process group (set -m), with SIGINT at its default
# disposition: bash starts background jobs of a non-interactive shell with SIGINT ignored (see
# the shared README), and a caller that was itself started in the background (nohup, `cmd &`)
# passes an ignored SIGINT down, which bash cannot undo. The python3 line resets it and execs
# the command (a Python started with SIGINT ignored keeps ignoring it).
set -m
launch_t0=$(date +%s.%N)
python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' \
ros2 launch robot_collision robot_collision.launch.py use_mock_hardware:=true use_robot_state_publisher:=false world_file:=package://robot_collision/config/demo_world.yaml > "$LAUNCH_LOG" 2>&1 &
LAUNCH_PID=$!
set +m
stop_launch() { kill -INT -- -"$LAUNCH_PID" 2>/dev/null || true; }
trap 'stop_launch; sleep 3; kill -KILL -- -"$LAUNCH_PID" 2>/dev/null || true' EXIT
fail=()
# cli NAME REGEX COMMAND...: a user's ros2 command (verbatim from the README); passes when it
# exits 0 and its output matches REGEX (output in $WORK/cli_NAME.txt)
cli() {
  local name=$1 expect=$2 rc=0
  shift 2
  timeout 180 "$@" > "$WORK/cli_$name.txt" 2>&1 || rc=$?
  if [ "$rc" = 0 ] && grep -qE "$expect" "$WORK/cli_$name.txt"; then
    echo "ros2 CLI: PASS $name: $(grep -E "$expect" "$WORK/cli_$name.txt" | head -1 | cut -c1-160)"
  else
    echo "ros2 CLI: FAIL $name (exit $rc; expected /$expect/):"
    tail -n 25 "$WORK/cli_$name.txt" | sed 's/^/    /'
    fail+=("ros2 CLI: $name")
  fi
}
# the README's camera step: the checker takes the probe's cloud (the node must be up first)
clouds_set=0
for _ in $(seq 60); do
  if timeout 60 ros2 param set /collision_checker point_cloud_topics "['/ci_camera/points']" \
       > "$WORK/cli_point_cloud_topics.txt" 2>&1 \
     && grep -q "Set parameter successful" "$WORK/cli_point_cloud_topics.txt"; then
    clouds_set=1; break
  fi
  sleep 2
done
if [ "$clouds_set" = 1 ]; then
  echo "ros2 CLI: PASS point_cloud_topics: $(cat "$WORK/cli_point_cloud_topics.txt")"
else
  cat "$WORK/cli_point_cloud_topics.txt"; fail+=("ros2 param set point_cloud_topics failed")
fi
probe_rc=0
python "$PROBE" --since "$launch_t0" --json "$WORK/probe.json" || probe_rc=$?
[ "$probe_rc" = 0 ] || fail+=("probe checks failed (see above)")
# the README's second-shell command, verbatim (it starts the ros2 daemon: stopped below; the
# type is given because a daemon that has just started may not have discovered the topic yet)
echo_rc=0
timeout 60 ros2 topic echo --once /collision_checker/clearance robot_collision_interfaces/msg/ClearanceTable \
  > "$WORK/echo.txt" 2>&1 \
  || echo_rc=$?
if [ "$echo_rc" = 0 ] && grep -q "min_distance:" "$WORK/echo.txt"; then
  echo "ros2 topic echo --once /collision_checker/clearance: $(grep -c "robot_body:" \
    "$WORK/echo.txt") rows, $(grep "min_distance:" "$WORK/echo.txt")"
else
  cat "$WORK/echo.txt"; fail+=("ros2 topic echo --once /collision_checker/clearance failed")
fi
# the README's ros2 commands, verbatim (cwd: the workspace)
cli plan_motion "Goal finished with status: SUCCEEDED" ros2 action send_goal /planner/plan_motion robot_collision_interfaces/action/PlanMotion "{joint_names: [joint1, joint2, joint3, joint4, joint5, joint6, joint7], goal_positions: [-1.0, 0.7, 0.0, 1.8, 0.0, 0.64, 0.0], time_limit: 10.0}"
cli check_collision "success=True" ros2 service call /collision_checker/check_collision robot_collision_interfaces/srv/CheckCollision "{joint_names: [joint1, joint2, joint3, joint4, joint5, joint6, joint7], positions: [0.0, 0.5, 0.0, 1.7, 0.0, 0.9, 0.0]}"
cli protection_off "success=True" ros2 service call /velocity_filter/set_protection robot_collision_interfaces/srv/SetProtection "{group: wrist, enabled: false}"
cli protection_on "success=True" ros2 service call /velocity_filter/set_protection robot_collision_interfaces/srv/SetProtection "{group: wrist, enabled: true}"
cli acceleration_limits "Set parameter successful" ros2 param set /velocity_filter acceleration_limits "[5.0]"
cli acceleration_limits_get "5\.0" ros2 param get /velocity_filter acceleration_limits
cli describe_empty_list "Type: string array" ros2 param describe /velocity_filter skip_pairs
# dump, edit, reuse: the file must hold no null (a node started from it logged an ERROR) and
# start a velocity_filter; the edit moves its section to the namespace the copy runs in
# (/dump_check: its own topics, beside the running system)
dump_rc=0
timeout 60 ros2 param dump /velocity_filter > velocity_filter.yaml || dump_rc=$?
if [ "$dump_rc" != 0 ] || ! grep -q "acceleration_limits:" velocity_filter.yaml; then
  cat velocity_filter.yaml; fail+=("ros2 param dump /velocity_filter failed (exit $dump_rc)")
elif grep -nE ":[[:space:]]+(null|~)[[:space:]]*$" velocity_filter.yaml; then
  fail+=("ros2 param dump wrote null values")
else
  sed 's|^/velocity_filter:|/dump_check/velocity_filter:|' velocity_filter.yaml \
    > "$WORK/velocity_filter_edited.yaml"
  set -m
  python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' \
    ros2 run robot_collision velocity_filter --ros-args -r __ns:=/dump_check \
    --params-file "$WORK/velocity_filter_edited.yaml" > "$WORK/filter_from_dump.log" 2>&1 &
  dump_pid=$!
  set +m
  for _ in $(seq 240); do
    grep -q "filtering .* at [0-9.]* Hz" "$WORK/filter_from_dump.log" && break
    kill -0 "$dump_pid" 2>/dev/null || break
    sleep 0.5
  done
  sleep 3  # running, not starting: Ctrl-C as a user would give it
  kill -INT -- -"$dump_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$dump_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- -"$dump_pid" 2>/dev/null || true
  wait "$dump_pid" 2>/dev/null || true
  if grep -q " ready in " "$WORK/filter_from_dump.log" \
     && ! grep -qE "\[ERROR\]|invalid parameter|Traceback" "$WORK/filter_from_dump.log"; then
    echo "ros2 param dump: $(grep -c . velocity_filter.yaml) lines, no null; a velocity_filter" \
      "started from it: $(grep -o "velocity_filter.* ready in [0-9.]* s" \
      "$WORK/filter_from_dump.log" | head -1), no error"
  else
    sed 's/^/    /' "$WORK/filter_from_dump.log" | tail -n 30
    fail+=("a velocity_filter started from the dumped parameters failed or logged an error")
  fi
fi
ros2 daemon stop > /dev/null 2>&1 || true

# ---------------------------------------------------------------------- 5. Ctrl-C
say "SIGINT to ros2 launch"
stop_t0=$(date +%s.%N)
# what Ctrl-C in its terminal does: SIGINT to the whole process group (launch and its nodes;
# launch then signals the nodes once more)
kill -INT -- -"$LAUNCH_PID" 2>/dev/null || true
for _ in $(seq 150); do kill -0 "$LAUNCH_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$LAUNCH_PID" 2>/dev/null; then
  fail+=("ros2 launch still running 15 s after SIGINT (killed)")
  kill -KILL -- -"$LAUNCH_PID" 2>/dev/null || true
fi
launch_rc=0
wait "$LAUNCH_PID" || launch_rc=$?
trap - EXIT
stop_s=$(python3 -c "import time; print(f'{time.time() - $stop_t0:.1f}')")
echo "ros2 launch exited $launch_rc, $stop_s s after SIGINT"
grep -E "\[(INFO|ERROR|WARNING)\] \[(launch|[a-z_]+-[0-9]+)\]:" "$LAUNCH_LOG" | tail -n 12 || true
grep -E "kernels ready|kernels \(numba" "$LAUNCH_LOG" | sed 's/^/  /' || true
[ "$launch_rc" = 0 ] || fail+=("ros2 launch exited $launch_rc after SIGINT")
for node in mock_arm collision_checker velocity_filter planner; do
  grep -q "\[$node-[0-9]*\]: process has finished cleanly" "$LAUNCH_LOG" \
    || fail+=("$node did not finish cleanly on SIGINT")
done
if grep -n -E "Traceback|KeyboardInterrupt|Exception ignored|escalating to|process has died" \
     "$LAUNCH_LOG"; then
  fail+=("tracebacks or escalations in the launch log")
fi
# each node's first "kernels ready" line is its start: loaded from the build's cache, not
# compiled; later ones follow a parameter change (acceleration_limits compiles the filter's
# braking variant at run time: reported, not failed)
first_ready=$(grep -E "kernels ready" "$LAUNCH_LOG" | awk '{ if (!seen[$1]++) print }')
if grep -q " compiled," <<< "$first_ready"; then
  fail+=("a node compiled kernels at its first start (the build should have compiled them)")
fi
grep -E "kernels ready" "$LAUNCH_LOG" | awk '{ if (seen[$1]++) print }' \
  | grep " compiled," | sed 's/^/  note: at run time, after a parameter change: /' || true
if [ ${#fail[@]} -gt 0 ]; then
  echo "--- $LAUNCH_LOG"; cat "$LAUNCH_LOG"
  for f in "${fail[@]}"; do echo "ros-real: FAIL: $f" >&2; done
  die "${#fail[@]} check(s) of the running system failed (work folder kept: $WORK)"
fi
first_table=$(python3 -c "import json; print(f\"{json.load(open('$WORK/probe.json'))['clearance tables']['first_table_s']:.1f}\")")
timing+=("first clearance table ${first_table} s after ros2 launch" "stop ${stop_s} s after SIGINT")

# ---------------------------------------------------------------------- 6. colcon test
say "colcon test + colcon test-result (the README's commands)"
t0=$SECONDS
colcon test --packages-select robot_collision
colcon test-result --verbose | tee "$WORK/test-result.txt" \
  || die "colcon test-result reports failures (work folder kept: $WORK)"
timing+=("colcon test $((SECONDS - t0)) s")
summary=$(grep -E "^Summary: " "$WORK/test-result.txt" || true)
tests=$(sed -n 's/^Summary: \([0-9]*\) tests.*/\1/p' "$WORK/test-result.txt")
[ -n "$tests" ] && [ "$tests" -ge 100 ] \
  || die "colcon test ran ${tests:-no} tests (the suite has hundreds): $summary"
# the tests that need the real moveit_msgs must have run, not been skipped
python3 - "$WS/build/robot_collision/pytest.xml" <<'EOF' || die "real-moveit_msgs tests did not run"
import sys, xml.etree.ElementTree as ET
cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
skipped = [c.get("name") for c in cases if c.find("skipped") is not None
           and "moveit_msgs is not installed" in (c.find("skipped").get("message") or "")]
ran = [c.get("name") for c in cases if "moveit" in c.get("name", "")
       and c.find("skipped") is None]
print(f"tests with moveit_msgs: {len(ran)} ran ({', '.join(ran)}); "
      f"skipped for lack of it: {skipped or 'none'}")
sys.exit(0 if len(ran) >= 4 and not skipped else 1)
EOF

say "passed in $((SECONDS - t_start)) s: $(IFS=';'; echo "${timing[*]}")"
if [ "${KEEP:-0}" != 1 ] && [ -z "${ROS_REAL_WORK:-}" ]; then
  rm -rf "$WORK"
else
  echo "work folder: $WORK"
fi
