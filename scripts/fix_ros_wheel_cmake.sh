#!/usr/bin/env bash
# Rewrites the CMake export files of the ROS 2 PyPI wheels that point at the wheel build host's
# Python (/opt/python/cp3X-cp3X/...) so that rosidl_generate_interfaces works in our venv.
# Idempotent: a second run finds nothing to rewrite. Usage: fix_ros_wheel_cmake.sh <venv>
set -euo pipefail
venv=${1:?usage: fix_ros_wheel_cmake.sh <venv>}
py="$venv/bin/python"
pyinc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
npinc=$("$py" -c 'import numpy; print(numpy.get_include())')
if [ ! -f "$pyinc/Python.h" ]; then
  echo "error: Python headers not found at $pyinc (install python3-dev for your Python)" >&2
  exit 1
fi
# grep exits 1 when a previous run already rewrote everything: that is success here.
{ grep -rlE --include='*.cmake' '/opt/python/cp3[0-9]+-cp3[0-9]+' "$venv/share" 2>/dev/null || true; } | xargs -r sed -i -E \
  -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#$pyinc#g" \
  -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/_core/include#$npinc#g"
