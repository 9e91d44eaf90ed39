#include "tb/tlm/system_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <tlm_utils/tlm_quantumkeeper.h>

#include "model/common/error.h"
#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tb/tlm/cc_engine.h"
#include "tb/tlm/system.h"
#include "tb/trace/trace_events.h"

namespace ncore::tlmsys {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The program of every core that runs one, by (chip, core).
std::map<std::pair<int, int>, model::Program> load_programs(const SystemConfig& config, const std::string& path) {
  const int chips = config.chips(), cores = config.chip.cores;
  std::map<std::pair<int, int>, model::Program> programs;
  if (fs::path(path).extension() != ".json") {
    const model::ProgramText text = model::ProgramText::read(path);  // read and split once for every core
    for (int c = 0; c < chips; ++c)
      for (int k = 0; k < cores; ++k)
        programs.emplace(std::pair{c, k}, model::assemble(text, model::spmd_symbols(c, k, chips, cores)));
    return programs;
  }
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the manifest", path));
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  const auto fail = [&](const std::string& key, const std::string& expected, const Json& found) -> Error {
    return Error(fmt::format("{}: {}: expected {}, found {}", path, key, expected, found.dump()));
  };
  if (!j.is_object() || !j.contains("cores") || !j["cores"].is_array())
    throw fail("cores", "an object with an array \"cores\"", j);
  for (const auto& [key, _] : j.items())
    if (key != "cores") throw fail(key, "only the key \"cores\"", Json(key));
  const fs::path base = fs::path(path).parent_path();
  for (size_t i = 0; i < j["cores"].size(); ++i) {
    const Json& e = j["cores"][i];
    const std::string where = fmt::format("cores[{}]", i);
    if (!e.is_object()) throw fail(where, "an object {chip, core, program}", e);
    for (const auto& [key, _] : e.items())
      if (key != "chip" && key != "core" && key != "program") throw fail(where + "." + key, "chip, core or program", Json(key));
    const auto index = [&](const char* key, int limit) {
      if (!e.contains(key) || !e[key].is_number_integer() || e[key].get<int64_t>() < 0 || e[key].get<int64_t>() >= limit)
        throw fail(where + "." + key, fmt::format("an integer 0..{}", limit - 1), e.value(key, Json()));
      return e[key].get<int>();
    };
    const int c = index("chip", chips), k = index("core", cores);
    if (!e.contains("program") || !e["program"].is_string()) throw fail(where + ".program", "a file name", e.value("program", Json()));
    if (programs.count({c, k})) throw fail(where, fmt::format("one entry per core; chip {} core {} is listed twice", c, k), e);
    const fs::path program = base / e["program"].get<std::string>();
    if (!fs::is_regular_file(program))
      throw fail(where + ".program", "a program file", Json(program.string() + " (cannot open the program)"));
    programs.emplace(std::pair{c, k}, model::assemble_file(program.string(), model::spmd_symbols(c, k, chips, cores)));
  }
  return programs;
}

std::string status_text(model::CoreStatus s) { return std::string(model::core_status_name(s)); }

// The largest n with 2^n <= bytes.
int floor_log2(uint64_t bytes) {
  int n = 0;
  while (n < 63 && (uint64_t{2} << n) <= bytes) ++n;
  return n;
}

// Chrome/Perfetto trace events: a process per chip, with threads for each core's queues and DMA
// engines and a counter per HBM stack; a process for the fabric, with a thread per link
// direction and per collective group kind.
void write_trace(const std::string& path, System& system, const std::map<std::pair<int, int>, model::Program>& programs,
                 const std::vector<CollectiveRecord>& collectives) {
  tb::TraceEvents trace;
  for (int c = 0; c < system.chips(); ++c) {
    Chip& chip = system.chip(c);
    trace.process(c, fmt::format("chip {}", c));
    for (auto& core : chip.cores) {
      if (!core->loaded()) continue;
      const auto us_of_cycle = [&core](uint64_t cycle) { return static_cast<double>(core->ps_of_cycle(cycle)) / 1e6; };
      trace.add_core(c, core->index() * 64, fmt::format("core {}", core->index()), programs.at({c, core->index()}),
                     core->result(), us_of_cycle);
    }
    const auto& windows = chip.hbm.window_bytes();
    const double window_us = static_cast<double>(chip.hbm.tck_ps() * ChipHbm::kWindowCycles) / 1e6;
    for (size_t s = 0; s < windows.size(); ++s)
      for (size_t w = 0; w < windows[s].size(); ++w)
        trace.counter(c, fmt::format("hbm stack {} GB/s", s), static_cast<double>(w) * window_us,
                      {{"GB/s", static_cast<double>(windows[s][w]) / (window_us * 1e3)}});
  }
  // A process for the fabric: a track per link direction that carried traffic, a span per busy
  // stretch of its calendar.
  const int fabric = system.chips();
  bool named = false;
  const auto name_fabric = [&] {
    if (!named) trace.process(fabric, "NeuronLink");
    named = true;
  };
  for (int c = 0; c < system.chips(); ++c)
    for (int p = 0; p < kNumPorts; ++p) {
      const Link* l = system.link(c, p);
      if (!l || l->messages() == 0) continue;
      name_fabric();
      const int tid = c * kNumPorts + p;
      trace.thread(fabric, tid, fmt::format("link {} {} -> {}", c, port_name(p), system.topology().neighbor(c, p)));
      for (const auto& [start, end] : l->busy())
        trace.slice(fabric, tid, "busy", static_cast<double>(start) / 1e6, static_cast<double>(end - start) / 1e6);
    }
  // Collectives: a track per group kind on the same process, a span per collective.
  std::map<std::string, int> group_tracks;
  std::vector<CollectiveRecord> by_start = collectives;
  std::stable_sort(by_start.begin(), by_start.end(), [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  for (const CollectiveRecord& rec : by_start) {
    name_fabric();
    auto [it, added] = group_tracks.emplace(rec.group, system.chips() * kNumPorts + static_cast<int>(group_tracks.size()));
    if (added) trace.thread(fabric, it->second, fmt::format("collectives group {}", rec.group));
    trace.slice(fabric, it->second, rec.op, rec.start_us, std::max(0.0, rec.end_us - rec.start_us),
                {{"algo", rec.algo}, {"bytes", rec.bytes}, {"members", rec.members}});
  }
  trace.write(path, "--trace-json");
}

}  // namespace

std::vector<std::pair<int, int>> parse_core_list(const std::string& list, const SystemConfig& config,
                                                 const std::string& option) {
  std::vector<std::pair<int, int>> cores;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    int chip = -1, core = -1;
    size_t used = 0;
    if (std::sscanf(item.c_str(), "%d.%d%zn", &chip, &core, &used) != 2 || used != item.size())
      throw Error(fmt::format("{}: '{}': expected CHIP.CORE (two integers)", option, item));
    if (chip < 0 || chip >= config.chips() || core < 0 || core >= config.chip.cores)
      throw Error(fmt::format("{}: '{}': expected chip 0..{} and core 0..{}", option, item, config.chips() - 1,
                              config.chip.cores - 1));
    cores.emplace_back(chip, core);
    start = end + 1;
  }
  return cores;
}

SystemRunResult run_system(const SystemConfig& config, const SystemRunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto programs = load_programs(config, options.program);
  if (!options.outputs_dir.empty()) {
    std::error_code ec;
    fs::create_directories(options.outputs_dir, ec);
    if (ec) throw Error(fmt::format("--outputs: cannot create {}: {}", options.outputs_dir, ec.message()));
  }

  System::reset_kernel();
  ::tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_core::sc_time(config.quantum_ns, sc_core::SC_NS));
  System system(config);
  SystemCollectives collectives(system, config);
  // Messages of the collectives land in the receiving chip's HBM through its ChipHbm.
  for (int c = 0; c < system.chips(); ++c)
    system.chip(c).endpoint.land_through([&system, c](uint64_t addr, uint64_t bytes, Ps start, std::function<void()> landed) {
      System::spawn([&system, c, addr, bytes, start, landed = std::move(landed)] {
        const Ps now = ps_of(sc_core::sc_time_stamp());
        if (start > now) sc_core::wait(time_of(start - now));
        Chip::hbm_transfers(system, {{c, true, addr, bytes}});
        landed();
      });
    });
  model::CoreConfig core_config;
  core_config.te.rows = config.chip.pe_rows;
  core_config.te.cols = config.chip.pe_cols;
  core_config.lanes = config.chip.pe_rows;
  core_config.dma_engines = config.chip.dma_engines_per_core;
  core_config.hbm_bytes = static_cast<uint64_t>(config.chip.hbm_stack_gib * double(uint64_t{1} << 30)) * config.chip.hbm_stacks;
  core_config.clocks = options.timing.clocks;
  core_config.costs = options.timing.costs;
  // The uniform preset's one clock is chip.core_clock_ghz (a timing that sets its own clocks keeps them).
  if (options.timing.clocks == model::timing_preset("uniform").clocks)
    core_config.clocks.base_ghz = config.chip.core_clock_ghz;
  std::set<std::pair<int, int>> rtl(options.rtl_cores.begin(), options.rtl_cores.end());
  if (options.all_rtl)
    for (const auto& [where, _] : programs) rtl.insert(where);
  for (const auto& where : rtl)
    if (!programs.count(where))
      throw Error(fmt::format("--rtl-cores: chip {} core {} runs no program", where.first, where.second));
  if (!rtl.empty())
    if (const std::string why = model::rtl_timing_refusal(options.timing); !why.empty())
      throw Error(fmt::format("--timing {}: {}, with RTL cores", options.timing.preset, why));
  std::set<std::pair<int, int>> timing_only(options.timing_only_cores.begin(), options.timing_only_cores.end());
  for (const auto& where : timing_only) {
    if (!programs.count(where))
      throw Error(fmt::format("--no-data-cores: chip {} core {} runs no program", where.first, where.second));
    if (rtl.count(where))
      throw Error(fmt::format("--no-data-cores: chip {} core {} runs on the RTL, which always carries data",
                              where.first, where.second));
  }
  if (options.all_timing_only)
    for (const auto& [where, _] : programs)
      if (!rtl.count(where)) timing_only.insert(where);
  const int hbm_log2 = floor_log2(core_config.hbm_bytes);
  if (!rtl.empty()) {
    if (config.chip.pe_rows != config.chip.pe_cols)
      throw Error(fmt::format("--rtl-cores: the RTL core is square; chip.pe_rows {} != chip.pe_cols {}",
                              config.chip.pe_rows, config.chip.pe_cols));
    core_config.hbm_bytes = uint64_t{1} << hbm_log2;
  }
  if (!options.waves_dir.empty()) {
    std::error_code ec;
    fs::create_directories(options.waves_dir, ec);
    if (ec) throw Error(fmt::format("--waves: cannot create {}: {}", options.waves_dir, ec.message()));
  }
  for (auto& [where, program] : programs) {
    NeuronCore& core = *system.chip(where.first).cores[static_cast<size_t>(where.second)];
    const model::Program* prog = &program;
    auto describe = [prog](size_t i) {
      const model::CoreInstr& in = prog->queues[model::kCcQueue][i];
      return fmt::format("cc instruction {} at {}", i, in.loc.str());
    };
    model::CollectiveEngine& engine = collectives.port(where.first, where.second, core.wake(), describe);
    // Each core of a chip lays its image out at the top of a window of its own.
    model::CoreConfig placed = core_config;
    const uint64_t window = std::min(model::kCoreImageWindow,
                                     core_config.hbm_bytes / static_cast<uint64_t>(std::max(config.chip.cores, 1)));
    placed.image_top = core_config.hbm_bytes - static_cast<uint64_t>(where.second) * window;
    placed.image_window = window;
    if (rtl.count(where)) {
      const std::string waves = options.waves_dir.empty() ? std::string()
          : (fs::path(options.waves_dir) / fmt::format("chip{}.core{}.fst", where.first, where.second)).string();
      core.load_rtl(program, placed, system.chip(where.first).memory, &engine, config.rtl_slice_cycles, hbm_log2,
                    waves, options.pe_arith);
    } else {
      model::CoreConfig golden_config = placed;
      golden_config.timing_only = timing_only.count(where) > 0;
      core.load(program, golden_config, system.chip(where.first).memory, &engine);
      core.record_timeline(!options.trace_json.empty());
    }
    System::spawn([&core] { core.run_program(); }, fmt::format("chip{}_core{}_program", where.first, where.second));
  }
  if (options.progress) {
    System::spawn([&system, total = programs.size()] {
      for (;;) {
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));
        size_t done = 0;
        for (int c = 0; c < system.chips(); ++c)
          for (auto& core : system.chip(c).cores) done += core->finished();
        fmt::print(stderr, "\r[tlm] {:>10.1f} us simulated  {}/{} cores done", sc_core::sc_time_stamp().to_seconds() * 1e6,
                   done, total);
        if (done == total) break;
      }
    }, "progress");
  }
  System::simulate();
  if (options.progress) fmt::print(stderr, "\r{:70}\r", "");

  SystemRunResult r;
  r.sim_time_us = sc_core::sc_time_stamp().to_seconds() * 1e6;
  // Cores still running when nothing can happen any more wait for each other: a deadlock.
  std::string stuck;
  bool unfinished = false;
  for (auto& [where, program] : programs) {
    NeuronCore& core = *system.chip(where.first).cores[static_cast<size_t>(where.second)];
    if (core.finished()) {  // a core that ended in its own deadlock belongs in the report too
      if (core.result().status == model::CoreStatus::kDeadlock)
        stuck += fmt::format("\nchip {} core {}: {}", where.first, where.second, core.result().message);
      continue;
    }
    unfinished = true;
    stuck += fmt::format("\nchip {} core {}: {}", where.first, where.second, core.waiting());
  }
  if (unfinished) {
    r.status = "deadlock";
    r.message = fmt::format("deadlock at {:.3f} us: nothing left can end what these cores wait for{}{}", r.sim_time_us,
                            stuck, collectives.waiting_report());
  }
  for (auto& [where, program] : programs) {
    const auto [c, k] = where;
    NeuronCore& core = *system.chip(c).cores[static_cast<size_t>(k)];
    if (!core.finished()) {
      CoreReport rep;
      rep.chip = c;
      rep.core = k;
      rep.status = "deadlock";
      rep.engine = core.is_rtl() ? "rtl" : "golden";
      rep.timing_only = timing_only.count(where) > 0;
      r.cores.push_back(rep);
      continue;
    }
    const model::CoreResult& cr = core.result();
    CoreReport rep;
    rep.chip = c;
    rep.core = k;
    rep.engine = core.is_rtl() ? "rtl" : "golden";
    rep.timing_only = timing_only.count(where) > 0;
    rep.status = status_text(cr.status);
    rep.message = cr.message;
    rep.cycles = cr.cycles;
    for (const auto& q : cr.queues) rep.instructions += q.instructions;
    rep.te_utilization = cr.te_utilization(core.config());
    rep.hbm_bytes = cr.dma_bytes;
    rep.fetch_bytes = cr.fetch_bytes;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      rep.busy_cycles[q] = cr.queues[q].busy_cycles;
      rep.wait_cycles[q] = cr.queues[q].wait_cycles;
      rep.fetch_stall_cycles[q] = cr.queues[q].fetch_stall_cycles;
    }
    rep.busy_cycles[model::kSpQueue] = cr.dma_busy_cycles;  // as ncore run reports it
    const model::CoreClocks& clocks = core.config().clocks;
    rep.time_ns = clocks.ns(cr.cycles);
    for (int q = 0; q < isa::kNumQueue; ++q) {
      const auto div = static_cast<uint64_t>(clocks.div(model::queue_domain(q)));
      rep.engine_cycles[q] = cr.cycles / div;
      rep.engine_busy_cycles[q] = rep.busy_cycles[q] / div;
    }
    if (cr.status != model::CoreStatus::kDone && r.status == "done") {
      r.status = rep.status;
      r.message = fmt::format("chip {} core {}: {}", c, k, cr.message);
    }
    r.cores.push_back(rep);
    for (const auto& t : program.tensors) {
      if (!t.output || rep.timing_only) continue;
      OutputReport o{c, k, t.name, 0, core.tensor_bytes(t)};
      o.fnv1a = model::fnv1a(o.bytes);
      if (!options.outputs_dir.empty())
        model::write_tensor_npy(t, o.bytes, (fs::path(options.outputs_dir) / fmt::format("chip{}.core{}.{}.npy", c, k, t.name)).string());
      r.outputs.push_back(std::move(o));
    }
  }
  const double seconds = r.sim_time_us * 1e-6;
  for (int c = 0; c < system.chips(); ++c) {
    const ChipHbm& hbm = system.chip(c).hbm;
    r.hbm_channel_steps += hbm.channel_steps();
    for (size_t s = 0; s < hbm.stack_stats().size(); ++s) {
      StackReport rep;
      rep.chip = c;
      rep.stack = static_cast<int>(s);
      rep.bytes = hbm.stack_stats()[s].read_bytes + hbm.stack_stats()[s].write_bytes;
      rep.peak_gbps = hbm.stack_peak_gbps();
      rep.gbps = seconds > 0 ? static_cast<double>(rep.bytes) / seconds / 1e9 : 0;
      rep.utilization = rep.gbps / rep.peak_gbps;
      const double window_s = static_cast<double>(hbm.tck_ps() * ChipHbm::kWindowCycles) * 1e-12;
      for (uint64_t b : hbm.window_bytes()[s])
        rep.max_window_gbps = std::max(rep.max_window_gbps, static_cast<double>(b) / window_s / 1e9);
      r.hbm.push_back(rep);
    }
  }
  for (int c = 0; c < system.chips(); ++c)
    for (int p = 0; p < kNumPorts; ++p) {
      const Link* l = system.link(c, p);
      if (!l || l->messages() == 0) continue;
      LinkReport rep;
      rep.from = c;
      rep.to = system.topology().neighbor(c, p);
      rep.port = port_name(p);
      rep.bytes = l->bytes();
      rep.messages = l->messages();
      rep.utilization = r.sim_time_us > 0 ? static_cast<double>(l->busy_ps()) / (r.sim_time_us * 1e6) : 0;
      r.links.push_back(rep);
    }
  r.collectives = collectives.records();
  if (!options.trace_json.empty()) write_trace(options.trace_json, system, programs, r.collectives);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

Json to_json(const SystemRunResult& r) {
  Json j;
  j["status"] = r.status;
  if (!r.message.empty()) j["message"] = r.message;
  j["sim_time_us"] = r.sim_time_us;
  j["wall_seconds"] = r.wall_seconds;
  j["hbm_channel_steps"] = r.hbm_channel_steps;
  j["cores"] = Json::array();
  for (const auto& c : r.cores) {
    Json busy, wait, engine_cycles, engine_busy, fetch_stall;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      busy[isa::kQueueNames[q]] = c.busy_cycles[q];
      fetch_stall[isa::kQueueNames[q]] = c.fetch_stall_cycles[q];
      wait[isa::kQueueNames[q]] = c.wait_cycles[q];
      engine_cycles[isa::kQueueNames[q]] = c.engine_cycles[q];
      engine_busy[isa::kQueueNames[q]] = c.engine_busy_cycles[q];
    }
    j["cores"].push_back({{"chip", c.chip}, {"core", c.core}, {"engine", c.engine}, {"timing_only", c.timing_only}, {"status", c.status},
                          {"cycles", c.cycles}, {"time_ns", c.time_ns}, {"instructions", c.instructions},
                          {"te_utilization", c.te_utilization}, {"hbm_bytes", c.hbm_bytes}, {"fetch_bytes", c.fetch_bytes},
                          {"fetch_stall_cycles", fetch_stall},
                          {"busy_cycles", busy}, {"wait_cycles", wait}, {"engine_cycles", engine_cycles},
                          {"engine_busy_cycles", engine_busy}});
  }
  j["hbm"] = Json::array();
  for (const auto& s : r.hbm)
    j["hbm"].push_back({{"chip", s.chip}, {"stack", s.stack}, {"bytes", s.bytes}, {"gbps", s.gbps},
                        {"peak_gbps", s.peak_gbps}, {"utilization", s.utilization},
                        {"max_window_gbps", s.max_window_gbps}});
  j["links"] = Json::array();
  for (const auto& l : r.links)
    j["links"].push_back({{"from", l.from}, {"to", l.to}, {"port", l.port}, {"bytes", l.bytes},
                          {"messages", l.messages}, {"utilization", l.utilization}});
  j["collectives"] = Json::array();
  for (const auto& c : r.collectives) {
    Json e{{"op", c.op}, {"group", c.group}, {"algo", c.algo}, {"bytes", c.bytes}, {"members", c.members},
           {"start_us", c.start_us}, {"end_us", c.end_us}};
    if (!c.error.empty()) e["error"] = c.error;
    j["collectives"].push_back(e);
  }
  j["outputs"] = Json::array();
  for (const auto& o : r.outputs)
    j["outputs"].push_back({{"chip", o.chip}, {"core", o.core}, {"name", o.name}, {"fnv1a", fmt::format("{:016x}", o.fnv1a)}});
  return j;
}

}  // namespace ncore::tlmsys
