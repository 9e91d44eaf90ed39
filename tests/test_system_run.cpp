// System runs (tb/tlm/system_run.h): programs on the running cores of a chip and an instance,
// their DMA timed by the chip's shared HBM (tb/tlm/chip_hbm.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <set>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "model/common/npy.h"
#include "model/common/numerics.h"
#include "tb/core/core_sim.h"
#include "tb/tlm/chip_hbm.h"
#include "tb/tlm/system_run.h"
#include "tests/seed.h"

namespace ncore::tlmsys {
namespace {

namespace fs = std::filesystem;

const std::string kSystemPrograms = std::string(NCORE_PROGRAMS) + "/system";

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ncore_system_run_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

SystemConfig chip(int cores, double pin_gbps = 5.664) {
  SystemConfig c = default_system("chip");
  c.chip.cores = cores;
  c.chip.hbm_pin_gbps = pin_gbps;
  return c;
}

SystemRunResult run(const SystemConfig& config, const std::string& program, const std::string& outputs = "",
                    const std::string& trace = "") {
  SystemRunOptions o;
  o.program = program;
  o.outputs_dir = outputs;
  o.trace_json = trace;
  return run_system(config, o);
}

uint64_t slowest_core(const SystemRunResult& r) {
  uint64_t cycles = 0;
  for (const auto& c : r.cores) cycles = std::max(cycles, c.cycles);
  return cycles;
}

// hbm_stream.s: each core copies its own 1.25 MiB HBM -> SBUF -> HBM on 10 DMA engines.
TEST(SystemRunContention, EightCoresTakeAsLongAsOneUntilTheHbmIsCutEightfold) {
  const std::string program = kSystemPrograms + "/hbm_stream.s";
  const SystemRunResult one = run(chip(1), program);
  const SystemRunResult eight = run(chip(8), program);
  const SystemRunResult slow = run(chip(8, 5.664 / 8), program);
  for (const auto* r : {&one, &eight, &slow}) {
    ASSERT_EQ(r->status, "done") << r->message;
    for (const auto& c : r->cores) EXPECT_EQ(c.hbm_bytes, 2u * 20 * 32768);
  }
  const double shared = double(slowest_core(eight)) / double(slowest_core(one));
  const double cut = eight.sim_time_us / slow.sim_time_us;
  std::printf("cycles: 1 core %llu, 8 cores %llu (x%.3f); 8 cores at 1/8 of the pin rate: %.2f us against %.2f us (x%.2f)\n",
              static_cast<unsigned long long>(slowest_core(one)), static_cast<unsigned long long>(slowest_core(eight)),
              shared, slow.sim_time_us, eight.sim_time_us, 1 / cut);
  // The chip's 2.9 TB/s carries 8 cores' demand (8 x 10 engines x 28.8 GB/s) with little
  // queueing; at 1/8 of it the HBM is the bottleneck, busy most of the run, and the run takes
  // longer by up to 8 x (utilization at full rate / utilization at 1/8). (The DRAM keeps its
  // nanosecond latencies at the slower clock, so the HBM stays well used.)
  double gbps = 0, peak = 0;
  for (const auto& st : slow.hbm) gbps += st.gbps, peak += st.peak_gbps;
  std::printf("8 cores at 1/8 of the pin rate: the HBM %.1f%% busy\n", 100 * gbps / peak);
  EXPECT_LT(shared, 1.15);
  EXPECT_GT(gbps / peak, 0.85);
  EXPECT_GT(1 / cut, 4.0);
  EXPECT_LT(1 / cut, 8.5);
  // No stack is ever faster than its peak, over the run or in any window.
  for (const auto* r : {&one, &eight, &slow})
    for (const auto& s : r->hbm) {
      EXPECT_LE(s.gbps, s.peak_gbps);
      EXPECT_LE(s.max_window_gbps, s.peak_gbps * (1 + 1e-9)) << "stack " << s.stack;
    }
  // Every stack carries an equal share: the address map spreads each stream over all of them,
  // and each core's instruction fetch (its image's words) too.
  uint64_t fetched = 0;
  for (const auto& c : eight.cores) fetched += c.fetch_bytes;
  EXPECT_GT(fetched, 0u);
  for (const auto& s : eight.hbm) EXPECT_EQ(s.bytes, (8u * 2 * 20 * 32768 + fetched) / 4);
}

// Issue 50: the DRAM's timing is in nanoseconds (model::HbmDramTiming), so a slower pin rate
// slows the data bus and keeps the DRAM's own latencies. One core streaming alone, whose
// demand the chip carries at full rate, takes 1.7 times as long at 1/8 of the pin rate; with
// every timing counted in clocks, as before, it took 3.3 times (every latency grew eightfold).
TEST(SystemRunContention, ASlowerPinRateKeepsTheDramLatencies) {
  const std::string program = kSystemPrograms + "/hbm_stream.s";
  const SystemRunResult full = run(chip(1), program), slow = run(chip(1, 5.664 / 8), program);
  ASSERT_EQ(full.status, "done") << full.message;
  ASSERT_EQ(slow.status, "done") << slow.message;
  std::printf("one core: %.2f us at the full pin rate, %.2f us at 1/8 (x%.2f)\n", full.sim_time_us, slow.sim_time_us,
              slow.sim_time_us / full.sim_time_us);
  EXPECT_LT(slow.sim_time_us / full.sim_time_us, 2.0);
  EXPECT_GT(slow.sim_time_us / full.sim_time_us, 1.0);
}

TEST(SystemRunContention, SameProgramSameCycles) {
  const std::string program = kSystemPrograms + "/hbm_stream.s";
  const SystemRunResult a = run(chip(8), program), b = run(chip(8), program);
  ASSERT_EQ(a.cores.size(), b.cores.size());
  for (size_t i = 0; i < a.cores.size(); ++i) EXPECT_EQ(a.cores[i].cycles, b.cores[i].cycles);
  EXPECT_EQ(a.sim_time_us, b.sim_time_us);
}

// Issue 50: the chip's HBM steps a pseudo-channel only at its events (ChipHbm, event-driven).
// Against the reference that steps every busy channel every cycle (chip.hbm_step_every_cycle),
// every figure of the run is the same, exactly: on the contention workloads, the tensor-parallel
// MLP with its collectives, an RTL core's per-burst traffic, and random DMA traffic (seeded).
std::string random_dma_program(uint64_t seed) {
  model::SplitMix64 rng(seed);
  std::string s = ".equ BASE CORE*0x1000000\n.queue sp\n";
  for (int i = 0; i < 48; ++i) {
    const uint64_t bytes = 32 * (1 + rng.below(64)), rows = 1 + rng.below(8);
    const bool read = rng.below(3) != 0;
    s += fmt::format("dma_copy engine={} dir={} hbm_addr=BASE+{} sbuf_addr={} bytes={} count1={} hbm_stride1={} "
                     "sbuf_stride1=SBUF_PARTITION\n",
                     rng.below(16), read ? "hbm_to_sbuf" : "sbuf_to_hbm", 32 * rng.below(1 << 16),
                     32 * rng.below(64), bytes, rows, 32 * (bytes / 32 + rng.below(4096)));
  }
  return s;
}

void expect_event_driven_hbm_equal(SystemConfig config, const SystemRunOptions& options) {
  config.chip.hbm_step_every_cycle = true;
  const SystemRunResult every = run_system(config, options);
  config.chip.hbm_step_every_cycle = false;
  const SystemRunResult events = run_system(config, options);
  ASSERT_EQ(every.status, "done") << every.message;
  nlohmann::json a = to_json(every), b = to_json(events);
  for (auto* j : {&a, &b}) {  // what the simulation cost
    j->erase("wall_seconds");
    j->erase("hbm_channel_steps");
  }
  EXPECT_GT(a.at("hbm").at(0).at("bytes").get<uint64_t>(), 0u) << "no HBM traffic to compare";
  EXPECT_EQ(a.dump(1), b.dump(1));
  // And it skips quiet cycles: fewer steps (how many fewer depends on how busy the channels
  // are: 0.66 of them on the data-parallel step, 0.92 on hbm_stream's saturated channels).
  EXPECT_LT(events.hbm_channel_steps, every.hbm_channel_steps)
      << "event-driven " << events.hbm_channel_steps << " steps, every cycle " << every.hbm_channel_steps;
}

TEST(SystemRunContention, EventDrivenHbmIsTheCycleByCycleHbm) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/hbm_stream.s";
  expect_event_driven_hbm_equal(chip(8), o);
  expect_event_driven_hbm_equal(chip(8, 5.664 / 8), o);
  o.program = kSystemPrograms + "/tp_mlp.s";
  expect_event_driven_hbm_equal(default_system("chip"), o);
  const uint64_t seed = test::test_seed(50);
  SCOPED_TRACE(fmt::format("random DMA traffic, seed {}", seed));
  o.program = write_file(temp_dir("random_dma") / "random.s", random_dma_program(seed));
  o.all_timing_only = true;
  o.timing = model::timing_preset("trn2");
  expect_event_driven_hbm_equal(chip(8), o);
  expect_event_driven_hbm_equal(chip(8, 5.664 / 4), o);
}

TEST(SystemRunContention, EventDrivenHbmIsTheCycleByCycleHbmUnderAnRtlCore) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/collectives.s";
  o.rtl_cores = {{0, 1}};
  SystemConfig c = default_system("chip");
  c.chip.pe_rows = c.chip.pe_cols = 8;
  expect_event_driven_hbm_equal(c, o);
}

// The speed benchmark's millisecond workloads (scripts/system_bench --long): dp_step.s and
// tp_mlp.s at STEPS > 1, one step after another. At 3 steps on a chip every output is
// the single step's, bit for bit (each step computes the same block from the same inputs), and
// the run takes at least 3 steps' time less their overlap (a step waits for the last one's
// all_reduce, so the repeated run is longer than 3 single steps that overlap their collectives).
TEST(SystemRunSpeedWorkloads, StepsRepeatTheStepAndItsOutputs) {
  const fs::path dir = temp_dir("steps");
  for (const auto& f : fs::directory_iterator(kSystemPrograms))
    if (f.path().extension() == ".npy") fs::copy_file(f.path(), dir / f.path().filename());
  for (const char* program : {"tp_mlp.s", "dp_step.s"}) {
    SCOPED_TRACE(program);
    std::ifstream in(kSystemPrograms + "/" + program);
    std::stringstream text;
    text << in.rdbuf();
    std::string source = text.str();
    const size_t at = source.find(".equ STEPS ");
    ASSERT_NE(at, std::string::npos);
    source.replace(at, source.find(' ', at + 11) - at, ".equ STEPS 3");
    const SystemRunResult single = run(default_system("chip"), kSystemPrograms + "/" + program);
    const SystemRunResult repeated = run(default_system("chip"), write_file(dir / program, source));
    ASSERT_EQ(single.status, "done") << single.message;
    ASSERT_EQ(repeated.status, "done") << repeated.message;
    ASSERT_EQ(single.outputs.size(), repeated.outputs.size());
    ASSERT_FALSE(single.outputs.empty());
    for (size_t i = 0; i < single.outputs.size(); ++i) {
      EXPECT_EQ(single.outputs[i].name, repeated.outputs[i].name);
      EXPECT_EQ(single.outputs[i].bytes, repeated.outputs[i].bytes) << single.outputs[i].name;
    }
    EXPECT_GT(repeated.sim_time_us, 2.5 * single.sim_time_us);
  }
}

TEST(ChipHbmMap, EveryStripeHasOnePlaceAndNeighboursAlternateStacks) {
  const ChipHbmMap map(4, 32);
  std::map<std::pair<int, uint64_t>, uint64_t> seen;
  for (uint64_t a = 0; a < (uint64_t{1} << 24); a += kHbmStripeBytes) {
    const auto p = map.locate(a);
    ASSERT_LT(p.channel, 128);
    EXPECT_EQ(p.channel, p.stack + 4 * p.pseudo_channel);
    EXPECT_TRUE(seen.emplace(std::pair{p.channel, p.local}, a).second) << "two stripes at one place: " << a;
  }
  EXPECT_NE(map.locate(0).stack, map.locate(kHbmStripeBytes).stack);
}

// spmd.s: core (CHIP, CORE) copies slice CHIP * CORES + CORE of a ramp to its own output.
TEST(SystemRunSpmd, EveryCoreSeesItsChipCoreAndTheSystemSize) {
  const SystemRunResult r = run(default_system("trn2"), kSystemPrograms + "/spmd.s");
  ASSERT_EQ(r.status, "done") << r.message;
  ASSERT_EQ(r.cores.size(), 128u);
  ASSERT_EQ(r.outputs.size(), 128u);
  for (const auto& o : r.outputs) {
    const int slice = o.chip * 8 + o.core;
    ASSERT_EQ(o.bytes.size(), 64u * 4);
    for (int j = 0; j < 64; ++j) {
      int32_t v;
      std::memcpy(&v, o.bytes.data() + 4 * j, 4);
      ASSERT_EQ(v, slice * 64 + j) << "chip " << o.chip << " core " << o.core << " element " << j;
    }
  }
}

TEST(SystemRunOutputs, EveryOutputIsWrittenAsNpyPerChipAndCore) {
  const fs::path dir = temp_dir("outputs");
  const SystemRunResult r = run(chip(8), kSystemPrograms + "/spmd.s", dir.string());
  ASSERT_EQ(r.status, "done") << r.message;
  for (const auto& o : r.outputs) {
    const fs::path file = dir / ("chip" + std::to_string(o.chip) + ".core" + std::to_string(o.core) + "." + o.name + ".npy");
    ASSERT_TRUE(fs::exists(file)) << file;
    const model::NpyArray a = model::read_npy(file.string());
    EXPECT_EQ(a.descr, "<i4");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{64}));
    EXPECT_EQ(a.data, o.bytes);
  }
}

TEST(SystemRunManifest, EachCoreRunsItsOwnProgramAndOthersStayIdle) {
  const fs::path dir = temp_dir("manifest");
  fs::copy_file(kSystemPrograms + "/spmd.s", dir / "spmd.s");
  const std::string manifest = write_file(
      dir / "run.json", R"({"cores": [{"chip": 0, "core": 2, "program": "spmd.s"}, {"chip": 0, "core": 5, "program": "spmd.s"}]})");
  const SystemRunResult r = run(chip(8), manifest);
  ASSERT_EQ(r.status, "done") << r.message;
  ASSERT_EQ(r.cores.size(), 2u);
  EXPECT_EQ(r.cores[0].core, 2);
  EXPECT_EQ(r.cores[1].core, 5);
  int32_t first;
  std::memcpy(&first, r.outputs[1].bytes.data(), 4);
  EXPECT_EQ(first, 5 * 64);
}

TEST(SystemRunManifest, BadManifestsNameTheFileTheKeyAndWhatWasFound) {
  const fs::path dir = temp_dir("bad_manifest");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([1, 2])", "cores: expected an object with an array \"cores\""},
      {R"({"cores": [], "extra": 1})", "extra: expected only the key \"cores\""},
      {R"({"cores": [{"chip": 0, "core": 9, "program": "a.s"}]})", "cores[0].core: expected an integer 0..7, found 9"},
      {R"({"cores": [{"chip": 1, "core": 0, "program": "a.s"}]})", "cores[0].chip: expected an integer 0..0, found 1"},
      {R"({"cores": [{"chip": 0, "core": 0}]})", "cores[0].program: expected a file name, found null"},
      {R"({"cores": [{"chip": 0, "core": 0, "program": "a.s", "engine": "x"}]})", "cores[0].engine: expected chip, core or program"},
      {R"({"cores": [{"chip": 0, "core": 0, "program": "missing.s"}]})", "cores[0].program: expected a program file, found \"/"},
      {R"({"cores": )", "not JSON"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = write_file(dir / "bad.json", text);
    try {
      run(chip(8), path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

TEST(SystemRunDeadlock, ACoreThatWaitsForeverEndsTheRunNamingChipCoreQueueAndSemaphore) {
  const fs::path dir = temp_dir("deadlock");
  const std::string program = write_file(dir / "wait.s", R"(.sem never
.queue act
.if CORE==3
  nop wait=never>=1
.endif
)");
  const SystemRunResult r = run(chip(8), program);
  EXPECT_EQ(r.status, "deadlock");
  EXPECT_NE(r.message.find("chip 0 core 3"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("act waits at instruction 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("semaphore never >= 1"), std::string::npos) << r.message;
}

TEST(SystemRunTrace, TraceIsTraceEventJsonWithATrackPerQueueEngineAndStack) {
  const fs::path dir = temp_dir("trace");
  const std::string trace = (dir / "trace.json").string();
  const SystemRunResult r = run(chip(2), kSystemPrograms + "/hbm_stream.s", "", trace);
  ASSERT_EQ(r.status, "done") << r.message;
  std::ifstream in(trace);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::set<std::string> tracks;
  size_t spans = 0, counters = 0, fetch_stalls = 0, waits = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.at("pid").is_number_integer());
    if (ph == "M" && e.at("name") == "thread_name") tracks.insert(e.at("args").at("name").get<std::string>());
    if (ph == "X" && e.at("name") == "fetch stall") {
      ++fetch_stalls;  // a queue waiting for its next instruction from the image
      EXPECT_GT(e.at("dur").get<double>(), 0.0);
    } else if (ph == "X" && e.at("name").get<std::string>().rfind("wait ", 0) == 0) {
      ++waits;  // a queue's head waiting for its semaphore
      EXPECT_GT(e.at("dur").get<double>(), 0.0);
    } else if (ph == "X") {
      ++spans;
      ASSERT_TRUE(e.at("ts").is_number() && e.at("dur").is_number() && e.at("tid").is_number_integer());
      ASSERT_GE(e.at("dur").get<double>(), 0.0);
    }
    if (ph == "C") ++counters;
  }
  EXPECT_EQ(spans, 2u * 2 * 20);  // every dma_copy of both cores
  EXPECT_GE(fetch_stalls, 2u);    // at least each core's first instructions
  EXPECT_GE(waits, 2u);           // each core's final wait for its DMA
  EXPECT_TRUE(tracks.count("core 1 dma 9")) << "a track per DMA engine";
  EXPECT_GT(counters, 0u);
}

// Collectives issued by programs: every output against sums computed here in rank order from
// each core's own inputs (its init= declarations), bit for bit.
float f32(const std::vector<uint8_t>& b, size_t i) {
  uint32_t v;
  std::memcpy(&v, b.data() + 4 * i, 4);
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
float bf16(const std::vector<uint8_t>& b, size_t i) {
  const uint32_t v = static_cast<uint32_t>(b[2 * i] | b[2 * i + 1] << 8) << 16;
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
uint16_t round_bf16(float f) {  // round to nearest even (finite values)
  uint32_t v;
  std::memcpy(&v, &f, 4);
  return static_cast<uint16_t>((v + 0x7FFF + (v >> 16 & 1)) >> 16);
}
std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void expect_collectives(const SystemConfig& config) {
  const std::string program = kSystemPrograms + "/collectives.s";
  const SystemRunResult r = run(config, program);
  ASSERT_EQ(r.status, "done") << r.message;
  const int chips = config.chips(), cores = config.chip.cores;
  std::map<std::pair<int, int>, std::vector<uint8_t>> in, inb;
  for (int c = 0; c < chips; ++c)
    for (int k = 0; k < cores; ++k) {
      const model::Program p = model::assemble_file(program, model::spmd_symbols(c, k, chips, cores));
      in[{c, k}] = model::tensor_init_bytes(*p.tensor("IN"));
      inb[{c, k}] = model::tensor_init_bytes(*p.tensor("INB"));
    }
  std::map<std::tuple<int, int, std::string>, std::vector<uint8_t>> got;
  for (const auto& o : r.outputs) got[{o.chip, o.core, o.name}] = o.bytes;
  ASSERT_EQ(got.size(), static_cast<size_t>(chips * cores * 6));
  for (int c = 0; c < chips; ++c)
    for (int k = 0; k < cores; ++k) {
      std::vector<float> ar(1024), rs(1024 / chips), ag;
      std::vector<uint8_t> arb(2048), a2a;
      for (size_t i = 0; i < 1024; ++i) {
        float s = f32(in[{0, k}], i);
        for (int x = 1; x < chips; ++x) s += f32(in[{x, k}], i);
        ar[i] = s;
        float b = bf16(inb[{c, 0}], i);
        for (int j = 1; j < cores; ++j) b += bf16(inb[{c, j}], i);
        const uint16_t h = round_bf16(b);
        arb[2 * i] = static_cast<uint8_t>(h);
        arb[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      }
      for (size_t i = 0; i < rs.size(); ++i) rs[i] = ar[static_cast<size_t>(c) * rs.size() + i];
      for (int x = 0; x < chips; ++x)
        for (int j = 0; j < cores; ++j)
          for (size_t i = 0; i < 32; ++i) ag.push_back(f32(in[{x, j}], i));
      const size_t block = 2048 / static_cast<size_t>(cores);
      for (int j = 0; j < cores; ++j)
        a2a.insert(a2a.end(), inb[{c, j}].begin() + static_cast<std::ptrdiff_t>(block * static_cast<size_t>(k)),
                   inb[{c, j}].begin() + static_cast<std::ptrdiff_t>(block * static_cast<size_t>(k + 1)));
      const std::string who = "chip " + std::to_string(c) + " core " + std::to_string(k);
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("AR"))]), f32_bytes(ar)) << who;
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("BACK"))]), f32_bytes(ar)) << who;
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("ARB"))]), arb) << who;
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("RS"))]), f32_bytes(rs)) << who;
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("AG"))]), f32_bytes(ag)) << who;
      EXPECT_EQ((got[std::make_tuple(c, k, std::string("A2A"))]), a2a) << who;
    }
  // Each core's five collectives, once per group: chips x (2 of group chips) ... recorded.
  size_t groups = 2 * static_cast<size_t>(cores) + 2 * static_cast<size_t>(chips) + 1;
  EXPECT_EQ(r.collectives.size(), groups);
  for (const auto& c : r.collectives) {
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_GT(c.end_us, c.start_us) << c.op;
  }
}

TEST(SystemRunCollectives, EveryOpInEveryGroupIsBitExactOnAChip) { expect_collectives(default_system("chip")); }

TEST(SystemRunCollectives, EveryOpInEveryGroupIsBitExactOnAnInstance) { expect_collectives(default_system("trn2")); }

TEST(SystemRunCollectives, MembersThatIssueDifferentCollectivesAreNamed) {
  const fs::path dir = temp_dir("mismatch");
  const std::string program = write_file(dir / "mismatch.s", R"(.queue cc
.if CORE==3
  all_reduce src=0x100000 dst=0x200000 bytes=64 group=cores
.else
  all_reduce src=0x100000 dst=0x200000 bytes=128 group=cores
.endif
)");
  const SystemRunResult r = run(chip(8), program);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.message.find("cc_refused"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("mismatch: the members issued different collectives"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("chip 0 core 3: all_reduce dtype=fp32 bytes=64"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("chip 0 core 2: all_reduce dtype=fp32 bytes=128"), std::string::npos) << r.message;
  for (const auto& c : r.cores) EXPECT_EQ(c.status, "error") << "chip 0 core " << c.core;
}

// LNC=2 pairs (core_barrier.s): each core reads its partner's half of their shared HBM tensor
// after a core_barrier, and all_reduces over the pair. PEER must be the partner's input (the
// odd core publishes late, so a barrier that did not wait would read zeros) and AR the pair's
// sum in rank order, computed here from the inputs the assembler initializes.
SystemRunResult expect_pairs(const SystemConfig& config, const std::vector<std::pair<int, int>>& rtl_cores = {}) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/core_barrier.s";
  o.rtl_cores = rtl_cores;
  const SystemRunResult r = run_system(config, o);
  EXPECT_EQ(r.status, "done") << r.message;
  const int cores = config.chip.cores;
  std::map<int, std::vector<uint8_t>> in;
  for (int k = 0; k < cores; ++k)
    in[k] = model::tensor_init_bytes(*model::assemble_file(o.program, model::spmd_symbols(0, k, 1, cores)).tensor("IN"));
  std::map<std::pair<int, std::string>, std::vector<uint8_t>> got;
  for (const auto& out : r.outputs) got[{out.core, out.name}] = out.bytes;
  EXPECT_EQ(got.size(), static_cast<size_t>(2 * cores));
  for (int k = 0; k < cores; ++k) {
    std::vector<float> sum(1024);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = f32(in[k & ~1], i) + f32(in[k | 1], i);
    EXPECT_EQ((got[{k, "PEER"}]), in[k ^ 1]) << "core " << k;
    EXPECT_EQ((got[{k, "AR"}]), f32_bytes(sum)) << "core " << k;
  }
  EXPECT_EQ(r.collectives.size(), static_cast<size_t>(cores)) << "an all_reduce and a core_barrier per pair";
  for (const auto& c : r.collectives) {
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_EQ(c.group, "pair");
    EXPECT_EQ(c.members, 2);
    if (c.op == "core_barrier") EXPECT_NEAR(c.end_us - c.start_us, config.chip.core_barrier_ns / 1e3, 1e-6);
  }
  return r;
}

TEST(SystemRunPairs, ACoreBarrierOrdersThePairsSharedHbmAndAllReduceSumsThePair) {
  const SystemRunResult quick = expect_pairs(chip(8));
  SystemConfig slow = chip(8);
  slow.chip.core_barrier_ns = 5300;
  const SystemRunResult later = expect_pairs(slow);
  // Every core reads its partner's half after the barrier: the run is 4 us longer.
  EXPECT_NEAR(later.sim_time_us - quick.sim_time_us, 4.0, 0.05);
}

TEST(SystemRunPairs, AnRtlCoreMeetsItsGoldenPartnerAtTheBarrier) {
  SystemConfig small = chip(4);  // RTL cores of size 8 (small_cores below)
  small.chip.pe_rows = small.chip.pe_cols = 8;
  expect_pairs(small, {{0, 1}, {0, 2}});
}

TEST(SystemRunPairs, ABarrierThatIsNotAPairsOrMovesDataIsRefusedAndACoreWithoutAPartnerIsNamed) {
  const fs::path dir = temp_dir("pairs_refused");
  for (const auto& [name, text, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"bytes.s", ".queue cc\n  core_barrier group=pair bytes=64\n",
            "size: chip 0 core 0: bytes 64: a core_barrier moves nothing, expected 0"},
           {"group.s", ".queue cc\n  core_barrier group=cores\n",
            "algo: group cores: a core_barrier synchronizes the two cores of a pair"},
           {"odd.s", ".queue cc\n  all_reduce src=0x100000*CORE dst=0x100000*CORE+0x1000 bytes=64 group=pair\n",
            "algo: group pair: core 2 of a chip of 3 cores has no partner (CORE 3)"}}) {
    SCOPED_TRACE(name);
    const SystemRunResult r = run(chip(name == "odd.s" ? 3 : 2), write_file(dir / name, text));
    EXPECT_EQ(r.status, "error");
    EXPECT_NE(r.message.find("cc_refused"), std::string::npos) << r.message;
    bool named = false;
    for (const auto& c : r.collectives) named |= c.error.find(expected) != std::string::npos;
    EXPECT_TRUE(named) << "expected a collective refused with: " << expected << "\n" << r.message;
  }
}

// LNC=2 collectives (lnc2.s): a rank is a pair of cores, whose halves make one src in their
// shared HBM. AR must be the chip's logical ranks' sum (FP32, rank order) and GATHERED every
// logical rank's src in rank order, computed here from the inputs the assembler initializes.
void expect_lnc2(SystemConfig config) {
  config.lnc = 2;
  SystemRunOptions o;
  o.program = kSystemPrograms + "/lnc2.s";
  const SystemRunResult r = run_system(config, o);
  ASSERT_EQ(r.status, "done") << r.message;
  const int chips = config.chips(), cores = config.chip.cores, pairs = cores / 2;
  std::vector<std::vector<float>> src(static_cast<size_t>(chips * pairs));  // per logical rank
  for (int c = 0; c < chips; ++c)
    for (int k = 0; k < cores; ++k) {
      const auto in = model::tensor_init_bytes(
          *model::assemble_file(o.program, model::spmd_symbols(c, k, chips, cores)).tensor("IN"));
      for (size_t i = 0; i < in.size() / 4; ++i) src[static_cast<size_t>(c * pairs + k / 2)].push_back(f32(in, i));
    }
  std::map<std::tuple<int, int, std::string>, std::vector<uint8_t>> got;
  for (const auto& out : r.outputs) got[{out.chip, out.core, out.name}] = out.bytes;
  std::vector<float> gathered;
  for (const auto& s : src) gathered.insert(gathered.end(), s.begin(), s.end());
  for (int c = 0; c < chips; ++c) {
    std::vector<float> sum = src[static_cast<size_t>(c * pairs)];
    for (int j = 1; j < pairs; ++j)
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += src[static_cast<size_t>(c * pairs + j)][i];
    for (int k = 0; k < cores; ++k) {
      EXPECT_EQ((got[{c, k, "AR"}]), f32_bytes(sum)) << "chip " << c << " core " << k;
      EXPECT_EQ((got[{c, k, "GATHERED"}]), f32_bytes(gathered)) << "chip " << c << " core " << k;
    }
  }
  ASSERT_EQ(r.collectives.size(), static_cast<size_t>(chips) + 1) << "an all_reduce per chip, one all_gather";
  for (const auto& c : r.collectives) {
    EXPECT_TRUE(c.error.empty()) << c.error;
    EXPECT_EQ(c.members, c.group == "all" ? chips * cores : cores) << "every core of every pair takes part";
  }
}

TEST(SystemRunLnc2, APairIsOneRankOfTheCollectivesOnAChip) { expect_lnc2(chip(8)); }

TEST(SystemRunLnc2, APairIsOneRankOfTheCollectivesOnAnInstance) { expect_lnc2(default_system("trn2")); }

TEST(SystemRunLnc2, ThePairsCoresMustNameTheSameSrcAndDst) {
  SystemConfig c = chip(2);
  c.lnc = 2;
  const SystemRunResult r = run(c, write_file(temp_dir("lnc2_mismatch") / "lnc2.s", R"(.queue cc
  all_reduce src=0x100000+0x1000*CORE dst=0x200000 bytes=64 group=cores
)"));
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.message.find("mismatch: at LNC=2 both cores of a logical NeuronCore name its src and dst"),
            std::string::npos) << r.message;
  EXPECT_NE(r.message.find("chip 0 core 1: src 0x101000 dst 0x200000"), std::string::npos) << r.message;
}

// Two chips of one core; chip 1's cc queue waits forever before the all_reduce chip 0 joins.
SystemConfig two_chips() {
  SystemConfig two = default_system("trn2");
  two.x = 2;
  two.y = 1;
  two.chip.cores = 1;
  return two;
}
std::string cc_never_joined(const std::string& name) {
  return write_file(temp_dir(name) / "cc_wait.s", R"(.sem never
.queue cc
.if CHIP==1
  nop wait=never>=1
.endif
  all_reduce src=0x100000 dst=0x200000 bytes=64 group=chips algo=ring
)");
}

TEST(SystemRunDeadlock, ACollectiveWaitingForAChipThatNeverJoinsNamesBothSides) {
  const SystemRunResult r = run(two_chips(), cc_never_joined("cc_deadlock"));
  EXPECT_EQ(r.status, "deadlock");
  EXPECT_NE(r.message.find("chip 1 core 0:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("cc waits at instruction 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("semaphore never >= 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("waits for chip 1 core 0; joined:\n    chip 0 core 0: cc instruction 0 at"), std::string::npos)
      << r.message;
}

// ---- workloads: outputs element by element against float64 references from the same .npy ----

// A BF16 .npy (raw bits, <u2) as doubles, row-major.
std::vector<double> load_bf16(const std::string& name, int64_t rows, int64_t cols) {
  const model::NpyArray a = model::read_npy(kSystemPrograms + "/" + name);
  EXPECT_EQ(a.descr, "<u2") << name;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{rows, cols})) << name;
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size() && 2 * i + 1 < a.data.size(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(a.data[2 * i] | a.data[2 * i + 1] << 8) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    v[i] = f;
  }
  return v;
}

const std::vector<uint8_t>& output_of(const SystemRunResult& r, int chip, int core, const std::string& name) {
  for (const auto& o : r.outputs)
    if (o.chip == chip && o.core == core && o.name == name) return o.bytes;
  throw Error(fmt::format("no output {} of chip {} core {}", name, chip, core));
}

TEST(SystemWorkload, TensorParallelMlpOnAChipMatchesFloat64) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/tp_mlp.s";
  const SystemRunResult r = run_system(default_system("chip"), o);
  ASSERT_EQ(r.status, "done") << r.message;
  constexpr int T = 128, D = 64, F = 512;
  const auto xt = load_bf16("mlp_xt.npy", D, T), w1 = load_bf16("mlp_w1.npy", D, F), w2 = load_bf16("mlp_w2.npy", F, D);
  // H = relu(X W1) and Y = H W2 in float64. The cores round H to BF16 (relative 2^-9) before the
  // second matmul and sum in FP32, so |Y - Y_ref| <= 2^-7 x sum_j |H_jt W2_jd| bounds the error.
  std::vector<double> h(static_cast<size_t>(T) * F);
  for (int t = 0; t < T; ++t)
    for (int f = 0; f < F; ++f) {
      double acc = 0;
      for (int d = 0; d < D; ++d) acc += xt[static_cast<size_t>(d * T + t)] * w1[static_cast<size_t>(d * F + f)];
      h[static_cast<size_t>(t * F + f)] = std::max(acc, 0.0);
    }
  const std::vector<uint8_t>& y0 = output_of(r, 0, 0, "Y");
  size_t checked = 0;
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      double ref = 0, mag = 0;
      for (int f = 0; f < F; ++f) {
        ref += h[static_cast<size_t>(t * F + f)] * w2[static_cast<size_t>(f * D + d)];
        mag += std::abs(h[static_cast<size_t>(t * F + f)] * w2[static_cast<size_t>(f * D + d)]);
      }
      const double got = f32(y0, static_cast<size_t>(t * D + d));
      ASSERT_LE(std::abs(got - ref), 0x1p-7 * mag) << "Y[" << t << "][" << d << "]: " << got << " vs " << ref;
      ++checked;
    }
  EXPECT_EQ(checked, static_cast<size_t>(T * D));
  for (int k = 1; k < 8; ++k) EXPECT_EQ(output_of(r, 0, k, "Y"), y0) << "core " << k << ": every core holds the same sum";
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].members, 8);
}

// The silicon's timing in a system run (ncore tlm run --timing trn2): the tensor-parallel MLP
// on a chip gives the same outputs as the uniform timing, every core reports its time in ns at
// the 4.8 GHz base clock and its tensor engine's cycles at 2.4 GHz, and the collective's time
// follows the cores'.
TEST(SystemWorkload, SiliconTimingChangesTimesNotResults) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/tp_mlp.s";
  const SystemRunResult uniform = run_system(default_system("chip"), o);
  o.timing = model::timing_preset("trn2");
  const SystemRunResult trn2 = run_system(default_system("chip"), o);
  ASSERT_EQ(uniform.status, "done") << uniform.message;
  ASSERT_EQ(trn2.status, "done") << trn2.message;
  ASSERT_EQ(uniform.outputs.size(), trn2.outputs.size());
  for (size_t i = 0; i < uniform.outputs.size(); ++i)
    EXPECT_EQ(uniform.outputs[i].bytes, trn2.outputs[i].bytes) << uniform.outputs[i].name << " of core " << uniform.outputs[i].core;
  for (const auto& c : trn2.cores) {
    EXPECT_DOUBLE_EQ(c.time_ns, static_cast<double>(c.cycles) / 4.8);
    EXPECT_EQ(c.engine_cycles[static_cast<size_t>(isa::Queue::kPe)], c.cycles / 2);
    EXPECT_EQ(c.engine_cycles[static_cast<size_t>(isa::Queue::kDve)], c.cycles / 5);
  }
  EXPECT_GT(trn2.sim_time_us, uniform.sim_time_us);  // fixed costs, slower Vector and Scalar clocks
  // An RTL core takes the one fixed cost it has, the engines' minimum interval: eight memsets of
  // 32 elements, 64 cycles apart with it, give the same outputs and a slower core (every core of
  // the chip runs them alone, so no other core's time reaches core 3's).
  const std::string memsets = ::testing::TempDir() + "memsets.s";
  {
    std::ofstream f(memsets);
    f << ".tensor OUT hbm addr=0x100000+CORE*0x1000 dtype=fp32 shape=8x32 output\n.sem s\n.queue dve\n";
    for (int i = 0; i < 8; ++i) f << "memset value=0.5 out=fp32 partitions=8 dst=sbuf:" << 128 * i << " dst_ap=[[1,32]]\n";
    f << "nop signal=s+=1\n.queue sp\ndma_copy engine=0 dir=sbuf_to_hbm hbm_addr=OUT sbuf_addr=0 bytes=128 count1=8 "
         "hbm_stride1=128 sbuf_stride1=229376 wait=s>=1\n";
  }
  SystemRunOptions rtl;
  rtl.program = memsets;
  rtl.rtl_cores = {{0, 3}};
  const SystemRunResult rtl_uniform = run_system(default_system("chip"), rtl);
  rtl.timing.costs.vector.min_cycles = rtl.timing.costs.scalar.min_cycles = 64;
  const SystemRunResult rtl_interval = run_system(default_system("chip"), rtl);
  ASSERT_EQ(rtl_uniform.status, "done") << rtl_uniform.message;
  ASSERT_EQ(rtl_interval.status, "done") << rtl_interval.message;
  EXPECT_EQ(output_of(rtl_interval, 0, 3, "OUT"), output_of(rtl_uniform, 0, 3, "OUT"));
  const auto core = [](const SystemRunResult& r, int n) {
    for (const auto& c : r.cores)
      if (c.core == n) return c;
    throw Error(fmt::format("no core {}", n));
  };
  EXPECT_EQ(core(rtl_interval, 3).engine, "rtl");
  // Seven intervals of 64 cycles where a memset of 32 takes about 35.
  EXPECT_GE(core(rtl_interval, 3).cycles, core(rtl_uniform, 3).cycles + 7 * 20);
  // The whole trn2 timing on an RTL core: the same outputs, and its time within 5% of core 0's,
  // a golden core running the same program at the same timing.
  rtl.timing = model::timing_preset("trn2");
  const SystemRunResult rtl_trn2 = run_system(default_system("chip"), rtl);
  ASSERT_EQ(rtl_trn2.status, "done") << rtl_trn2.message;
  EXPECT_EQ(output_of(rtl_trn2, 0, 3, "OUT"), output_of(rtl_uniform, 0, 3, "OUT"));
  EXPECT_EQ(core(rtl_trn2, 0).engine, "golden");
  EXPECT_NEAR(static_cast<double>(core(rtl_trn2, 3).cycles) / static_cast<double>(core(rtl_trn2, 0).cycles), 1.0, 0.05)
      << "RTL " << core(rtl_trn2, 3).cycles << " cycles, golden " << core(rtl_trn2, 0).cycles;
  // What the RTL core cannot run is refused, naming the option.
  rtl.timing.costs.tensor.ls_columns_per_cycle = 3;
  try {
    run_system(default_system("chip"), rtl);
    ADD_FAILURE() << "an RTL core loading 3 weight columns a cycle ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--timing trn2: the RTL core loads 1, 2 or 4 weight columns a cycle"),
              std::string::npos)
        << e.what();
  }
}

TEST(SystemWorkload, DataParallelStepOnAnInstanceMatchesFloat64AndOverlaps) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/dp_step.s";
  o.trace_json = (temp_dir("dp_trace") / "trace.json").string();
  const SystemConfig config = default_system("trn2");
  const SystemRunResult r = run_system(config, o);
  ASSERT_EQ(r.status, "done") << r.message;
  {  // the timeline has the fabric: a track per busy link direction and per collective group
    std::ifstream in(o.trace_json);
    const nlohmann::json j = nlohmann::json::parse(in);
    std::set<std::string> tracks;
    for (const auto& e : j["traceEvents"])
      if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks.insert(e.at("args").at("name").get<std::string>());
    EXPECT_TRUE(tracks.count("link 0 +X -> 1")) << "a track per link direction";
    EXPECT_TRUE(tracks.count("collectives group chips"));
  }
  constexpr int T = 64, DIN = 64, DOUT = 64, LAYERS = 4, POOL = 576;
  const auto x = load_bf16("dp_x.npy", POOL, DIN), dy = load_bf16("dp_dy.npy", POOL, DOUT);
  const int chips = config.chips(), cores = config.chip.cores;
  // dW_l of (chip, core) = X^T dY over rows 4 rank + l .. + 63; all-reduced over the chips. BF16
  // products are exact in FP32; 64 + 16 FP32 additions bound the error by 80 x 2^-24 x sum |terms|.
  for (int k = 0; k < cores; ++k)
    for (int l = 0; l < LAYERS; ++l) {
      std::vector<double> ref(DIN * DOUT), mag(DIN * DOUT);
      for (int c = 0; c < chips; ++c) {
        const int first = 4 * (c * cores + k) + l;
        for (int t = first; t < first + T; ++t)
          for (int i = 0; i < DIN; ++i)
            for (int j = 0; j < DOUT; ++j) {
              const double p = x[static_cast<size_t>(t * DIN + i)] * dy[static_cast<size_t>(t * DOUT + j)];
              ref[static_cast<size_t>(i * DOUT + j)] += p;
              mag[static_cast<size_t>(i * DOUT + j)] += std::abs(p);
            }
      }
      const std::string name = "R" + std::to_string(l);
      const std::vector<uint8_t>& got = output_of(r, 0, k, name);
      for (size_t e = 0; e < ref.size(); ++e)
        ASSERT_LE(std::abs(f32(got, e) - ref[e]), 80 * 0x1p-24 * mag[e]) << "core " << k << " " << name << " element " << e;
      for (int c = 1; c < chips; ++c) EXPECT_EQ(output_of(r, c, k, name), got) << "chip " << c << " core " << k << " " << name;
    }
  // Overlap: each all_reduce of layer l < 3 is still running when the layer after it has been
  // computed (the cores do not wait for collectives), and the collectives of the 8 groups of a
  // layer run at the same time.
  ASSERT_EQ(r.collectives.size(), static_cast<size_t>(cores * LAYERS));
  double first_end = 1e30, last_start = 0;
  for (const auto& c : r.collectives) {
    EXPECT_EQ(c.members, chips);
    first_end = std::min(first_end, c.end_us);
    last_start = std::max(last_start, c.start_us);
  }
  EXPECT_LT(last_start, first_end) << "every layer's all_reduce started before the first one ended";
  EXPECT_FALSE(r.links.empty());
  for (const auto& l : r.links) EXPECT_LE(l.utilization, 1.0 + 1e-9) << l.from << " " << l.port;
}

// Any core may be RTL (the Verilated nc_core, tb/core): it sees the same memory, HBM and
// collectives, so every output is the all-golden run's, bit for bit. Size 8 (the chip's cores
// at 8x8) in CI; the 128 one below is the full-size smoke test.
SystemConfig small_cores(SystemConfig c) {
  c.chip.pe_rows = c.chip.pe_cols = 8;
  return c;
}

void expect_rtl_equals_golden(const SystemConfig& config, const std::vector<std::pair<int, int>>& rtl_cores) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/collectives.s";
  const SystemRunResult golden = run_system(config, o);
  o.rtl_cores = rtl_cores;
  o.trace_json = (temp_dir("rtl_trace") / "trace.json").string();
  const SystemRunResult mixed = run_system(config, o);
  ASSERT_EQ(golden.status, "done") << golden.message;
  ASSERT_EQ(mixed.status, "done") << mixed.message;
  size_t rtl = 0;
  for (const auto& c : mixed.cores) {
    const bool want = std::find(rtl_cores.begin(), rtl_cores.end(), std::pair{c.chip, c.core}) != rtl_cores.end();
    EXPECT_EQ(c.engine, want ? "rtl" : "golden") << "chip " << c.chip << " core " << c.core;
    if (want) {
      EXPECT_GT(c.cycles, 0u);
      EXPECT_EQ(c.hbm_bytes, 2u * 4096) << "the DMA of BACK: 4 KiB in, 4 KiB out";
      ++rtl;
    }
  }
  EXPECT_EQ(rtl, rtl_cores.size());
  // Every core is a member of the last collective to end, and its cc queue ends only after it:
  // an RTL core that slept through a collective has clocked every cycle that passed.
  double last_end_us = 0;
  for (const auto& c : mixed.collectives) last_end_us = std::max(last_end_us, c.end_us);
  for (const auto& c : mixed.cores)
    if (c.engine == "rtl")
      EXPECT_GE(static_cast<double>(c.cycles), last_end_us * config.chip.core_clock_ghz * 1e3 - 1)
          << "chip " << c.chip << " core " << c.core;
  // An RTL core sleeps while it waits for a collective and then clocks the cycles that passed
  // with the collective port held off: none of its collectives ends before a collective has.
  {
    std::ifstream in(o.trace_json);
    const nlohmann::json j = nlohmann::json::parse(in);
    double first_end_us = 1e30, first_commit_us = 1e30;
    for (const auto& c : mixed.collectives) first_end_us = std::min(first_end_us, c.end_us);
    for (const auto& [chip, core] : rtl_cores)
      for (const auto& e : j["traceEvents"])
        if (e.at("ph") == "X" && e.at("name") != "fetch stall" && e.at("pid") == chip &&
            e.at("tid") == core * 64 + static_cast<int>(isa::Queue::kCc))
          first_commit_us = std::min(first_commit_us, e.at("ts").get<double>() + e.at("dur").get<double>());
    ASSERT_LT(first_commit_us, 1e30) << "the RTL cores' collectives are in the timeline";
    EXPECT_GE(first_commit_us, first_end_us - 1e-6);
  }
  ASSERT_EQ(mixed.outputs.size(), golden.outputs.size());
  for (size_t i = 0; i < golden.outputs.size(); ++i) {
    const auto &g = golden.outputs[i], &m = mixed.outputs[i];
    EXPECT_EQ(std::tie(g.chip, g.core, g.name), std::tie(m.chip, m.core, m.name));
    EXPECT_EQ(g.bytes, m.bytes) << "chip " << g.chip << " core " << g.core << " output " << g.name;
  }
  EXPECT_EQ(mixed.collectives.size(), golden.collectives.size());
}

// Every core of a chip gathers its own rows with a descriptor list of its image (each image in
// its core's window of the chip's HBM, the list entries read through ChipHbm), golden cores and
// one RTL core alike: each output is the core's input rows rearranged.
TEST(SystemRunLists, EveryCoreRunsItsOwnDescriptorListOverTheChipsHbm) {
  const fs::path dir = temp_dir("lists");
  const std::string program = write_file(dir / "gather.s", R"(
.sem done
.tensor X hbm addr=0x100000*(CORE+1) dtype=int8 shape=256x32 init=random seed=CORE+1
.tensor Y hbm addr=0x100000*(CORE+1)+0x10000 dtype=int8 shape=8x1024 output
.list g
.rept r 256
  descriptor dir=hbm_to_sbuf hbm_addr=X+((r*37)%256)*32 sbuf_addr=(((r*37)%256)%8)*SBUF_PARTITION+(((r*37)%256)/8)*32 bytes=32
.endr
.endlist
.queue sp
dma_list engine=CORE list=g signal=done+=1
dma_copy engine=15 dir=sbuf_to_hbm hbm_addr=Y sbuf_addr=0 bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION wait=done>=1
)");
  for (bool with_rtl : {false, true}) {
    SystemRunOptions o;
    o.program = program;
    if (with_rtl) o.rtl_cores = {{0, 3}};
    const SystemRunResult r = run_system(small_cores(default_system("chip")), o);
    ASSERT_EQ(r.status, "done") << r.message;
    ASSERT_EQ(r.outputs.size(), 8u);
    for (const auto& out : r.outputs) {
      model::TensorDecl x;
      x.dtype = model::DType::kInt8;
      x.shape = {256, 32};
      x.init = model::TensorInit::kRandom;
      x.seed = static_cast<uint64_t>(out.core + 1);
      const std::vector<uint8_t> in = model::tensor_init_bytes(x);
      std::vector<uint8_t> want(8 * 1024);
      for (int row = 0; row < 256; ++row) std::copy_n(&in[row * 32], 32, &want[(row % 8) * 1024 + (row / 8) * 32]);
      EXPECT_EQ(out.bytes, want) << "core " << out.core << (with_rtl ? " (core 3 on the RTL)" : "");
    }
  }
}

TEST(SystemRunRtl, RtlCoresOnAChipGiveTheAllGoldenOutputs) {
  expect_rtl_equals_golden(small_cores(default_system("chip")), {{0, 0}, {0, 5}});
}

TEST(SystemRunRtl, AnRtlCoreInAnInstanceGivesTheAllGoldenOutputs) {
  expect_rtl_equals_golden(small_cores(default_system("trn2")), {{6, 3}});
}

TEST(SystemRunRtl, FullSizeRtlCoreOnAChipGivesTheAllGoldenOutputs) {
  const std::vector<int> built = tb::core_rtl_sizes();
  if (std::find(built.begin(), built.end(), 128) == built.end()) GTEST_SKIP() << "the 128 RTL core is not built";
  expect_rtl_equals_golden(default_system("chip"), {{0, 2}});
}

TEST(SystemRunRtl, AnRtlCoreWaitingForACollectiveThatNeverStartsEndsInADeadlockReport) {
  SystemRunOptions o;
  o.program = cc_never_joined("rtl_cc_deadlock");
  o.all_rtl = true;
  const SystemRunResult r = run_system(small_cores(two_chips()), o);
  EXPECT_EQ(r.status, "deadlock");
  EXPECT_NE(r.message.find("chip 0 core 0: RTL core, queues at pe 0/0 act 0/0 dve 0/0 sp 0/0 cc 1/1\n"
                           "  its cc queue waits for 1 collective(s) to end"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("cc instruction 0 at"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("waits for semaphore never >= 1 (it is 0)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("waits for chip 1 core 0; joined:"), std::string::npos) << r.message;
  for (const auto& c : r.cores) EXPECT_EQ(c.engine, "rtl");
}

// Timing-only golden cores (--no-data, --no-data-cores): every core's cycles, busy and wait
// cycles and HBM bytes, the simulated time and the collectives' times are the all-data run's;
// a timing-only core writes no outputs.
TEST(SystemRunTimingOnly, TimingOnlyCoresTakeTheCyclesOfTheRunWithData) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/tp_mlp.s";
  const SystemRunResult data = run_system(default_system("chip"), o);
  ASSERT_EQ(data.status, "done") << data.message;
  o.timing_only_cores = {{0, 1}, {0, 6}};
  const SystemRunResult some = run_system(default_system("chip"), o);
  o.timing_only_cores.clear();
  o.all_timing_only = true;
  const SystemRunResult all = run_system(default_system("chip"), o);
  for (const SystemRunResult* r : {&some, &all}) {
    ASSERT_EQ(r->status, "done") << r->message;
    EXPECT_EQ(r->sim_time_us, data.sim_time_us);
    ASSERT_EQ(r->cores.size(), data.cores.size());
    for (size_t i = 0; i < data.cores.size(); ++i) {
      const CoreReport &d = data.cores[i], &t = r->cores[i];
      const std::string what = fmt::format("chip {} core {}", d.chip, d.core);
      EXPECT_EQ(std::tie(d.cycles, d.instructions, d.hbm_bytes, d.busy_cycles, d.wait_cycles),
                std::tie(t.cycles, t.instructions, t.hbm_bytes, t.busy_cycles, t.wait_cycles))
          << what;
      EXPECT_FALSE(d.timing_only) << what;
      const bool want = r == &all || d.core == 1 || d.core == 6;
      EXPECT_EQ(t.timing_only, want) << what;
      for (const auto& out : r->outputs) EXPECT_FALSE(want && out.chip == d.chip && out.core == d.core) << what;
    }
    ASSERT_EQ(r->collectives.size(), data.collectives.size());
    for (size_t i = 0; i < data.collectives.size(); ++i) EXPECT_EQ(r->collectives[i].end_us, data.collectives[i].end_us);
  }
  EXPECT_EQ(some.outputs.size(), data.outputs.size() - 2);
  EXPECT_TRUE(all.outputs.empty());
}

// Issue 50: timing only keeps exactly the cycles of the run with data on the instance's
// data-parallel step too (128 cores, 32 all-reduces over the NeuronLinks, the chips' HBM at
// trn2's timing): every figure of the report but the outputs is the same.
TEST(SystemRunTimingOnly, TheDataParallelStepOnAnInstanceTakesTheSameTimeWithoutData) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/dp_step.s";
  o.timing = model::timing_preset("trn2");
  const SystemRunResult data = run_system(default_system("trn2"), o);
  o.all_timing_only = true;
  const SystemRunResult timing = run_system(default_system("trn2"), o);
  ASSERT_EQ(data.status, "done") << data.message;
  ASSERT_EQ(timing.status, "done") << timing.message;
  nlohmann::json a = to_json(data), b = to_json(timing);
  for (auto* j : {&a, &b}) {
    j->erase("wall_seconds");
    j->erase("outputs");
    for (auto& c : j->at("cores")) c.erase("timing_only");
  }
  EXPECT_EQ(data.outputs.size(), 128u * 4);
  EXPECT_TRUE(timing.outputs.empty());
  EXPECT_EQ(a.at("collectives").size(), 32u);  // 4 layers x the 8 groups of one core index
  EXPECT_EQ(a.dump(1), b.dump(1));
}

TEST(SystemRunTimingOnly, AnRtlCoreCannotRunTimingOnly) {
  SystemRunOptions o;
  o.program = kSystemPrograms + "/collectives.s";
  o.rtl_cores = {{0, 2}};
  o.timing_only_cores = {{0, 2}};
  try {
    run_system(small_cores(default_system("chip")), o);
    ADD_FAILURE() << "an RTL core was let run without data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--no-data-cores: chip 0 core 2 runs on the RTL, which always carries data"),
              std::string::npos)
        << e.what();
  }
}

TEST(SystemRunRtl, CoreListsNameTheBadItem) {
  const SystemConfig c = default_system("trn2");
  EXPECT_EQ(parse_core_list("0.1,15.7", c), (std::vector<std::pair<int, int>>{{0, 1}, {15, 7}}));
  for (const auto& [list, what] : std::vector<std::pair<std::string, std::string>>{
           {"16.0", "'16.0': expected chip 0..15 and core 0..7"},
           {"0.1,", "'': expected CHIP.CORE"},
           {"1.2.3", "'1.2.3': expected CHIP.CORE"},
           {"a.b", "'a.b': expected CHIP.CORE"}}) {
    try {
      parse_core_list(list, c);
      ADD_FAILURE() << list << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--rtl-cores: " + what), std::string::npos) << e.what();
    }
    try {
      parse_core_list(list, c, "--no-data-cores");
      ADD_FAILURE() << list << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--no-data-cores: " + what), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ncore::tlmsys
