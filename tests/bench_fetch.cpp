// Benchmark (never a pass/fail test) of issue 47, programs of any size, on the golden core:
//   - the 4096^3 BF16 GEMM tests/gen_gemm.py writes: assembly time, cycles, PE utilization,
//     instructions fetched, fetch bytes as a share of all HBM bytes, fetch-stall cycles, and
//     simulated cycles per wall second with data and timing only (median of three runs);
//   - the assembler's rate on a program of a million instructions, written out line by line
//     and as one .rept;
//   - every example in tests/programs: golden cycles without and with instruction fetch, side by
//     side, and each queue's fetch-stall cycles;
//   - descriptor lists: one engine gathering N rows as one dma_list against the same rows as N
//     dma_copy's, side by side: cycles, image bytes, golden cycles per second.
// Prints the README tables (rtl/core/README.md, "Programs of any size").
//
//   build/tests/bench_fetch [--gemm PROGRAM.s] [--skip-gemm]

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tb/core/core_sim.h"
#include "tests/bench_golden.h"

namespace {

using namespace ncore;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string grouped(double v) {
  std::string s = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(s.size()) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

uint64_t fetch_stalls(const model::CoreResult& r) {
  uint64_t s = 0;
  for (const auto& q : r.queues) s += q.fetch_stall_cycles;
  return s;
}

void gemm(const std::string& path) {
  auto t0 = Clock::now();
  const model::Program p = model::assemble_file(path);
  const double assemble = seconds_since(t0);
  const model::CoreConfig cfg = tb::core_config_for_size(128);
  model::CoreConfig timing_cfg = cfg;
  timing_cfg.timing_only = true;
  const test::GoldenTimed data = test::time_golden(p, cfg);
  const test::GoldenTimed timing = test::time_golden(p, timing_cfg);
  const model::CoreResult& r = data.result;
  fmt::print("## 4096^3 BF16 GEMM (tests/gen_gemm.py) on the golden core, size 128\n\n");
  fmt::print("| instructions (pe / act / dve / sp) | assembly | cycles | PE utilization | fetch bytes | "
             "fetch share of HBM bytes | fetch-stall cycles (every queue) | golden cycles/s, data | "
             "golden cycles/s, timing only |\n|---|---|---|---|---|---|---|---|---|\n");
  fmt::print("| {} ({} / {} / {} / {}) | {:.2f} s | {} | {:.1f}% | {} | {:.2f}% | {} | {} | {} |\n\n",
             grouped(static_cast<double>(p.instructions())), p.queues[0].size(), p.queues[1].size(),
             p.queues[2].size(), p.queues[3].size(), assemble, grouped(static_cast<double>(r.cycles)),
             100.0 * r.te_utilization(cfg), grouped(static_cast<double>(r.fetch_bytes)),
             100.0 * static_cast<double>(r.fetch_bytes) / static_cast<double>(r.fetch_bytes + r.dma_bytes),
             grouped(static_cast<double>(fetch_stalls(r))), grouped(data.cycles_per_second),
             grouped(timing.cycles_per_second));
}

void assembler_rate() {
  constexpr int kN = 1'000'000;
  std::string lines = ".queue pe\n", rept = ".queue pe\n.rept i 1000000\nnop\n.endr\n";
  lines.reserve(static_cast<size_t>(kN) * 4 + 16);
  for (int i = 0; i < kN; ++i) lines += "nop\n";
  fmt::print("## The assembler on a million instructions\n\n| written as | instructions | seconds | instructions/s |\n"
             "|---|---|---|---|\n");
  for (const auto& [what, text] : {std::pair{"one line each", &lines}, {".rept 1000000", &rept}}) {
    const auto t0 = Clock::now();
    const model::Program p = model::assemble(*text, "million.s");
    const double s = seconds_since(t0);
    fmt::print("| {} | {} | {:.2f} | {} |\n", what, grouped(static_cast<double>(p.instructions())), s,
               grouped(static_cast<double>(p.instructions()) / s));
  }
  fmt::print("\n");
}

void examples() {
  struct Example {
    const char* name;
    int size;
  };
  const Example list[] = {{"gemm_bf16_1024.s", 128}, {"gemm_fp8_double_row.s", 128}, {"softmax.s", 128},
                          {"attention_head.s", 128}, {"rmsnorm.s", 128},          {"causal_attention.s", 128},
                          {"layernorm.s", 128},      {"dma_transpose.s", 128},    {"small/gemm_8.s", 8},
                          {"small/softmax_8.s", 8},  {"small/psum_writes_8.s", 8}, {"small/collectives_8.s", 8}};
  fmt::print("## Examples on the golden core: without and with instruction fetch\n\n"
             "| program | size | instructions | cycles, no fetch | cycles, fetch | ratio | fetch-stall cycles "
             "(pe / act / dve / sp / cc) |\n|---|---|---|---|---|---|---|\n");
  for (const Example& e : list) {
    const model::Program p = model::assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/") + e.name);
    model::CoreConfig on = tb::core_config_for_size(e.size), off = on;
    off.fetch.enabled = false;
    on.timing_only = off.timing_only = true;
    model::CoreModel a(off, p), b(on, p);
    const model::CoreResult ra = a.run(), rb = b.run();
    fmt::print("| {} | {} | {} | {} | {} | {:.3f} | {} ({} / {} / {} / {} / {}) |\n", e.name, e.size, p.instructions(),
               grouped(static_cast<double>(ra.cycles)), grouped(static_cast<double>(rb.cycles)),
               static_cast<double>(rb.cycles) / static_cast<double>(ra.cycles), grouped(static_cast<double>(fetch_stalls(rb))),
               rb.queues[0].fetch_stall_cycles, rb.queues[1].fetch_stall_cycles, rb.queues[2].fetch_stall_cycles,
               rb.queues[3].fetch_stall_cycles, rb.queues[4].fetch_stall_cycles);
  }
}

// N rows of `row` bytes from HBM into SBUF (row r to partition r % 128), on DMA engine 3.
std::string gather(int n, int row, bool as_list) {
  std::string body = fmt::format(".sem done\n.tensor X hbm addr=0 dtype=int8 shape={}x{} init=random seed=1\n", n, row);
  const std::string entry = fmt::format("dir=hbm_to_sbuf hbm_addr=X+r*{0} sbuf_addr=(r%128)*SBUF_PARTITION+((r/128)*{0})%0x30000 bytes={0}", row);
  if (as_list)
    return body + fmt::format(".list rows\n.rept r {}\n  descriptor {}\n.endr\n.endlist\n.queue sp\n"
                              "dma_list engine=3 list=rows signal=done+=1\n", n, entry);
  return body + fmt::format(".queue sp\n.rept r {}\n  dma_copy engine=3 {}\n.endr\nnop signal=done+=1\n", n, entry);
}

void lists() {
  fmt::print("## Descriptor lists on the golden core: one dma_list against the same descriptors as dma_copy's\n\n"
             "| rows x bytes | as | sp instructions | image bytes | cycles | cycles a row | golden cycles/s |\n"
             "|---|---|---|---|---|---|---|\n");
  for (const auto& [n, row] : {std::pair{65536, 32}, {4096, 2048}}) {
    for (bool as_list : {true, false}) {
      const model::Program p = model::assemble(gather(n, row, as_list), "gather.s");
      const model::CoreConfig cfg = tb::core_config_for_size(128);
      const test::GoldenTimed t = test::time_golden(p, cfg);
      model::CoreModel core(cfg, p);
      fmt::print("| {} x {} | {} | {} | {} | {} | {:.1f} | {} |\n", grouped(n), row, as_list ? "dma_list" : "dma_copy",
                 grouped(static_cast<double>(p.queues[3].size())), grouped(static_cast<double>(core.image().bytes)),
                 grouped(static_cast<double>(t.result.cycles)), static_cast<double>(t.result.cycles) / n,
                 grouped(t.cycles_per_second));
    }
  }
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("issue 47's benchmark: programs of any size on the golden core");
  std::string gemm_path = NCORE_GEMM_4096;
  bool skip_gemm = false;
  app.add_option("--gemm", gemm_path, "the GEMM program (tests/gen_gemm.py's)");
  app.add_flag("--skip-gemm", skip_gemm, "leave the 4096^3 GEMM out");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!skip_gemm) gemm(gemm_path);
    assembler_rate();
    examples();
    lists();
  } catch (const Error& e) {
    fmt::print(stderr, "bench_fetch: {}\n", e.what());
    return 1;
  }
  return 0;
}
