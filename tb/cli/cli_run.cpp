// ncore run / asm / disasm: NeuronCore programs. `run` executes a program on the golden core,
// the RTL core or both in co-simulation,
// and prints cycles, per-engine utilization, HBM bandwidth and output checksums; `asm` lists
// the assembled program (or its instruction words); `disasm` decodes words back to assembly.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/core/core_model.h"
#include "model/core/image.h"
#include "model/common/error.h"
#include "model/core/program.h"
#include "tb/cli/commands.h"
#include "tb/cli/timing_option.h"
#include "tb/cli/pe_arith_option.h"
#include "tb/cli/waves_options.h"
#include "tb/core/core_sim.h"
#include "tb/hbm/hbm_rtl_channel.h"
#include "tb/trace/trace_events.h"

namespace ncore::cli {
namespace {

struct RunOptions {
  std::string program, engine = "golden";
  uint64_t seed = 0;
  bool json = false, timeline = false;
  bool no_data = false;  // golden: timing only (model::CoreConfig::timing_only)
  bool no_fetch = false;  // golden: every instruction buffered from the start (FetchConfig::enabled)
  std::string hbm = "reference";  // rtl, cosim: the HBM controllers behind the DMA ports
  int size = 128;
  WavesOptions waves;
  tb::PeArith pe_arith = tb::kBuildPeArith;
  uint64_t watchdog = 1'000'000, max_cycles = 200'000'000;
  std::string outputs;  // folder for the output tensors as .npy
  std::string program_out;  // the image map as JSON
  std::string trace_json;  // a Chrome/Perfetto trace-event timeline (tb/trace/README.md)
  double timing_band = 0;  // cosim: fail unless |golden / RTL cycles - 1| <= this (0: no check)
  std::string timing = "trn2";  // a preset or a JSON file (tb/cli/timing_option.h); trn2 is the silicon's
};

// The clocks a run's cycles count: the base clock, and each domain's divider and frequency.
nlohmann::json clocks_json(const model::CoreClocks& c) {
  nlohmann::json j = {{"base_ghz", c.base_ghz}};
  for (int d = 0; d < model::kClockDomains; ++d) {
    const auto dom = static_cast<model::ClockDomain>(d);
    j["domains"][std::string(model::kClockDomainNames[static_cast<size_t>(d)])] = {{"divide", c.div(dom)},
                                                                                  {"ghz", c.ghz(dom)}};
  }
  return j;
}

// A queue's report in its engine's own clock: which clock, and the run's and the busy cycles in it.
void add_engine_cycles(nlohmann::json& queue, const model::CoreClocks& c, int q, uint64_t cycles, uint64_t busy) {
  const model::ClockDomain dom = model::queue_domain(q);
  queue["clock"] = model::kClockDomainNames[static_cast<size_t>(dom)];
  queue["engine_cycles"] = cycles / static_cast<uint64_t>(c.div(dom));
  queue["engine_busy_cycles"] = busy / static_cast<uint64_t>(c.div(dom));
}

// Every output tensor as DIR/NAME.npy (model/core/program.h gives the storage types); the
// folder is made.
void write_outputs(const std::string& dir, const model::Program& prog,
                   const std::vector<std::pair<std::string, std::vector<uint8_t>>>& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("--outputs {}: cannot make the folder ({})", dir, ec.message()));
  for (const auto& [name, bytes] : outputs)
    model::write_tensor_npy(*prog.tensor(name), bytes, (std::filesystem::path(dir) / (name + ".npy")).string());
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string word_hex(const isa::Word& w) {
  std::string s;
  for (int i = isa::kWordU64 - 1; i >= 0; --i) s += fmt::format("{:016x}", w[i]);
  return s;
}

// Where the image went: its extent and each queue's stream.
nlohmann::json image_json(const model::Program& prog, const model::ImageLayout& l) {
  nlohmann::json j = {{"base", l.base}, {"bytes", l.bytes}, {"placed", l.placed}, {"instruction_bytes", model::kInstrBytes},
                      {"list_entry_bytes", model::kDmaListEntryBytes}};
  for (int q = 0; q < isa::kNumQueue; ++q)
    j["streams"][isa::kQueueNames[q]] = {{"addr", l.stream[q]}, {"instructions", l.length[q]}};
  j["lists"] = nlohmann::json::array();
  for (size_t k = 0; k < prog.lists.size() && k < l.list.size(); ++k)
    j["lists"].push_back({{"name", prog.lists[k].name}, {"addr", l.list[k]}, {"entries", prog.lists[k].entries.size()},
                          {"line", prog.lists[k].loc.str()}});
  return j;
}

// --program-out FILE: the image map as JSON (`ncore asm --image` lists every word's address).
void write_image_map(const std::string& path, const model::Program& prog, const model::ImageLayout& l) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("--program-out {}: cannot write the file", path));
  nlohmann::json j = image_json(prog, l);
  j["program"] = prog.name;
  out << j.dump(2) << "\n";
  if (!out) throw Error(fmt::format("--program-out {}: the write failed", path));
}

// --trace-json FILE: the run's timeline as Chrome/Perfetto trace events (one core, pid 0).
// --timeline's entries: [queue, index, issue, start, complete, opcode] per instruction (an
// nc_matmul line is two: load_stationary, then multiply_moving).
nlohmann::json timeline_json(const model::Program& prog, const std::vector<model::InstrTiming>& timeline) {
  auto j = nlohmann::json::array();
  for (const auto& e : timeline) {
    const auto& queue = prog.queues[e.queue];
    const isa::OpcodeInfo* info = e.index < queue.size() ? isa::opcode_info(queue[e.index].opcode) : nullptr;
    j.push_back({isa::kQueueNames[e.queue], e.index, e.issue, e.start, e.complete, info ? info->name : "?"});
  }
  return j;
}

void write_core_trace(const RunOptions& o, const model::Program& prog, const model::CoreConfig& cfg,
                      const model::CoreResult& run) {
  tb::TraceEvents trace;
  trace.process(0, fmt::format("{} ({} core, size {})", o.program, o.engine == "golden" ? "golden" : "RTL", o.size));
  trace.add_core(0, 0, "core", prog, run,
                 [&cfg](uint64_t cycle) { return cfg.clocks.ns(cycle) / 1e3; });
  trace.write(o.trace_json, "--trace-json");
}

// Prints a run's JSON, or as text: the fields both engines fill (program, status, cycles,
// queues, tensor engine, HBM, outputs) and, when present, the RTL's (size, wall time,
// co-simulation, waves).
void print_report(const RunOptions& o, const model::Program& prog, const nlohmann::json& j) {
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("program       {} ({} instructions: pe {}, act {}, dve {}, sp {})\n", o.program,
             prog.instructions(), prog.queues[0].size(), prog.queues[1].size(), prog.queues[2].size(),
             prog.queues[3].size());
  if (j.contains("size"))
    fmt::print("engine        {} (RTL core, size {}, {} HBM controllers){}\n", o.engine, j["size"].get<int>(),
               j["hbm"].get<std::string>() == "rtl" ? "RTL" : "reference",
               j.contains("cosim") ? " with the golden core beside it" : "");
  else
    fmt::print("engine        {}\n", o.engine);
  fmt::print("status        {}\n", j["status"].get<std::string>());
  fmt::print("cycles        {} ({:.2f} us at {} GHz)", j["cycles"].get<uint64_t>(), j["microseconds"].get<double>(),
             j["clock_ghz"].get<double>());
  if (j.contains("clocks")) {
    std::string domains;
    for (const auto& [name, d] : j["clocks"]["domains"].items())
      domains += fmt::format("{}{} {:.3g}", domains.empty() ? "" : ", ", name, d["ghz"].get<double>());
    fmt::print(" [{} GHz]", domains);
  }
  if (j.contains("wall_seconds")) fmt::print(", {:.3g} s wall", j["wall_seconds"].get<double>());
  const bool fetch = j.contains("fetch_bytes");
  fmt::print("\n\n| queue | instructions | busy cycles | utilization | semaphore-wait cycles |{}\n|---|---|---|---|---|{}\n",
             fetch ? " fetch-stall cycles | fetched bytes |" : "", fetch ? "---|---|" : "");
  for (int q = 0; q < isa::kNumQueue; ++q) {
    const auto& s = j["queues"][isa::kQueueNames[q]];
    fmt::print("| {}{} | {} | {} | {:.1f}% | {} |", isa::kQueueNames[q], q == 3 ? " (DMA)" : "",
               s["instructions"].get<uint64_t>(), s["busy_cycles"].get<uint64_t>(),
               100.0 * s["utilization"].get<double>(), s["wait_cycles"].get<uint64_t>());
    if (fetch) fmt::print(" {} | {} |", s["fetch_stall_cycles"].get<uint64_t>(), s["fetched_bytes"].get<uint64_t>());
    fmt::print("\n");
  }
  fmt::print("\ntensor engine {} MACs, {:.1f}% of PE-cycles\n", j["te_macs"].get<uint64_t>(),
             100.0 * j["te_utilization"].get<double>());
  fmt::print("HBM (DMA)     {} bytes, {:.1f} GB/s\n", j["hbm_bytes"].get<uint64_t>(), j["hbm_gbps"].get<double>());
  if (fetch)
    fmt::print("HBM (fetch)   {} bytes of instructions from the image at 0x{:x}\n", j["fetch_bytes"].get<uint64_t>(),
               j["image"]["base"].get<uint64_t>());
  if (j.contains("outputs"))
    for (auto& [name, sum] : j["outputs"].items()) fmt::print("output        {} fnv1a {}\n", name, sum.get<std::string>());
  if (j.value("timing_only", false)) fmt::print("output        none: timing only (--no-data)\n");
  if (j.contains("outputs_dir"))
    fmt::print("outputs in    {}/ (NAME.npy)\n", j["outputs_dir"].get<std::string>());
  if (j.contains("cosim")) {
    const auto& c = j["cosim"];
    fmt::print("co-simulation {}: in lockstep {} instructions ({} lines written) and {} semaphore signals; at the "
               "end {} SBUF bytes, {} PSUM words and {} HBM bytes compared with the golden core ({} golden "
               "cycles)\n",
               c["ok"].get<bool>() ? "MATCH" : "MISMATCH", c["lockstep_instructions"].get<uint64_t>(),
               c["lockstep_lines"].get<uint64_t>(), c["lockstep_signals"].get<uint64_t>(),
               c["sbuf_bytes_compared"].get<uint64_t>(), c["psum_words_compared"].get<uint64_t>(),
               c["hbm_bytes_compared"].get<uint64_t>(), c["golden_cycles"].get<uint64_t>());
  }
  if (j.contains("waves")) fmt::print("waves         {}\n", j["waves"].get<std::string>());
}

int run_rtl(const RunOptions& o, const model::Program& prog, const model::CoreTiming& timing);

int run_program(const RunOptions& o) {
  if (o.engine != "golden" && o.engine != "rtl" && o.engine != "cosim")
    throw Error(fmt::format("--engine: expected golden, rtl or cosim, found '{}'", o.engine));
  if (o.timing_band > 0 && o.engine != "cosim")
    throw Error(fmt::format("--timing-band: compares the golden core with the RTL; expected --engine cosim, found '{}'", o.engine));
  if (o.engine == "golden" && !o.waves.waves.empty())
    throw Error("--waves: the golden core has no waves; use --engine rtl or cosim");
  if (o.no_data && o.engine != "golden")
    throw Error(fmt::format("--no-data: only the golden core runs without data; expected --engine golden, found '{}'", o.engine));
  if (o.hbm != "reference" && o.engine == "golden")
    throw Error(fmt::format("--hbm {}: the golden core times its own HBM; expected --engine rtl or cosim", o.hbm));
  if (o.no_fetch && o.engine != "golden")
    throw Error(fmt::format("--no-fetch: only the golden core runs without instruction fetch; expected --engine golden, found '{}'", o.engine));
  if (o.no_data && !o.outputs.empty())
    throw Error("--outputs: a --no-data run computes no outputs");
  const model::CoreTiming timing = load_timing(o.timing);
  if (o.engine != "golden")
    if (const std::string why = model::rtl_timing_refusal(timing); !why.empty())
      throw Error(fmt::format("--timing {}: {}, with --engine {}", o.timing, why, o.engine));
  model::Program prog = model::assemble_file(o.program, model::spmd_symbols(0, 0, 1, 1));
  if (o.seed)
    for (auto& t : prog.tensors) t.seed = model::SplitMix64(t.seed ^ (o.seed * 0x9E3779B97F4A7C15ull)).next();
  if (o.engine != "golden") return run_rtl(o, prog, timing);
  model::CoreConfig cfg = tb::core_config_for_size(o.size);
  cfg.clocks = timing.clocks;
  cfg.costs = timing.costs;
  cfg.timing_only = o.no_data;
  cfg.fetch.enabled = !o.no_fetch;
  model::CoreModel core(cfg, prog);
  core.load_tensors();
  if (!o.program_out.empty()) write_image_map(o.program_out, prog, core.image());
  core.record_timeline(o.timeline || !o.trace_json.empty());
  const bool tty = isatty(fileno(stderr)) && !o.json;
  if (tty)
    core.on_progress(1'000'000, [](uint64_t cycle, size_t done, size_t total) {
      fmt::print(stderr, "\r[run] cycle {:>12}  {}/{} instructions", cycle, done, total);
    });
  const auto start = std::chrono::steady_clock::now();
  const model::CoreResult r = core.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (tty) fmt::print(stderr, "\r{:60}\r", "");

  nlohmann::json j;
  j["program"] = o.program;
  j["engine"] = o.engine;
  j["status"] = std::string(model::core_status_name(r.status));
  j["error"] = std::string(model::core_error_name(r.error));
  j["message"] = r.message;
  j["cycles"] = r.cycles;
  j["microseconds"] = r.microseconds(cfg);
  j["time_ns"] = cfg.clocks.ns(r.cycles);
  j["launch_overhead_ns"] = timing.launch_overhead_ns;  // beside the kernel's time, never in it
  j["clock_ghz"] = cfg.clocks.base_ghz;
  j["clocks"] = clocks_json(cfg.clocks);
  j["timing"] = timing.preset;
  j["instructions"] = prog.instructions();
  j["te_macs"] = r.te_macs;
  j["te_utilization"] = r.te_utilization(cfg);
  j["hbm_bytes"] = r.dma_bytes;
  j["hbm_gbps"] = r.hbm_gbps(cfg);
  j["wall_seconds"] = wall;
  j["timing_only"] = o.no_data;
  j["fetch_bytes"] = r.fetch_bytes;
  j["list_entries"] = r.list_entries;
  j["image"] = image_json(prog, core.image());
  for (int q = 0; q < isa::kNumQueue; ++q) {
    const auto& s = r.queues[q];
    const uint64_t busy = q == static_cast<int>(isa::Queue::kSp) ? r.dma_busy_cycles : s.busy_cycles;
    j["queues"][isa::kQueueNames[q]] = {
        {"instructions", s.instructions}, {"busy_cycles", busy},
        {"utilization", r.cycles ? static_cast<double>(busy) / r.cycles : 0.0},
        {"wait_cycles", s.wait_cycles}, {"fetch_stall_cycles", s.fetch_stall_cycles},
        {"fetched_bytes", s.fetched_bytes}};
    add_engine_cycles(j["queues"][isa::kQueueNames[q]], cfg.clocks, q, r.cycles, busy);
  }
  std::vector<std::pair<std::string, std::vector<uint8_t>>> outputs;
  for (const auto& t : prog.tensors)
    if (t.output && !o.no_data) outputs.emplace_back(t.name, core.tensor_bytes(t));
  for (const auto& [name, bytes] : outputs) j["outputs"][name] = fmt::format("{:016x}", model::fnv1a(bytes));
  if (!o.outputs.empty()) {
    write_outputs(o.outputs, prog, outputs);
    j["outputs_dir"] = o.outputs;
  }
  if (o.timeline) {
    j["timeline"] = timeline_json(prog, r.timeline);
    j["fetch_stalls"] = nlohmann::json::array();
    for (const auto& s : r.fetch_stalls) j["fetch_stalls"].push_back({isa::kQueueNames[s.queue], s.index, s.begin, s.end});
  }
  if (!o.trace_json.empty()) {
    write_core_trace(o, prog, cfg, r);
    j["trace_json"] = o.trace_json;
  }

  print_report(o, prog, j);
  if (r.status != model::CoreStatus::kDone) {
    std::fflush(stdout);
    fmt::print(stderr, "ncore run: {}\n", r.message);
    return 1;
  }
  return 0;
}

// The RTL core (and, for cosim, the golden core beside it).
int run_rtl(const RunOptions& o, const model::Program& prog, const model::CoreTiming& timing) {
  tb::CoreSimOptions so;
  so.size = o.size;
  so.costs = timing.costs;  // what rtl_timing_refusal lets through: the engines' minimum interval
  so.clocks = timing.clocks;
  so.cosim = o.engine == "cosim";
  so.watchdog = o.watchdog;
  so.max_cycles = o.max_cycles;
  so.timeline = o.timeline || !o.trace_json.empty();
  so.pe_arith = o.pe_arith;
  if (o.hbm == "rtl") so.hbm_controllers = tb::rtl_hbm_controllers();
  o.waves.apply(so);
  so.reproduce = fmt::format("ncore run {} --engine cosim --size {}{}{}{}", o.program, o.size,
                             o.seed ? fmt::format(" --seed {}", o.seed) : "", o.hbm == "rtl" ? " --hbm rtl" : "",
                             o.timing != "trn2" ? " --timing " + o.timing : "");
  const bool tty = isatty(fileno(stderr)) && !o.json;
  if (tty) {
    so.progress_every = 20'000;
    so.progress = [](uint64_t cycle, uint64_t issued, uint64_t total) {
      fmt::print(stderr, "\r[run rtl] cycle {:>10}  {}/{} instructions issued", cycle, issued, total);
    };
  }
  const tb::CoreSimResult r = tb::run_core_rtl(prog, so);
  const model::ImageLayout image = model::layout_image(prog, tb::core_config_for_size(o.size).hbm_bytes);
  if (tty) fmt::print(stderr, "\r{:70}\r", "");
  model::CoreConfig cfg = tb::core_config_for_size(o.size);
  cfg.clocks = timing.clocks;  // the run's cycles are base-clock cycles
  const double us = cfg.clocks.ns(r.cycles) / 1e3;
  const uint64_t dma_bytes = r.dma_bursts * 32;

  nlohmann::json j;
  j["program"] = o.program;
  j["engine"] = o.engine;
  j["size"] = o.size;
  j["hbm"] = o.hbm;
  j["status"] = std::string(model::core_status_name(r.status));
  j["error"] = std::string(model::core_error_name(r.error));
  j["message"] = r.message;
  j["cycles"] = r.cycles;
  j["microseconds"] = us;
  j["time_ns"] = us * 1e3;
  j["launch_overhead_ns"] = timing.launch_overhead_ns;
  j["clock_ghz"] = cfg.clocks.base_ghz;
  j["clocks"] = clocks_json(cfg.clocks);
  j["timing"] = timing.preset;
  j["instructions"] = prog.instructions();
  j["te_macs"] = r.te_macs;
  j["te_utilization"] = r.te_utilization(o.size, cfg.clocks);
  j["hbm_bytes"] = dma_bytes;
  j["hbm_gbps"] = us > 0 ? dma_bytes / (us * 1e3) : 0.0;
  j["wall_seconds"] = r.wall_seconds;
  j["pe_arith"] = tb::pe_arith_name(o.pe_arith);  // which RTL build ran (rtl/common/README.md)
  uint64_t fetch_bytes = 0;
  for (int q = 0; q < isa::kNumQueue; ++q) {
    const auto& s = r.queues[q];
    j["queues"][isa::kQueueNames[q]] = {
        {"instructions", s.issued}, {"busy_cycles", s.busy_cycles},
        {"utilization", r.cycles ? static_cast<double>(s.busy_cycles) / r.cycles : 0.0},
        {"wait_cycles", s.wait_cycles}, {"fetch_stall_cycles", s.fetch_stall_cycles},
        {"fetched_bytes", s.fetched_bytes}};
    add_engine_cycles(j["queues"][isa::kQueueNames[q]], cfg.clocks, q, r.cycles, s.busy_cycles);
    fetch_bytes += s.fetched_bytes;
  }
  j["fetch_bytes"] = fetch_bytes;
  j["list_entries"] = r.list_entries;
  j["image"] = image_json(prog, image);
  if (!o.program_out.empty()) write_image_map(o.program_out, prog, image);
  for (const auto& [name, bytes] : r.outputs) j["outputs"][name] = fmt::format("{:016x}", model::fnv1a(bytes));
  if (!o.outputs.empty()) {
    write_outputs(o.outputs, prog, r.outputs);
    j["outputs_dir"] = o.outputs;
  }
  if (r.compared) {
    // The golden core's timing beside the RTL's (issue 27 calibrates one to the other).
    j["golden_cycles"] = r.golden.cycles;
    j["golden_over_rtl"] = r.cycles ? static_cast<double>(r.golden.cycles) / static_cast<double>(r.cycles) : 0.0;
    j["cosim"] = {{"ok", r.ok}, {"failure", r.failure},
                  {"sbuf_bytes_compared", r.sbuf_bytes_compared},
                  {"hbm_bytes_compared", r.hbm_bytes_compared},
                  {"psum_words_compared", r.psum_words_compared},
                  {"lockstep_instructions", r.lockstep_instructions},
                  {"lockstep_lines", r.lockstep_lines},
                  {"lockstep_signals", r.lockstep_signals},
                  {"golden_cycles", r.golden.cycles}};
  }
  if (!o.waves.waves.empty()) j["waves"] = o.waves.waves;
  if (o.timeline) {
    j["timeline"] = timeline_json(prog, r.timeline);
    j["fetch_stalls"] = nlohmann::json::array();
    for (const auto& s : r.fetch_stalls) j["fetch_stalls"].push_back({isa::kQueueNames[s.queue], s.index, s.begin, s.end});
    if (r.compared)
      j["golden_timeline"] = timeline_json(prog, r.golden.timeline);
  }
  if (!o.trace_json.empty()) {
    model::CoreResult rtl;  // the RTL's timeline in the golden core's terms
    rtl.timeline = r.timeline;
    rtl.fetch_stalls = r.fetch_stalls;
    rtl.sem_waits = r.sem_waits;
    write_core_trace(o, prog, cfg, rtl);
    j["trace_json"] = o.trace_json;
  }

  print_report(o, prog, j);
  std::fflush(stdout);
  int rc = 0;
  if (r.status != model::CoreStatus::kDone) {
    fmt::print(stderr, "ncore run: {}\n", r.message);
    rc = 1;
  }
  if (!r.ok) {
    fmt::print(stderr, "ncore run: {}{}\n", r.compared ? "co-simulation mismatch: " : "", r.failure);
    rc = 1;
  }
  if (o.timing_band > 0 && r.compared && r.cycles) {
    const double ratio = static_cast<double>(r.golden.cycles) / static_cast<double>(r.cycles);
    if (std::abs(ratio - 1.0) > o.timing_band) {
      fmt::print(stderr, "ncore run: --timing-band {}: the golden core took {} cycles, the RTL {} (ratio {:.4f})\n",
                 o.timing_band, r.golden.cycles, r.cycles, ratio);
      rc = 1;
    }
  }
  return rc;
}

// The assembled program; with `image`, the image's layout first and every word's HBM address
// (the default layout of a lone core, as `ncore run` loads it).
void list_program(const std::string& path, bool hex, bool image) {
  const model::Program prog = model::assemble_file(path, model::spmd_symbols(0, 0, 1, 1));
  model::ImageLayout layout;
  if (image) {
    layout = model::layout_image(prog, tb::core_config_for_size(128).hbm_bytes);
    for (const auto& line : split_lines(model::describe_image(prog, layout))) fmt::print("# {}\n", line);
  }
  for (int q = 0; q < isa::kNumQueue; ++q) {
    if (prog.queues[q].empty()) continue;
    fmt::print(".queue {}\n", isa::kQueueNames[q]);
    for (size_t i = 0; i < prog.queues[q].size(); ++i) {
      const auto& in = prog.queues[q][i];
      const std::string at = image ? fmt::format("0x{:010x} ", layout.instr_addr(q, i)) : "";
      // A dma_list of a list of the program: its place comes from the layout (with --image).
      model::CoreInstr shown = in;
      if (image && in.list_ref >= 0) shown.list = model::list_of(prog, in, layout);
      const std::string list =
          in.list_ref >= 0 ? fmt::format(" list {}", prog.lists[static_cast<size_t>(in.list_ref)].name) : "";
      if (hex)
        fmt::print("{}\n", word_hex(model::encode(shown)));
      else
        fmt::print("  {:<100} # {}{} [{}]{}\n", model::disassemble(shown), at, in.loc.str(), i, list);
    }
  }
}

// One word per line (256 hex digits); `.queue NAME` lines switch queues. Illegal words are
// reported with their line and the decoder's reason; the run fails if any was illegal.
int disassemble_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::string line;
  int lineno = 0, bad = 0;
  isa::Queue q = isa::Queue::kPe;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    if (line.rfind(".queue ", 0) == 0) {
      const std::string name = line.substr(7);
      bool found = false;
      for (int k = 0; k < isa::kNumQueue; ++k)
        if (name == isa::kQueueNames[k]) q = static_cast<isa::Queue>(k), found = true;
      if (!found) throw Error(fmt::format("{}:{}: expected a queue (pe, act, dve, sp), found '{}'", path, lineno, name));
      fmt::print(".queue {}\n", name);
      continue;
    }
    if (line.size() != isa::kWordBits / 4 || line.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw Error(fmt::format("{}:{}: expected {} hex digits, found {} characters", path, lineno, isa::kWordBits / 4, line.size()));
    isa::Word w{};
    for (int i = 0; i < isa::kWordU64; ++i)
      w[isa::kWordU64 - 1 - i] = std::stoull(line.substr(static_cast<size_t>(i) * 16, 16), nullptr, 16);
    model::CoreInstr instr;
    std::string why;
    const auto e = model::decode(w, q, &instr, &why);
    if (e != model::DecodeError::kNone) {
      fmt::print("  # {}:{}: illegal word: {}: {}\n", path, lineno, model::decode_error_name(e), why);
      ++bad;
    } else {
      fmt::print("  {}\n", model::disassemble(instr));
    }
  }
  return bad ? 1 : 0;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* run = app.add_subcommand("run", "run a NeuronCore program (assembly) on the core");
  run->add_option("program", o->program, "program file (.s)")->required();
  run->add_option("--engine", o->engine, "golden (model), rtl (the Verilated core) or cosim (RTL checked "
                                        "against the golden core)");
  run->add_option("--size", o->size, "core size: PE rows = columns = lanes (RTL: the sizes built)")
      ->check(CLI::Range(1, 128));
  add_pe_arith_option(run, o->pe_arith);
  add_waves_options(run, o->waves);
  run->add_option("--watchdog", o->watchdog, "RTL: cycles without progress before the core stops (0: off)");
  run->add_option("--max-cycles", o->max_cycles, "RTL: the harness stops the run here");
  run->add_option("--seed", o->seed, "re-seed every random tensor (0: the program's seeds)");
  run->add_option("--outputs", o->outputs, "write each output tensor as DIR/NAME.npy (BF16 and FP8 as raw bits)");
  run->add_option("--program-out", o->program_out, "write where the program image went in HBM (JSON)");
  run->add_flag("--json", o->json, "print JSON");
  run->add_option("--hbm", o->hbm, "rtl, cosim: the HBM controllers behind the DMA ports, the reference "
                                  "scheduler or the Verilated nc_hbm_ctrl (cycle-exact with it)")
      ->check(CLI::IsMember({"reference", "rtl"}));
  run->add_flag("--no-data", o->no_data, "golden: timing only, no arithmetic or data movement (the same cycles)");
  run->add_flag("--no-fetch", o->no_fetch, "golden: every instruction in its queue's buffer from the start (what "
                                          "instruction fetch costs a program)");
  run->add_flag("--timeline", o->timeline, "with --json: every instruction's queue, index, issue/start/complete cycles and opcode");
  run->add_option("--trace-json", o->trace_json, "write a Chrome/Perfetto trace-event timeline: a track per queue, "
                                                 "DMA engine, semaphore waits and instruction fetch");
  run->add_option("--timing", o->timing, "the core's clocks and fixed costs: a preset (trn2, the default: NeuronCore-v3's "
                                        "clocks and costs; trn1; uniform: one 2.4 GHz clock, no fixed costs) or a JSON "
                                        "file (model/README.md, \"Timing presets\"); rtl and cosim: the same, with 1, 2 or "
                                        "4 LoadStationary columns a cycle");
  run->add_option("--timing-band", o->timing_band,
                  "cosim: exit 1 unless the golden core's cycles are within this fraction of the RTL's")
      ->check(CLI::Range(0.0, 1.0));
  run->callback([o] {
    const int rc = run_program(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto path = std::make_shared<std::string>();
  auto hex = std::make_shared<bool>(false);
  auto image = std::make_shared<bool>(false);
  auto* as = app.add_subcommand("asm", "assemble a program and list it (or its instruction words)");
  as->add_option("program", *path, "program file (.s)")->required();
  as->add_flag("--hex", *hex, "print the 1024-bit words, one per line (the disasm input)");
  as->add_flag("--image", *image, "the program image's layout in HBM and each instruction's address");
  as->callback([path, hex, image] {
    if (*hex && *image) throw Error("--image and --hex: --hex prints bare words (the disasm input); choose one");
    list_program(*path, *hex, *image);
  });

  auto words = std::make_shared<std::string>();
  auto* dis = app.add_subcommand("disasm", "decode instruction words (ncore asm --hex output)");
  dis->add_option("file", *words, "hex words, one per line, with .queue lines")->required();
  dis->callback([words] {
    const int rc = disassemble_file(*words);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ncore::cli
