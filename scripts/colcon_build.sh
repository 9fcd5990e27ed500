#!/usr/bin/env bash
# Build this repository the standard ROS 2 way: `colcon build --base-paths . src/camp_msgs`,
# with colcon from PyPI installed into the project's venv (which `make setup` made and which
# holds the ROS 2 wheels: ament_cmake, rosidl, rclpy). Builds into build/colcon/ so the
# venv's own camp_msgs install is left alone, then checks that both packages were installed
# (camp_msgs' generated Python package, camp_planner's node executables, the launch file).
#
#   scripts/colcon_build.sh          # after `make setup`
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
OUT=build/colcon
COLCON_PIN="colcon-common-extensions==0.3.0 colcon-core==0.21.3 colcon-cmake==0.2.30 \
colcon-ros==0.5.0 colcon-python-setup-py==0.2.9"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "colcon_build: no $VENV; run 'make setup' first" >&2
  exit 2
fi
VENV="$(cd "$VENV" && pwd)"
if ! "$VENV/bin/python" -c 'import colcon_core, colcon_ros, colcon_cmake' 2>/dev/null; then
  # shellcheck disable=SC2086  # the pins are separate words
  "$VENV/bin/python" -m pip install --quiet $COLCON_PIN
fi

# The ROS 2 wheels put ament's index and CMake configs in the venv; on a real install
# `source /opt/ros/$ROS_DISTRO/setup.bash` sets the same two variables.
export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"
export PATH="$VENV/bin:$PATH"
rm -rf "$OUT"
"$VENV/bin/colcon" --log-base "$OUT/log" build \
  --base-paths . src/camp_msgs \
  --build-base "$OUT/build" --install-base "$OUT/install" \
  --cmake-args -DBUILD_TESTING=OFF "-DPython3_EXECUTABLE=$VENV/bin/python" \
  --event-handlers console_cohesion- summary+

INSTALL="$OUT/install"
fail=0
check() { if compgen -G "$1" > /dev/null; then echo "ok: $1"; else echo "missing: $1" >&2; fail=1; fi; }
check "$INSTALL/camp_msgs/lib/python3*/site-packages/camp_msgs/srv/_select_context.py"
check "$INSTALL/camp_msgs/lib/python3*/site-packages/camp_msgs/action/_plan_task.py"
check "$INSTALL/camp_msgs/share/camp_msgs/msg/Plan.msg"
check "$INSTALL/camp_planner/lib/camp_planner/camp_planner"
check "$INSTALL/camp_planner/lib/camp_planner/tamp_server"
check "$INSTALL/camp_planner/lib/camp_planner/namo_sim"
check "$INSTALL/camp_planner/share/camp_planner/launch/namo.launch.py"
check "$INSTALL/camp_planner/share/camp_planner/config/ros/namo_params.yaml"
check "$INSTALL/camp_planner/share/camp_planner/config/ros/namo.rviz"
check "$INSTALL/camp_planner/share/camp_planner/config/ros/manip.rviz"
# The configuration the nodes load for world:=grid10 (camp_planner/ros/worlds.py).
check "$INSTALL/camp_planner/share/camp_planner/config/namo/grid10.yaml"
check "$INSTALL/camp_planner/lib/camp_planner/manip_sim"
check "$INSTALL/camp_planner/share/camp_planner/launch/manip.launch.py"
check "$INSTALL/camp_planner/share/camp_planner/config/ros/manip_params.yaml"
check "$INSTALL/camp_planner/lib/python3*/site-packages/camp_planner/data/namo-tamp.pt"
check "$INSTALL/camp_planner/lib/python3*/site-packages/camp_planner/data/namo-grid10-tamp.pt"
check "$INSTALL/camp_planner/share/ament_index/resource_index/packages/camp_planner"
exit $fail
