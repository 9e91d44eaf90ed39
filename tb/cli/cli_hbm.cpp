// ncore hbm: a request trace through the HBM controller (golden model, RTL, or both in lockstep),
// with bandwidth, row hits, latency and the oldest request's age.

#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "model/hbm/hbm.h"
#include "tb/cli/commands.h"
#include "tb/cli/waves_options.h"
#include "tb/hbm/hbm_checker.h"
#include "tb/hbm/hbm_sim.h"

namespace ncore::cli {
namespace {

struct HbmOptions {
  std::string trace, sched = "reorder", engine = "golden", refresh = "perbank";
  int channels = 1;
  bool json = false, no_xor = false;
  uint64_t seed = 1;
  double stall = 0.0;
  std::string timeline;  // file of (time us, GB/s) per window
  uint64_t window = 2000;
  model::HbmConfig config;
  WavesOptions waves;
};

void run(const HbmOptions& o) {
  model::HbmConfig config = o.config;
  config.sched = o.sched == "fcfs" ? model::HbmSched::kFcfs : model::HbmSched::kReorder;
  config.refresh =
      o.refresh == "allbank" ? model::HbmRefresh::kAllBank : model::HbmRefresh::kPerBank;
  config.channels = o.channels;
  config.xor_hash = !o.no_xor;
  config.validate();

  std::ifstream file;
  std::istream* in = &std::cin;
  std::string source = "stdin";
  if (o.trace != "-") {
    file.open(o.trace);
    if (!file) throw Error(fmt::format("{}: cannot open the trace", o.trace));
    in = &file;
    source = o.trace;
  }
  const auto trace = model::parse_hbm_trace(*in, source);
  if (trace.empty()) throw Error(fmt::format("{}: the trace holds no request", source));
  const auto bursts = model::hbm_bursts(trace, config, o.seed, source);

  model::HbmStats s;
  uint64_t compared = 0, checked = 0;
  std::vector<std::vector<model::HbmCommand>> commands;
  if (o.engine == "golden") {
    s = model::run_hbm_golden(bursts, config, o.timeline.empty() ? 0 : o.window, &commands);
  } else {
    tb::HbmSimOptions so;
    so.seed = o.seed;
    so.check = o.engine == "cosim";
    so.stall = o.stall;
    o.waves.apply(so);
    so.timeline_window = o.timeline.empty() ? 0 : o.window;
    const auto r = tb::run_hbm_rtl(bursts, config, so, &commands);
    if (!r.ok) {
      fmt::print(stderr, "ncore hbm: {}\n", r.failure);
      fmt::print(stderr, "reproduce: ncore hbm --trace {} --sched {} --refresh {} --channels {} "
                 "--engine cosim --seed {} --stall {} --waves build/waves/hbm_fail.fst\n",
                 o.trace, o.sched, o.refresh, o.channels, o.seed, o.stall);
      throw Error("HBM co-simulation failed");
    }
    s = r.stats;
    compared = r.commands_compared;
  }
  // Every command of every channel through the independent timing checker.
  for (size_t c = 0; c < commands.size(); ++c) {
    tb::HbmChecker checker(config);
    for (const auto& cmd : commands[c]) checker.observe(cmd);
    checker.finish(s.cycles);
    if (!checker.ok())
      throw Error(fmt::format("channel {}: timing checker: {}", c, checker.failure()));
    checked += checker.commands();
  }

  if (!o.timeline.empty()) {
    std::ofstream t(o.timeline);
    if (!t) throw Error(fmt::format("{}: cannot open the timeline file for writing", o.timeline));
    t << "# time_us gbps\n";
    const double window_ns = static_cast<double>(o.window) * config.timing.tck_ns;
    for (const auto& [end, busy] : s.timeline)
      t << fmt::format("{:.3f} {:.3f}\n", end * config.timing.tck_ns / 1000.0,
                       static_cast<double>(busy) * model::kHbmBurstBytes / config.timing.bl /
                           window_ns);
  }
  const double bound = model::hbm_activation_bound(config.timing, 2);
  if (o.json) {
    nlohmann::json j;
    j["sched"] = o.sched;
    j["engine"] = o.engine;
    j["refresh"] = o.refresh;
    j["channels"] = o.channels;
    j["cycles"] = s.cycles;
    j["bursts"] = s.reads + s.writes;
    j["utilization"] = s.utilization;
    j["gbps"] = s.gbps;
    j["peak_gbps"] = s.peak_gbps;
    j["row_hit_rate"] = s.row_hit_rate;
    j["lat_mean_ns"] = s.lat_mean_ns;
    j["lat_p99_ns"] = s.lat_p99_ns;
    j["max_age_cycles"] = s.max_age_cycles;
    j["refreshes"] = s.refreshes;
    j["activation_bound_64b"] = bound;
    j["commands_checked"] = checked;
    j["commands_compared"] = compared;
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print("trace {}  sched {}  refresh {}  engine {}  channels {}\n", source, o.sched,
             o.refresh, o.engine, o.channels);
  fmt::print("  bursts          {} ({} reads, {} writes), {} cycles\n", s.reads + s.writes, s.reads,
             s.writes, s.cycles);
  fmt::print("  utilization     {:.2f}% of the data bus (refresh included)\n", 100 * s.utilization);
  fmt::print("  bandwidth       {:.2f} GB/s of {:.2f} GB/s peak\n", s.gbps, s.peak_gbps);
  fmt::print("  row hit rate    {:.2f}%  ({} ACTs, {} refreshes)\n", 100 * s.row_hit_rate, s.acts,
             s.refreshes);
  fmt::print("  read latency    mean {:.1f} ns, p99 {:.1f} ns\n", s.lat_mean_ns, s.lat_p99_ns);
  fmt::print("  oldest request  {} cycles in the queue\n", s.max_age_cycles);
  fmt::print("  ACT-timing bound for 64-byte random accesses: {:.2f}%\n", 100 * bound);
  fmt::print("  timing checker  {} commands, no violation", checked);
  if (compared) fmt::print("; co-simulation compared {} commands", compared);
  fmt::print("\n");
}

}  // namespace

void add_hbm_command(CLI::App& app) {
  auto o = std::make_shared<HbmOptions>();
  auto* c = app.add_subcommand("hbm", "Run a request trace through the HBM controller");
  c->add_option("--trace", o->trace, "trace file ('-' for stdin): <cycle> <R|W> <hex addr> <bytes>")
      ->required();
  c->add_option("--sched", o->sched, "scheduler")->check(CLI::IsMember({"reorder", "fcfs"}));
  c->add_option("--engine", o->engine, "golden model, RTL, or both in lockstep")
      ->check(CLI::IsMember({"golden", "rtl", "cosim"}));
  c->add_option("--refresh", o->refresh, "refresh policy")
      ->check(CLI::IsMember({"perbank", "allbank"}));
  c->add_option("--channels", o->channels, "pseudo-channels (1, 2, 4, 8, 16)");
  c->add_flag("--no-xor", o->no_xor, "plain address map (no row-bit XOR hashing)");
  c->add_option("--wr-high", o->config.wr_high, "write-batch high watermark");
  c->add_option("--wr-low", o->config.wr_low, "write-batch low watermark");
  c->add_option("--rd-batch", o->config.rd_batch,
                "reads a read phase serves before the high watermark starts a write batch");
  c->add_option("--age-cap", o->config.age_cap, "cycles before a request becomes urgent");
  c->add_option("--rd-depth", o->config.rd_depth, "read queue depth (golden engine only)");
  c->add_option("--wr-depth", o->config.wr_depth, "write queue depth (golden engine only)");
  c->add_option("--seed", o->seed, "seed of write data and back-pressure");
  c->add_option("--stall", o->stall, "RTL engines: chance the source holds a request back a cycle");
  c->add_option("--timeline", o->timeline, "write GB/s per window to this file (for plots)");
  c->add_option("--window", o->window, "timeline window in cycles");
  add_waves_options(c, o->waves);
  c->add_flag("--json", o->json, "one JSON object");
  c->callback([o] { run(*o); });
}

}  // namespace ncore::cli
