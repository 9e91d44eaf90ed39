#include "tb/cli/timing_option.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "tb/common/json_object_reader.h"

namespace ncore::cli {

model::CoreTiming load_timing(const std::string& preset_or_file) {
  if (preset_or_file == "uniform" || preset_or_file == "trn2" || preset_or_file == "trn1")
    return model::timing_preset(preset_or_file);
  std::ifstream in(preset_or_file);
  if (!in)
    throw Error(fmt::format("--timing {}: expected a preset (uniform, trn2, trn1) or a readable JSON file", preset_or_file));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", preset_or_file, e.what()));
  }
  model::CoreTiming t;
  if (j.is_object() && j.contains("preset")) {
    const nlohmann::json& p = j["preset"];
    if (!p.is_string() || (p != "uniform" && p != "trn2" && p != "trn1"))
      throw Error(fmt::format("{}: key 'preset': expected \"uniform\", \"trn2\" or \"trn1\", found {}", preset_or_file,
                              p.dump()));
    t = model::timing_preset(p.get<std::string>());
  }
  t.preset = preset_or_file;
  model::CoreClocks& c = t.clocks;
  model::CoreCosts& k = t.costs;
  tb::JsonObjectReader top(j, "", preset_or_file);
  top.skip("preset");
  top.object("clock", [&c](tb::JsonObjectReader& clock) {
    clock.number("base_ghz", c.base_ghz, 0.1, 100);
    clock.object("divide", [&c](tb::JsonObjectReader& divide) {
      for (int d = 0; d < model::kClockDomains; ++d)
        divide.integer(model::kClockDomainNames[static_cast<size_t>(d)].data(), c.divide[static_cast<size_t>(d)], 1,
                       model::CoreClocks::kMaxDivide);
    });
  });
  top.object("tensor", [&k](tb::JsonObjectReader& r) {
    r.integer("ls_columns_per_cycle", k.tensor.ls_columns_per_cycle, 1, 128);
  });
  for (const auto& engine : {std::pair{"scalar", &k.scalar}, std::pair{"vector", &k.vector}})
    top.object(engine.first, [&k, e = engine.second](tb::JsonObjectReader& r) {
      r.count("min_cycles", e->min_cycles, 0, 65'535);
      r.count("static_cycles", e->static_cycles, 0, 65'535);
      if (e == &k.vector) r.boolean("performance_mode", e->performance_mode);  // the vector engine's only
    });
  top.object("dma", [&k](tb::JsonObjectReader& r) {
    r.number("engine_bytes_per_ns", k.dma.engine_bytes_per_ns, 0, 1e4);
    r.number("element_ns", k.dma.element_ns, 0, 1e6);
    r.number("transpose_share", k.dma.transpose_share, 1e-3, 1);
    r.number("descriptor_ns", k.dma.descriptor_ns, 0, 1e6);
    r.number("semaphore_to_start_ns", k.dma.semaphore_to_start_ns, 0, 1e6);
  });
  top.object("throttle", [&k](tb::JsonObjectReader& r) {
    r.boolean("enabled", k.throttle.enabled);
    r.number("start_share", k.throttle.start_share, 1e-3, 1);
    r.number("ramp_ns", k.throttle.ramp_ns, 0, 1e9);
    r.number("window_ns", k.throttle.window_ns, 1e-3, 1e9);
    r.number("low_use", k.throttle.low_use, 0, 1);
  });
  top.object("psum", [&k](tb::JsonObjectReader& r) { r.boolean("vector_scalar_parallel", k.psum.vector_scalar_parallel); });
  top.object("launch", [&t](tb::JsonObjectReader& r) { r.number("overhead_ns", t.launch_overhead_ns, 0, 1e9); });
  top.read();
  t.validate();
  return t;
}

}  // namespace ncore::cli
