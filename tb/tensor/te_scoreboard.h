#pragma once
// The tensor-engine harness's scoreboard: what the RTL must do, from the golden model.
//
// The golden model executes each instruction the moment the RTL accepts it. For a
// MultiplyMoving the scoreboard then expects every PSUM element of its tile exactly once, with
// the golden value; then one completion per MM (after, or with, its last write); LoadStationary
// completions in order; refusals in order, code for code. It knows nothing of ports or clocks:
// the driver (te_sim.cpp) reads the RTL's outputs and hands them over as they happen.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "tb/tensor/te_sim.h"

namespace ncore::tb {

// One PSUM write port of one partition in one cycle, as the RTL drives it.
struct TePsumWrite {
  int partition = 0;
  uint8_t tag = 0;
  int bank = 0;
  int half = 0;        // 0: a 32-bit word; 1, 2: the low or high 16-bit half
  uint32_t word = 0;   // the word index in the bank
  uint32_t data = 0;
};

class TeScoreboard {
 public:
  // `fail` records a mismatch (the first one counts); counts go into `result`.
  TeScoreboard(int rows, int cols, model::Sbuf& sbuf, std::function<void(const std::string&)> fail);

  const model::TensorEngine& golden() const { return golden_; }
  // A new run: its counters go to `result`, its instructions are `program`.
  void start(const std::vector<model::TeInstruction>& program, TeRunResult& result);

  // The RTL accepted program[index], carrying `instr`'s tag. Returns false when the golden
  // model refuses it (a refusal is then expected).
  bool accepted(const model::TeInstruction& instr, size_t index);
  void psum_write(const TePsumWrite& w);
  void mm_done(int segment, uint8_t tag);
  void ls_done(uint8_t tag);
  void rejected(uint8_t tag, uint8_t code);

  // Nothing expected any more: every write, completion and refusal seen.
  bool drained() const;
  // What is still expected, for a watchdog report.
  std::string outstanding() const;
  // The end of a run: an MM whose writes did not all come is a failure.
  void finish();

  // Every (bank, word) the run's MMs wrote, for the read-back.
  const std::set<std::pair<int, int>>& touched() const { return touched_; }
  // An MM has writes in flight; a (bank, word) it writes, drawn from `rng` (a read there must be
  // held off until the bank drains).
  bool has_in_flight() const { return !expected_.empty(); }
  std::pair<int, int> in_flight_word(model::SplitMix64& rng) const;
  // The word the RTL last wrote at (partition, bank, word); 0 if none.
  uint32_t written(int partition, int bank, int word) const;

 private:
  // What one accepted MultiplyMoving must write: PSUM[m][offset + n] = values[m * N + n].
  struct ExpectedMm {
    size_t index;        // position in the program
    model::TeInstruction instr;
    int m = 0, n = 0;
    bool narrow = false; // a transpose writing 16-bit elements: values are 16-bit
    int col0 = 0;        // the tile's first PSUM partition
    std::vector<uint32_t> values;
    std::vector<bool> seen;
    uint64_t writes = 0;
  };
  struct Rejection {
    uint8_t tag;
    model::TeError code;
    size_t index;
  };

  model::Sbuf& sbuf_;
  model::TensorEngine golden_;
  std::function<void(const std::string&)> fail_;
  const std::vector<model::TeInstruction>* program_ = nullptr;
  TeRunResult* result_ = nullptr;
  std::map<uint8_t, ExpectedMm> expected_;  // by tag
  std::set<uint8_t> awaiting_done_;         // MMs with every PSUM write seen, not yet reported complete
  std::deque<uint8_t> ls_in_flight_;        // accepted LSs, oldest first
  std::deque<Rejection> rejections_;
  std::set<std::pair<int, int>> touched_;
  std::map<std::tuple<int, int, int>, uint32_t> shadow_;  // (partition, bank, word) -> RTL value
};

// A PSUM word in hex and as FP32, for reports.
std::string show_fp32(uint32_t bits);

}  // namespace ncore::tb
