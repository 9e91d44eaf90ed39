#pragma once
// The option and result names every harness uses (tb/common/bench.h is the rest of the
// skeleton). Kept free of Verilator's headers so that the harnesses' public headers can be
// included beside SystemC (tb/tlm).

#include <cstdint>
#include <limits>
#include <string>

namespace ncore::tb {

// The PE array's arithmetic (rtl/common/README.md, "The fast PE build"): the synthesizable
// logic, or the host's FPU called from the RTL (the same outputs and cycles, proven by
// tests/test_host_fp.cpp and tests/test_rtl_fast.cpp). A build with -DNCORE_FAST_PE=ON has the
// host-FPU models at every size and runs them unless told otherwise; every other build has them
// at one small size, for those tests, and runs the logic.
enum class PeArith { kLogic, kHostFpu };
#if defined(NCORE_FAST_PE) && NCORE_FAST_PE
inline constexpr PeArith kBuildPeArith = PeArith::kHostFpu;
#else
inline constexpr PeArith kBuildPeArith = PeArith::kLogic;
#endif
inline const char* pe_arith_name(PeArith a) { return a == PeArith::kHostFpu ? "host-fpu" : "logic"; }

// What every harness is asked, under the same names. A harness's own options derive from it.
struct BenchOptions {
  uint64_t seed = 1;              // back-pressure, random data and Verilator's own randomness
  uint64_t watchdog = 100'000;    // cycles without progress before the run is declared hung
  std::string waves;              // FST file to write; empty: no waves
  uint64_t waves_from = 0;        // first and last cycle dumped
  uint64_t waves_to = std::numeric_limits<uint64_t>::max();
  std::string reproduce;          // a command that reruns this case, printed on failure
  // Nonzero: the X-propagation build (Verilated with --x-assign unique --x-initial unique), its
  // flops without reset and its X assignments random from this seed. Harnesses without such a
  // build refuse it.
  uint64_t xprop_seed = 0;
  PeArith pe_arith = kBuildPeArith;  // harnesses without a tensor engine ignore it
};

// What every harness answers, under the same names. A harness's own result derives from it.
struct BenchResult {
  bool ok = true;
  std::string failure;     // the first failure, in full: what, cycle, seed, how to reproduce
  uint64_t fail_cycle = 0;
  uint64_t cycles = 0;     // the run's length (each harness says where it starts and ends)
  double wall_seconds = 0;
};

}  // namespace ncore::tb
