#pragma once
// The skeleton every Verilator harness shares, so that each harness holds only what is its own
// (its driver, its scoreboard, its coverage bins):
//   - BenchOptions / BenchResult (bench_options.h): the option and result names every harness
//     uses;
//   - make_context: a VerilatedContext seeded from the options (X-propagation included);
//   - Waves: an FST file with a window of cycles;
//   - Watchdog: cycles without progress;
//   - Failure: the first failure of a run, reported the same way everywhere;
//   - Bench<V>: one top with its context, clock, reset, waves and coverage dump.
//
// Cycle numbers are the bench's: every clock it gives from the first reset cycle on (program
// loading included). Reports, --from/--to and the waves' time axis (2 * cycle, + 1 for the
// rising edge) all use them.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include "model/common/error.h"
#include "tb/common/bench_options.h"
#include "tb/common/coverage_dump.h"

namespace ncore::tb {

// A context set up from the options: Verilator's seed, X-propagation's random reset, tracing
// when waves are asked for (it must be on before a model is built).
inline std::unique_ptr<VerilatedContext> make_context(const BenchOptions& o) {
  auto context = std::make_unique<VerilatedContext>();
  context->randSeed(static_cast<int>(o.seed & 0x7FFFFFFF));
  if (o.xprop_seed != 0) {
    context->randReset(2);  // every unreset flop and X assignment starts from its own value
    context->randSeed(static_cast<int>(o.xprop_seed & 0x7FFFFFFF));
  }
  if (!o.waves.empty()) context->traceEverOn(true);
  return context;
}

// An FST file of one top (every level below it), written only inside [waves_from, waves_to].
class Waves {
 public:
  Waves() = default;
  // Opens o.waves (its folder made) when set; throws ncore::Error when it cannot be written.
  template <class V>
  void open(V& top, const BenchOptions& o) {
    if (o.waves.empty()) return;
    from_ = o.waves_from;
    to_ = o.waves_to;
    const auto parent = std::filesystem::path(o.waves).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    fst_ = std::make_unique<VerilatedFstC>();
    top.trace(fst_.get(), 99);
    fst_->open(o.waves.c_str());
    if (!fst_->isOpen()) throw Error(fmt::format("{}: cannot open the waves file for writing", o.waves));
  }
  bool on() const { return fst_ != nullptr; }
  // The state after the falling (rising = false) or rising edge of `cycle`.
  void dump(uint64_t cycle, bool rising) {
    if (fst_ && cycle >= from_ && cycle <= to_) fst_->dump(2 * cycle + (rising ? 1 : 0));
  }
  void close() {
    if (fst_) fst_->close();
    fst_.reset();
  }

 private:
  std::unique_ptr<VerilatedFstC> fst_;
  uint64_t from_ = 0, to_ = 0;
};

// Cycles without progress: a harness calls progress() whenever something moves (an instruction
// taken, a write, a completion) and expired() once a cycle.
class Watchdog {
 public:
  explicit Watchdog(uint64_t limit, uint64_t now = 0) : limit_(limit), last_(now) {}
  void progress(uint64_t now) { last_ = now; }
  bool expired(uint64_t now) const { return now - last_ > limit_; }
  std::string report() const { return fmt::format("watchdog: no progress for {} cycles", limit_); }

 private:
  uint64_t limit_, last_;
};

// The first failure of a run, written into its result as
//   <what>
//     cycle <c>, seed <s>[, <where>]
//     reproduce: <command>                       (when the options name one)
//     waves around it: cycles a..b (--from a --to b)
// Later failures are ignored: the first is the one to debug.
class Failure {
 public:
  Failure(BenchResult& result, const BenchOptions& options, std::string where = {})
      : result_(result), options_(options), where_(std::move(where)) {}
  void operator()(uint64_t cycle, const std::string& what) {
    if (!result_.ok) return;
    result_.ok = false;
    result_.fail_cycle = cycle;
    result_.failure = fmt::format("{}\n  cycle {}, seed {}", what, cycle, options_.seed);
    if (!where_.empty()) result_.failure += ", " + where_;
    if (!options_.reproduce.empty()) result_.failure += "\n  reproduce: " + options_.reproduce;
    const uint64_t from = cycle > 200 ? cycle - 200 : 0;
    result_.failure += fmt::format("\n  waves around it: cycles {}..{} (--waves FILE --from {} --to {})", from,
                                   cycle + 16, from, cycle + 16);
  }

 private:
  BenchResult& result_;
  const BenchOptions& options_;
  std::string where_;
};

// Wall-clock seconds since construction, for BenchResult::wall_seconds.
class WallClock {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Models stepped beside a Bench's top on its clock, that the top's eval() does not reach (the
// tensor engine's PE array as column slices on threads, tb/tensor/array_slices.h).
// They take the top's outputs as fall() leaves them: a harness changes no input of the top
// between fall() and rise() (the top's own edge is computed from the same inputs).
class BesideTop {
 public:
  virtual ~BesideTop() = default;
  // After fall() (or at rise(), if no fall() came first): take the top's outputs as inputs and
  // start this clock edge, which may run on while the harness works and the top makes its edge.
  virtual void before_rise() = 0;
  virtual void after_rise() = 0;  // finish that edge and give the top its outputs
};

// One Verilated top (clk_i, rst_ni) with its context, clock, reset, waves and coverage dump.
// A harness sets its inputs, calls fall() (clock low, evaluated: the combinational outputs of
// this cycle's inputs are valid), reads its outputs (changing no input: its answers go in before
// the next fall()), then rise() (the flops take the cycle; outputs computed from a BesideTop's
// are valid only after the next fall()).
// clock() is both with nothing between.
template <class V>
class Bench {
 public:
  // `coverage_block` names the coverage file (scripts/coverage); `name` is the top's scope.
  Bench(const BenchOptions& options, const std::string& coverage_block, const char* name = "tb")
      : context_(make_context(options)),
        top_(std::make_unique<V>(context_.get(), name)),
        coverage_(*context_, coverage_block) {
    waves_.open(*top_, options);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  ~Bench() {
    waves_.close();
    top_->final();
  }

  V& top() { return *top_; }
  const V& top() const { return *top_; }
  VerilatedContext& context() { return *context_; }
  Waves& waves() { return waves_; }
  uint64_t cycle() const { return cycle_; }
  // Steps `beside` on the top's clock from now on (nullptr: nothing); it must outlive the Bench
  // or be detached first.
  void set_beside(BesideTop* beside) { beside_ = beside; }

  void fall() {
    top_->clk_i = 0;
    top_->eval();
    waves_.dump(cycle_, false);
    start_beside();  // from here on it overlaps the harness's work as well as the top's edge
  }
  void rise() {
    start_beside();
    top_->clk_i = 1;
    top_->eval();
    if (beside_) {
      beside_started_ = false;
      beside_->after_rise();
      // What the top computes from them, as its own registers would show it, for the waves. A
      // harness reads outputs only after fall(), whose eval() computes them anyway.
      if (waves_.on()) top_->eval();
    }
    waves_.dump(cycle_, true);
    ++cycle_;
  }
  void clock() {
    fall();
    rise();
  }
  // Holds rst_ni low for `cycles` clocks, then releases it. The caller sets the inputs to their
  // idle values first.
  void reset(int cycles = 4) {
    top_->rst_ni = 0;
    for (int i = 0; i < cycles; ++i) clock();
    top_->rst_ni = 1;
    top_->eval();
  }

 private:
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<V> top_;
  CoverageDump coverage_;  // after top_: written while the model's counters still exist
  Waves waves_;
  uint64_t cycle_ = 0;
  // The edge of `beside_` started and not yet finished: a second fall() before rise() (a harness
  // that stops after a failure) does not start another.
  void start_beside() {
    if (!beside_ || beside_started_) return;
    beside_->before_rise();
    beside_started_ = true;
  }

  BesideTop* beside_ = nullptr;
  bool beside_started_ = false;
};

// Resets a top that shares its context with others (the HBM harness's one controller per
// pseudo-channel): rst_ni low for `cycles` clocks, clk_i ending low; nothing dumped.
template <class V>
void hold_in_reset(V& top, int cycles = 4) {
  top.rst_ni = 0;
  top.clk_i = 0;
  for (int i = 0; i < cycles; ++i) {
    top.eval();
    top.clk_i = 1;
    top.eval();
    top.clk_i = 0;
  }
  top.rst_ni = 1;
  top.eval();
}

}  // namespace ncore::tb
