// libFuzzer harness: the TLM system's JSON configuration (`ncore tlm ... --config FILE`).
// Properties:
//  - parse_system_config either returns a configuration or throws ncore::Error that starts
//    with fuzz.json (no other exception, no crash, no hang);
//  - a configuration it returns is valid (validate() passes) and within the documented ranges,
//    and its derived peak figures are finite and non-negative.

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "model/common/error.h"
#include "tb/tlm/system_config.h"
#include "tests/fuzz/fuzz_check.h"

using namespace ncore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tlmsys::SystemConfig c;
  try {
    c = tlmsys::parse_system_config(text, "fuzz.json");
  } catch (const Error& e) {
    const std::string what = e.what();
    fuzz::check(what.rfind("fuzz.json: ", 0) == 0, "error does not name the file: " + what);
    return 0;
  }
  try {
    c.validate();
  } catch (const Error& e) {
    fuzz::fail(std::string("accepted a configuration validate() refuses: ") + e.what());
  }
  fuzz::check(c.chips() >= 1 && c.chips() <= 64 * 64 * 64, fmt::format("{} chips accepted", c.chips()));
  for (const auto& p : tlmsys::derive_peaks(c))
    for (double v : {p.tflops_fp8, p.tflops_bf16, p.tflops_fp32, p.hbm_gib, p.hbm_tbps, p.link_gbps_per_chip,
                     p.z_link_gbps_per_chip})
      fuzz::check(std::isfinite(v) && v >= 0, fmt::format("level {}: a derived figure is {}", p.level, v));
  return 0;
}
