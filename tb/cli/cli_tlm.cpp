// ncore tlm: the SystemC TLM-2.0 system. `info` derives the peak figures of a configuration,
// `collective` runs one collective with real data across 16 or 64 chips.

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "tb/cli/commands.h"
#include "tb/cli/pe_arith_option.h"
#include "tb/cli/timing_option.h"
#include "tb/tlm/collective.h"
#include "tb/tlm/system_config.h"
#include "tb/tlm/system_run.h"

namespace ncore::cli {
namespace {

struct SystemOptions {
  std::string config_file;
  int chips = 16;
  double link_gbps = 0, z_link_gbps = 0, hop_latency_us = -1, quantum_ns = 0;
  bool json = false;
};

void add_system_options(CLI::App* cmd, SystemOptions& o) {
  cmd->add_option("--config", o.config_file, "JSON configuration (keys: see tb/tlm/system_config.h)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--chips", o.chips, "1 (a chip), 16 (a Trn2 instance) or 64 (an UltraServer)")
      ->check(CLI::IsMember({1, 16, 64}));
  cmd->add_option("--link-gbps", o.link_gbps, "in-instance link bandwidth, per link and direction (GB/s)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--z-link-gbps", o.z_link_gbps, "inter-instance link bandwidth, per link and direction (GB/s)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--hop-latency-us", o.hop_latency_us, "latency of every link hop (us)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--quantum-ns", o.quantum_ns, "temporal decoupling quantum (ns)")->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o.json, "print JSON");
}

tlmsys::SystemConfig system_config(const SystemOptions& o) {
  tlmsys::SystemConfig c = o.config_file.empty()
                               ? tlmsys::default_system(o.chips == 1 ? "chip" : o.chips == 16 ? "trn2" : "trn2u")
                               : tlmsys::load_system_config(o.config_file);
  if (o.link_gbps > 0) c.chip.link.gbps = o.link_gbps;
  if (o.z_link_gbps > 0) c.chip.z_link.gbps = o.z_link_gbps;
  if (o.hop_latency_us >= 0) c.chip.link.hop_latency_us = c.chip.z_link.hop_latency_us = o.hop_latency_us;
  if (o.quantum_ns > 0) c.quantum_ns = o.quantum_ns;
  c.validate();
  return c;
}

void run_info(const SystemOptions& o) {
  const auto config = system_config(o);
  const auto peaks = tlmsys::derive_peaks(config);
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& p : peaks) j.push_back(tlmsys::to_json(p));
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("system {}: {}x{}x{} chips, {} cores each; core clock {} GHz\n", config.name, config.x, config.y,
             config.z, config.chip.cores, config.chip.core_clock_ghz);
  fmt::print("{:<12} {:>6} {:>6} {:>12} {:>12} {:>12} {:>10} {:>10}\n", "level", "chips", "cores", "FP8 TFLOPS",
             "BF16 TFLOPS", "FP32 TFLOPS", "HBM GiB", "HBM TB/s");
  for (const auto& p : peaks)
    fmt::print("{:<12} {:>6} {:>6} {:>12.1f} {:>12.1f} {:>12.1f} {:>10.1f} {:>10.2f}\n", p.level, p.chips, p.cores,
               p.tflops_fp8, p.tflops_bf16, p.tflops_fp32, p.hbm_gib, p.hbm_tbps);
  const auto& k = config.chip;
  fmt::print("per-chip figures at the clocks they imply: FP8 {} GHz, BF16 {} GHz, FP32 {} GHz; at the core "
             "clock ({} GHz) a chip gives FP8 {:.1f}, BF16 {:.1f}, FP32 {:.1f} TFLOPS\n",
             k.rated_clock_ghz_fp8, k.rated_clock_ghz_bf16, k.rated_clock_ghz_fp32, k.core_clock_ghz,
             peaks[1].tflops_fp8_core_clock, peaks[1].tflops_bf16_core_clock, peaks[1].tflops_fp32_core_clock);
  fmt::print("NeuronLink per chip: {:.0f} GB/s in-instance, {:.0f} GB/s inter-instance (both directions)\n",
             peaks[1].link_gbps_per_chip, peaks[1].z_link_gbps_per_chip);
}

struct CollectiveCli {
  SystemOptions system;
  std::string op = "allreduce", algo = "ring", data = "auto";
  uint64_t bytes = 1 << 20, seed = 1;
};

void run_collective_cmd(const CollectiveCli& o) {
  const auto config = system_config(o.system);
  tlmsys::CollectiveOptions c;
  c.op = tlmsys::parse_collective_op(o.op);
  c.algo = tlmsys::parse_collective_algo(o.algo);
  c.bytes = o.bytes;
  c.seed = o.seed;
  // Real data by default while it fits comfortably (inputs, results and messages in flight).
  c.data = o.data == "on" || (o.data == "auto" && o.bytes <= (uint64_t{1} << 28) / uint64_t(config.chips()));
  const auto r = tlmsys::run_collective(config, c);
  if (o.system.json) {
    auto j = tlmsys::to_json(r);
    j["op"] = o.op;
    j["algo"] = o.algo;
    j["chips"] = config.chips();
    j["bytes"] = o.bytes;
    j["seed"] = o.seed;
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("{} {} on {} chips, {} bytes (seed {}): {:.3f} us simulated, closed form {:.3f} us ({:+.2f}%)\n", o.op,
             o.algo, config.chips(), o.bytes, o.seed, r.sim_time_us, r.closed_form_us,
             100.0 * (r.sim_time_us / r.closed_form_us - 1.0));
  fmt::print("algorithm bandwidth {:.2f} GB/s, bus bandwidth {:.2f} GB/s; busiest link {:.1f}% busy\n",
             r.algbw_gbps, r.busbw_gbps, 100.0 * r.max_link_busy);
  if (r.data_checked)
    fmt::print("data: {} elements checked bit for bit on every chip\n", r.elements_checked);
  else
    fmt::print("data: not carried (timing only; --data on forces it)\n");
  fmt::print("wall {:.3f} s\n", r.wall_seconds);
}

struct RunCli {
  std::string program, system = "chip", config_file, engine = "golden", rtl_cores, no_data_cores, outputs, trace_json,
      waves;
  bool json = false, no_data = false;
  std::string timing = "trn2";
  int lnc = 0;  // 0: the configuration's
  tb::PeArith pe_arith = tb::kBuildPeArith;
};

void run_system_cmd(const RunCli& o) {
  tlmsys::SystemConfig config = tlmsys::default_system(o.system);
  if (!o.config_file.empty()) {
    // The file's keys over the named system's defaults; its own "system" key must agree.
    config = tlmsys::load_system_config(o.config_file);
    if (config.name != o.system)
      throw Error(fmt::format("{}: \"system\" is '{}' but --system is '{}'", o.config_file, config.name, o.system));
  }
  if (o.lnc) {
    config.lnc = o.lnc;
    try {
      config.validate();
    } catch (const Error& e) {
      throw Error(fmt::format("--lnc {}{}: {}", o.lnc, o.config_file.empty() ? "" : " with " + o.config_file, e.what()));
    }
  }
  tlmsys::SystemRunOptions so;
  if (!o.rtl_cores.empty()) so.rtl_cores = tlmsys::parse_core_list(o.rtl_cores, config);
  so.all_rtl = o.engine == "rtl" && o.rtl_cores.empty();
  if (!o.no_data_cores.empty()) so.timing_only_cores = tlmsys::parse_core_list(o.no_data_cores, config, "--no-data-cores");
  so.all_timing_only = o.no_data;
  so.waves_dir = o.waves;
  so.pe_arith = o.pe_arith;
  so.program = o.program;
  so.outputs_dir = o.outputs;
  so.trace_json = o.trace_json;
  so.timing = load_timing(o.timing);
  so.progress = isatty(fileno(stderr)) && !o.json;
  const auto r = tlmsys::run_system(config, so);
  if (o.json) {
    auto j = tlmsys::to_json(r);
    j["launch_overhead_ns"] = so.timing.launch_overhead_ns;  // beside the run's time, never in it
    j["program"] = o.program;
    j["system"] = o.system;
    if (!o.outputs.empty()) j["outputs_dir"] = o.outputs;
    std::cout << j.dump(2) << "\n";
  } else {
    fmt::print("{} on {} ({} chips x {} cores): {}, {:.3f} us simulated, {:.2f} s wall\n", o.program, o.system,
               config.chips(), config.chip.cores, r.status, r.sim_time_us, r.wall_seconds);
    if (!r.message.empty()) fmt::print("{}\n", r.message);
    for (const auto& c : r.cores)
      fmt::print("chip {:>2} core {} {:<8} {:>10} cycles  PE {:5.1f}%  HBM {:>12} bytes{}\n", c.chip, c.core, c.status,
                 c.cycles, 100 * c.te_utilization, c.hbm_bytes, c.timing_only ? "  (timing only)" : "");
    for (const auto& s : r.hbm)
      if (s.bytes)
        fmt::print("chip {:>2} HBM stack {} {:>12} bytes {:8.1f} GB/s ({:.1f}% of {:.1f})\n", s.chip, s.stack, s.bytes,
                   s.gbps, 100 * s.utilization, s.peak_gbps);
    for (const auto& out : r.outputs)
      fmt::print("chip {:>2} core {} output {} fnv1a {:016x}\n", out.chip, out.core, out.name, out.fnv1a);
  }
  if (r.status != "done") throw Error(r.message);
}

}  // namespace

void add_tlm_command(CLI::App& app) {
  auto* tlm = app.add_subcommand("tlm", "SystemC TLM-2.0 chip, Trn2 instance and UltraServer");
  tlm->require_subcommand(1);

  static SystemOptions info;
  auto* i = tlm->add_subcommand("info", "peak FLOPS, HBM capacity and bandwidth from the configuration");
  add_system_options(i, info);
  i->callback([] { run_info(info); });

  static CollectiveCli coll;
  auto* c = tlm->add_subcommand("collective", "one collective with real data; time vs the closed form");
  add_system_options(c, coll.system);
  c->add_option("--op", coll.op, "allreduce|allgather|reducescatter|alltoall")
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall"}));
  c->add_option("--algo", coll.algo, "ring|torus2d|torus2d-split|rhd|hier|multiring")
      ->check(CLI::IsMember({"ring", "torus2d", "torus2d-split", "rhd", "hier", "multiring"}));
  c->add_option("--bytes", coll.bytes, "per-chip buffer size (nccl-tests convention)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  c->add_option("--seed", coll.seed, "input data seed");
  c->add_option("--data", coll.data, "on|off|auto: carry and check real data (auto: up to 256 MiB over all chips)")
      ->check(CLI::IsMember({"on", "off", "auto"}));
  c->callback([] { run_collective_cmd(coll); });

  static RunCli run;
  auto* r = tlm->add_subcommand("run", "programs on every core of a chip, an instance or an UltraServer");
  r->add_option("program", run.program, "assembly (SPMD: CHIP, CORE, CHIPS, CORES predefined) or a JSON manifest")
      ->required()->check(CLI::ExistingFile);
  r->add_option("--system", run.system, "chip|trn2|trn2u")->check(CLI::IsMember({"chip", "trn2", "trn2u"}));
  r->add_option("--config", run.config_file, "JSON configuration (keys: see tb/tlm/system_config.h)")
      ->check(CLI::ExistingFile);
  r->add_option("--core-engine", run.engine, "golden|rtl")->check(CLI::IsMember({"golden", "rtl"}));
  r->add_option("--rtl-cores", run.rtl_cores, "CHIP.CORE,... run on the RTL back-end (size chip.pe_rows); "
                "without it, --core-engine rtl makes every core RTL");
  r->add_option("--timing", run.timing, "the cores' clocks and fixed costs: trn2 (the default), trn1, uniform (one "
                                        "clock, chip.core_clock_ghz) or a JSON file (ncore run --timing)");
  r->add_option("--lnc", run.lnc, "logical NeuronCore degree: 2 pairs CORE 2k and 2k + 1 as one rank of the "
                                  "collectives (the configuration's lnc, 1 by default)")
      ->check(CLI::IsMember({1, 2}));
  r->add_flag("--no-data", run.no_data, "every golden core runs timing only (the same cycles, no data or outputs)");
  r->add_option("--no-data-cores", run.no_data_cores, "CHIP.CORE,... golden cores that run timing only")
      ->excludes("--no-data");
  r->add_option("--waves", run.waves, "write each RTL core's waves as DIR/chip<C>.core<K>.fst");
  r->add_option("--outputs", run.outputs, "write every output tensor as DIR/chip<C>.core<K>.NAME.npy");
  r->add_option("--trace-json", run.trace_json, "write a Chrome/Perfetto trace-event timeline");
  r->add_flag("--json", run.json, "print JSON");
  add_pe_arith_option(r, run.pe_arith);
  r->callback([] { run_system_cmd(run); });
}

}  // namespace ncore::cli
