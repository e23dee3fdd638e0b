# Sourced by the scripts: puts the CUDA toolkit on PATH and installs what a fresh Debian machine lacks
# (cmake, ninja, a C++ compiler, Catch2 unless GRAPHPOOL_NEED_CATCH2=0). Installs nothing where everything is present.

if [ -d /usr/local/cuda/bin ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

graphpool_missing=()
command -v cmake >/dev/null 2>&1 || graphpool_missing+=(cmake)
command -v ninja >/dev/null 2>&1 || graphpool_missing+=(ninja-build)
command -v g++ >/dev/null 2>&1 || graphpool_missing+=(g++)
# Catch2 2.x or 3.x, wherever a CMake package of it is installed (not for GRAPHPOOL_NEED_CATCH2=0: the demo).
if [ "${GRAPHPOOL_NEED_CATCH2:-1}" != 0 ] &&
   [ -z "$(find /usr /opt -maxdepth 6 -name Catch2Config.cmake -print -quit 2>/dev/null)" ]; then
  graphpool_missing+=(catch2)
fi
for graphpool_extra in ${GRAPHPOOL_EXTRA_PACKAGES:-}; do
  dpkg -s "$graphpool_extra" >/dev/null 2>&1 || graphpool_missing+=("$graphpool_extra")
done

if [ ${#graphpool_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "graphpool: missing ${graphpool_missing[*]}; install them (Debian: apt-get install ${graphpool_missing[*]})" >&2
    exit 1
  fi
  echo "graphpool: installing ${graphpool_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${graphpool_missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1; then
  echo "graphpool: nvcc not found (looked on PATH and in /usr/local/cuda/bin); the CUDA 13 toolkit is required" >&2
  exit 1
fi
