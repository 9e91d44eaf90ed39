#!/usr/bin/env bash
# Installs everything ncore needs from Debian's packages. Idempotent: when every package is
# already installed it only checks, so the test and demo scripts can call it every time.
set -euo pipefail

packages=(
  clang g++ cmake make pkg-config     # toolchain: clang++ builds ncore (CMakeLists.txt); g++ if
                                      # CXX=g++ asks for it
  verilator                           # RTL -> C++ (find_package(verilator) + verilate())
  libsystemc-dev                      # SystemC / TLM-2.0 (pkg-config systemc)
  libfmt-dev                          # formatted output
  libgtest-dev googletest             # unit and co-simulation tests
  libbenchmark-dev                    # Google Benchmark
  libopenblas-dev                     # sgemm baseline for the golden-model benchmark
  libcli11-dev                        # command-line parsing for the ncore CLI
  nlohmann-json3-dev                  # JSON output and configuration files
  pybind11-dev python3-dev            # ncore.nki's compiler passes in C++ (tb/python/backend)
  gtkwave                             # waveform viewer for the FST dumps
  python3 python3-tqdm python3-numpy  # scripts/* (run by /usr/bin/python3: Debian's modules, not
                                      # a pip or pyenv interpreter's): progress bars, tensor data
  gnuplot-nox                         # benchmark plots (scripts/hbm_bench)
  libclang-rt-14-dev                  # libFuzzer harnesses (tests/fuzz, scripts/fuzz)
  slurm-wlm munge                     # scripts/regress --backend slurm, its test (scripts/slurm_local)
  lcov                                # coverage report (scripts/coverage: genhtml)
  ccache                              # -DNCORE_CCACHE=ON: a developer's rebuilds from the cache
  chromium python3-websocket          # scripts/trace-screenshot: a trace opened in Chromium's own
                                      # trace viewer (DevTools' Performance panel), headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
