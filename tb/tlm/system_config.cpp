#include "tb/tlm/system_config.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "model/hbm/hbm.h"
#include "tb/common/json_object_reader.h"

namespace ncore::tlmsys {
namespace {

using nlohmann::json;
using ObjectReader = tb::JsonObjectReader;

void link_fields(ObjectReader& r, LinkConfig& l) {
  r.number("gbps", l.gbps, 1e-3, 1e6);
  r.number("hop_latency_us", l.hop_latency_us, 0.0, 1e3);
}

}  // namespace

void SystemConfig::validate() const {
  auto check = [](bool ok, const char* key, const std::string& expected, double found) {
    if (!ok) throw Error(fmt::format("configuration: key '{}': expected {}, found {}", key, expected, found));
  };
  check(x >= 1 && x <= 64, "x", "1..64", x);
  check(y >= 1 && y <= 64, "y", "1..64", y);
  check(z >= 1 && z <= 64, "z", "1..64", z);
  check(chip.cores >= 1 && chip.cores <= 64, "chip.cores", "1..64", chip.cores);
  check(chip.hbm_stacks >= 1 && chip.hbm_stacks <= 16, "chip.hbm_stacks", "1..16", chip.hbm_stacks);
  check(chip.link.gbps > 0, "chip.link.gbps", "> 0", chip.link.gbps);
  check(chip.z_link.gbps > 0, "chip.z_link.gbps", "> 0", chip.z_link.gbps);
  check(chip.reduce_gbps > 0, "chip.reduce_gbps", "> 0", chip.reduce_gbps);
  check(chip.core_barrier_ns >= 0 && chip.core_barrier_ns <= 1e6, "chip.core_barrier_ns", "in [0, 1000000]",
        chip.core_barrier_ns);
  check(quantum_ns > 0, "quantum_ns", "> 0", quantum_ns);
  check(rtl_slice_cycles >= 1 && rtl_slice_cycles <= 1'000'000, "rtl_slice_cycles", "1..1000000", rtl_slice_cycles);
  check(lnc == 1 || lnc == 2, "lnc", "1 or 2", lnc);
  check(lnc == 1 || chip.cores % 2 == 0, "chip.cores", "an even number at lnc 2 (two cores a logical core)", chip.cores);
  // The DRAM's timing in nanoseconds must fit the controller at the pin rate's clock.
  model::HbmConfig hbm;
  const double tck_ns = static_cast<double>(hbm_tck_ps(chip.hbm_pin_gbps)) / 1000.0;
  hbm.timing = model::HbmDramTiming{}.at(tck_ns);
  try {
    hbm.validate();
  } catch (const Error& e) {
    throw Error(fmt::format("configuration: key 'chip.hbm_pin_gbps': expected a pin rate at whose HBM clock ({} ns) "
                            "the DRAM's timing fits the controller, found {} ({})",
                            tck_ns, chip.hbm_pin_gbps, e.what()));
  }
}

uint64_t hbm_tck_ps(double pin_gbps) { return static_cast<uint64_t>(std::llround(4000.0 / pin_gbps)); }

SystemConfig default_system(const std::string& name) {
  SystemConfig c;
  c.name = name;
  if (name == "chip") {
    c.x = c.y = c.z = 1;
  } else if (name == "trn2") {
    c.x = c.y = 4;
    c.z = 1;
  } else if (name == "trn2u") {
    c.x = c.y = c.z = 4;
  } else {
    throw Error(fmt::format("system '{}': expected chip, trn2 or trn2u", name));
  }
  return c;
}

SystemConfig parse_system_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object, found {}", source, j.dump()));
  SystemConfig c = default_system("trn2");
  if (j.contains("system")) {
    if (!j["system"].is_string())
      throw Error(fmt::format("{}: key 'system': expected \"chip\", \"trn2\" or \"trn2u\", found {}",
                              source, j["system"].dump()));
    const std::string name = j["system"];
    if (name != "chip" && name != "trn2" && name != "trn2u")
      throw Error(fmt::format("{}: key 'system': expected \"chip\", \"trn2\" or \"trn2u\", found \"{}\"",
                              source, name));
    c = default_system(name);
  }
  ObjectReader top(j, "", source);
  top.skip("system");
  top.integer("x", c.x, 1, 64);
  top.integer("y", c.y, 1, 64);
  top.integer("z", c.z, 1, 64);
  top.number("quantum_ns", c.quantum_ns, 1e-3, 1e9);
  top.integer("rtl_slice_cycles", c.rtl_slice_cycles, 1, 1'000'000);
  top.integer("lnc", c.lnc, 1, 2);
  top.object("chip", [&c](ObjectReader& r) {
    ChipConfig& k = c.chip;
    r.integer("cores", k.cores, 1, 64);
    r.integer("pe_rows", k.pe_rows, 1, 1024);
    r.integer("pe_cols", k.pe_cols, 1, 1024);
    r.number("core_clock_ghz", k.core_clock_ghz, 1e-3, 100);
    r.number("macs_fp8", k.macs_fp8, 0, 64);
    r.number("macs_bf16", k.macs_bf16, 0, 64);
    r.number("macs_fp32", k.macs_fp32, 0, 64);
    r.number("rated_clock_ghz_fp8", k.rated_clock_ghz_fp8, 1e-3, 100);
    r.number("rated_clock_ghz_bf16", k.rated_clock_ghz_bf16, 1e-3, 100);
    r.number("rated_clock_ghz_fp32", k.rated_clock_ghz_fp32, 1e-3, 100);
    r.integer("hbm_stacks", k.hbm_stacks, 1, 16);
    r.integer("hbm_pseudo_channels_per_stack", k.hbm_pseudo_channels_per_stack, 1, 256);
    r.number("hbm_pin_gbps", k.hbm_pin_gbps, 1e-3, 100);
    r.number("hbm_stack_gib", k.hbm_stack_gib, 1e-3, 1024);
    r.boolean("hbm_step_every_cycle", k.hbm_step_every_cycle);
    r.integer("dma_engines_per_core", k.dma_engines_per_core, 1, 256);
    r.number("reduce_gbps", k.reduce_gbps, 1e-3, 1e6);
    r.number("core_barrier_ns", k.core_barrier_ns, 0, 1e6);
    r.object("link", [&k](ObjectReader& l) { link_fields(l, k.link); });
    r.object("z_link", [&k](ObjectReader& l) { link_fields(l, k.z_link); });
  });
  top.read();
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

SystemConfig load_system_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(fmt::format("{}: cannot open the configuration", path));
  std::stringstream s;
  s << f.rdbuf();
  return parse_system_config(s.str(), path);
}

double hbm_stack_gbps(const ChipConfig& c) {
  return c.hbm_pseudo_channels_per_stack * 32 * c.hbm_pin_gbps / 8.0;  // 32 data pins each
}

std::vector<PeakFigures> derive_peaks(const SystemConfig& c) {
  const ChipConfig& k = c.chip;
  const double pe = double(k.pe_rows) * k.pe_cols;
  auto tflops = [pe](double macs, double ghz) { return pe * 2.0 * macs * ghz * 1e9 / 1e12; };
  std::vector<PeakFigures> out;

  PeakFigures core;
  core.level = "core";
  core.cores = 1;
  core.tflops_fp8 = core.tflops_fp8_core_clock = tflops(k.macs_fp8, k.core_clock_ghz);
  core.tflops_bf16 = core.tflops_bf16_core_clock = tflops(k.macs_bf16, k.core_clock_ghz);
  core.tflops_fp32 = core.tflops_fp32_core_clock = tflops(k.macs_fp32, k.core_clock_ghz);
  out.push_back(core);

  PeakFigures chip;
  chip.level = "chip";
  chip.chips = 1;
  chip.cores = k.cores;
  chip.tflops_fp8 = k.cores * tflops(k.macs_fp8, k.rated_clock_ghz_fp8);
  chip.tflops_bf16 = k.cores * tflops(k.macs_bf16, k.rated_clock_ghz_bf16);
  chip.tflops_fp32 = k.cores * tflops(k.macs_fp32, k.rated_clock_ghz_fp32);
  chip.tflops_fp8_core_clock = k.cores * core.tflops_fp8;
  chip.tflops_bf16_core_clock = k.cores * core.tflops_bf16;
  chip.tflops_fp32_core_clock = k.cores * core.tflops_fp32;
  chip.hbm_gib = k.hbm_stacks * k.hbm_stack_gib;
  chip.hbm_tbps = k.hbm_stacks * hbm_stack_gbps(k) / 1000.0;
  chip.link_gbps_per_chip = 4 * k.link.gbps * 2;      // +-X, +-Y, both directions
  chip.z_link_gbps_per_chip = 2 * k.z_link.gbps * 2;  // +-Z, both directions
  out.push_back(chip);

  if (c.chips() > 1) {
    PeakFigures sys = chip;
    sys.level = c.z > 1 ? "ultraserver" : "instance";
    sys.chips = c.chips();
    sys.cores = c.chips() * k.cores;
    for (double* f : {&sys.tflops_fp8, &sys.tflops_bf16, &sys.tflops_fp32, &sys.tflops_fp8_core_clock,
                      &sys.tflops_bf16_core_clock, &sys.tflops_fp32_core_clock, &sys.hbm_gib,
                      &sys.hbm_tbps})
      *f *= c.chips();
    out.push_back(sys);
  }
  return out;
}

nlohmann::json to_json(const PeakFigures& p) {
  return json{{"level", p.level},
              {"chips", p.chips},
              {"cores", p.cores},
              {"tflops_fp8", p.tflops_fp8},
              {"tflops_bf16", p.tflops_bf16},
              {"tflops_fp32", p.tflops_fp32},
              {"tflops_fp8_core_clock", p.tflops_fp8_core_clock},
              {"tflops_bf16_core_clock", p.tflops_bf16_core_clock},
              {"tflops_fp32_core_clock", p.tflops_fp32_core_clock},
              {"hbm_gib", p.hbm_gib},
              {"hbm_tbps", p.hbm_tbps},
              {"link_gbps_per_chip", p.link_gbps_per_chip},
              {"z_link_gbps_per_chip", p.z_link_gbps_per_chip}};
}

}  // namespace ncore::tlmsys
