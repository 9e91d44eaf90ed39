// libFuzzer harness: HBM trace text (`<issue_cycle> <R|W> <hex address> <bytes>` lines), as
// `ncore hbm --trace` reads it. Properties:
//  - the parser either returns entries or throws ncore::Error naming fuzz.trace and a line
//    within the text (no other exception, no crash, no hang);
//  - splitting the entries into bursts on a 16-channel (4 GiB) HBM either throws Error naming
//    the file, or yields exactly one burst per 32 bytes of every entry, each inside HBM, in
//    trace order: no request vanishes, none wraps past the end;
//  - memory stays bounded (model::kMaxTraceBursts).

#include <algorithm>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/hbm/hbm.h"
#include "tests/fuzz/fuzz_check.h"

using namespace ncore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  std::istringstream in(text);
  std::vector<model::HbmTraceEntry> trace;
  try {
    trace = model::parse_hbm_trace(in, "fuzz.trace");
  } catch (const Error& e) {
    const std::string what = e.what();
    fuzz::check(what.rfind("fuzz.trace:", 0) == 0, "parse error does not name the file: " + what);
    int line = 0;
    fuzz::check(std::sscanf(what.c_str(), "fuzz.trace:%d:", &line) == 1 && line >= 1 && line <= lines,
                fmt::format("parse error names no line of the {}-line text: {}", lines, what));
    return 0;
  }
  model::HbmConfig config;
  config.channels = 16;
  const uint64_t capacity = model::hbm_capacity_bytes(config.channels);
  std::vector<model::HbmBurst> bursts;
  try {
    bursts = model::hbm_bursts(trace, config, 1, "fuzz.trace");
  } catch (const Error& e) {
    const std::string what = e.what();
    fuzz::check(what.rfind("fuzz.trace:", 0) == 0, "burst error does not name the file: " + what);
    return 0;
  }
  size_t at = 0;
  for (const auto& t : trace) {
    fuzz::check(t.addr < capacity && t.bytes <= capacity - t.addr,
                fmt::format("line {}: {} bytes at {:#x} accepted past the end of HBM", t.line, t.bytes, t.addr));
    for (uint64_t a = t.addr; a < t.addr + t.bytes; a += model::kHbmBurstBytes, ++at) {
      fuzz::check(at < bursts.size(), fmt::format("line {}: the burst at {:#x} is missing", t.line, a));
      fuzz::check(bursts[at].request.addr == a && bursts[at].request.write == t.write && bursts[at].cycle == t.cycle,
                  fmt::format("line {}: burst {} is not the one at {:#x}", t.line, at, a));
    }
  }
  fuzz::check(at == bursts.size(), fmt::format("{} bursts for {} expected", bursts.size(), at));
  return 0;
}
