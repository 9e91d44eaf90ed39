#pragma once
// Writes a Verilated model's coverage counters at the end of a run (coverage builds only). Kept
// apart from bench.h so that a test driving a model directly needs no FST headers.

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <fmt/format.h>
#include <verilated.h>
#if NCORE_COVERAGE
#include <verilated_cov.h>
#endif

namespace ncore::tb {

// In a coverage build (-DNCORE_COVERAGE=ON, scripts/coverage) writes the context's line, toggle
// and user coverage to $NCORE_COVERAGE_DIR/<block>-<pid>-<n>.dat when it goes out of scope;
// elsewhere does nothing. Declare it after the model: the counters live in the model.
class CoverageDump {
 public:
  CoverageDump(VerilatedContext& context, std::string block) : context_(context), block_(std::move(block)) {}
  CoverageDump(const CoverageDump&) = delete;
  CoverageDump& operator=(const CoverageDump&) = delete;
  ~CoverageDump() {
#if NCORE_COVERAGE
    const char* dir = std::getenv("NCORE_COVERAGE_DIR");
    if (!dir || !*dir) return;
    static std::atomic<int> count{0};
    std::filesystem::create_directories(dir);
    const std::string path = fmt::format("{}/{}-{}-{}.dat", dir, block_, getpid(), count++);
    context_.coveragep()->write(path.c_str());
#endif
  }

 private:
  [[maybe_unused]] VerilatedContext& context_;  // read only in coverage builds
  std::string block_;
};

}  // namespace ncore::tb
