#include "tb/tensor/te_scoreboard.h"

#include <fmt/format.h>

#include "model/common/numerics.h"

namespace ncore::tb {

using isa::Opcode;
using model::TeError;
using model::TeInstruction;

std::string show_fp32(uint32_t bits) {
  return fmt::format("0x{:08x} ({})", bits, [&] {
    const float v = model::bits_to_float(bits);
    if (v != v) return std::string("nan");
    return fmt::format("{}", v);
  }());
}

TeScoreboard::TeScoreboard(int rows, int cols, model::Sbuf& sbuf, std::function<void(const std::string&)> fail)
    : sbuf_(sbuf),
      golden_(model::TensorEngineConfig{rows, cols, 8, 512, sbuf.bytes_per_partition()}),
      fail_(std::move(fail)) {}

void TeScoreboard::start(const std::vector<TeInstruction>& program, TeRunResult& result) {
  program_ = &program;
  result_ = &result;
  touched_.clear();
}

bool TeScoreboard::accepted(const TeInstruction& i, size_t index) {
  const TeError err = golden_.execute(i, sbuf_);
  if (err != TeError::kNone) {
    rejections_.push_back({i.tag, err, index});
    return false;
  }
  if (i.opcode == Opcode::kLoadStationary) {
    ls_in_flight_.push_back(i.tag);
  } else if (i.opcode == Opcode::kMultiplyMoving) {
    ExpectedMm e;
    e.index = index;
    e.instr = i;
    e.m = golden_.stationary_m(model::tiling_of(i));
    e.n = i.n;
    e.narrow = i.transpose && golden_.transpose_is_narrow(model::tiling_of(i));
    e.col0 = golden_.tile_col0(model::tiling_of(i));
    e.values.resize(static_cast<size_t>(e.m) * e.n);
    e.seen.assign(e.values.size(), false);
    for (int m = 0; m < e.m; ++m)
      for (int n = 0; n < e.n; ++n)
        e.values[static_cast<size_t>(m) * e.n + n] =
            e.narrow ? golden_.psum16(e.col0 + m, i.psum_bank, i.psum_offset + n)
                     : golden_.psum(e.col0 + m, i.psum_bank, i.psum_offset + n);
    if (expected_.count(i.tag)) fail_(fmt::format("harness: tag {} reused while in flight", i.tag));
    for (int n = 0; n < e.n; ++n) touched_.insert({i.psum_bank, (i.psum_offset + n) / (e.narrow ? 2 : 1)});
    expected_[i.tag] = std::move(e);
  }
  return true;
}

void TeScoreboard::psum_write(const TePsumWrite& w) {
  ++result_->psum_writes_checked;
  const auto it = expected_.find(w.tag);
  if (it == expected_.end())
    return fail_(fmt::format("PSUM write with tag {} at partition {} that no accepted MultiplyMoving expects",
                             w.tag, w.partition));
  ExpectedMm& e = it->second;
  const int m = w.partition - e.col0;  // row of the output tile
  // A 16-bit element e is half e % 2 of word e / 2 (half code 1: low, 2: high).
  const int element = w.half == 0 ? static_cast<int>(w.word) : 2 * static_cast<int>(w.word) + (w.half == 2);
  const int n = element - e.instr.psum_offset;
  // Formatted only when something is wrong: this runs for every PSUM write.
  const auto where = [&] {
    return fmt::format("instruction #{}: {}\n  tile coordinates: m={}, n={} (PSUM partition {}, bank {}, word {})",
                       e.index, model::describe(e.instr), m, n, w.partition, w.bank, w.word);
  };
  if (w.bank != e.instr.psum_bank || n < 0 || n >= e.n || m < 0 || m >= e.m || (w.half != 0) != e.narrow)
    return fail_(fmt::format("PSUM write outside the instruction's window (half code {})\n  {}", w.half, where()));
  const size_t idx = static_cast<size_t>(m) * e.n + n;
  if (e.seen[idx]) return fail_("PSUM written twice\n  " + where());
  const uint32_t actual = e.narrow ? (w.data >> (w.half == 2 ? 16 : 0)) & 0xFFFFu : w.data;
  if (actual != e.values[idx]) {
    const auto show = [&](uint32_t v) {
      return e.narrow ? fmt::format("0x{:04x} (16-bit element)", v) : show_fp32(v);
    };
    return fail_(fmt::format("PSUM mismatch\n  {}\n  expected {}\n  actual   {}", where(), show(e.values[idx]),
                             show(actual)));
  }
  e.seen[idx] = true;
  shadow_[{w.partition, w.bank, static_cast<int>(w.word)}] = w.data;
  if (++e.writes == static_cast<uint64_t>(e.m) * e.n) {
    ++result_->mm_checked;
    awaiting_done_.insert(w.tag);
    expected_.erase(it);
  }
}

void TeScoreboard::mm_done(int segment, uint8_t tag) {
  if (!awaiting_done_.erase(tag))
    return fail_(fmt::format("MM completion (segment {}) for tag {}, which has {}", segment, tag,
                             expected_.count(tag) ? "PSUM writes still to come" : "no MultiplyMoving in flight"));
  ++result_->completions_checked;
}

void TeScoreboard::ls_done(uint8_t tag) {
  if (ls_in_flight_.empty() || ls_in_flight_.front() != tag)
    return fail_(fmt::format("LS completion for tag {}; the oldest LS in flight is {}", tag,
                             ls_in_flight_.empty() ? std::string("none") : std::to_string(ls_in_flight_.front())));
  ls_in_flight_.pop_front();
  ++result_->completions_checked;
}

void TeScoreboard::rejected(uint8_t tag, uint8_t code) {
  if (rejections_.empty())
    return fail_(fmt::format("RTL rejected tag {} with code {} ({}); the golden model accepted it", tag, code,
                             model::te_error_name(static_cast<TeError>(code))));
  const Rejection want = rejections_.front();
  rejections_.pop_front();
  if (tag != want.tag || code != static_cast<uint8_t>(want.code))
    return fail_(fmt::format("rejection differs for instruction #{} ({}): RTL tag {} code {} ({}), golden tag {} "
                             "code {} ({})",
                             want.index, model::describe((*program_)[want.index]), tag, code,
                             model::te_error_name(static_cast<TeError>(code)), want.tag, static_cast<int>(want.code),
                             model::te_error_name(want.code)));
  ++result_->rejections_checked;
}

bool TeScoreboard::drained() const {
  return expected_.empty() && awaiting_done_.empty() && ls_in_flight_.empty() && rejections_.empty();
}

std::string TeScoreboard::outstanding() const {
  return fmt::format("{} MMs with PSUM writes outstanding, {} completions outstanding", expected_.size(),
                     awaiting_done_.size() + ls_in_flight_.size());
}

void TeScoreboard::finish() {
  if (expected_.empty()) return;
  const ExpectedMm& e = expected_.begin()->second;
  fail_(fmt::format("instruction #{} ({}): only {} of {} PSUM writes seen", e.index, model::describe(e.instr),
                    e.writes, e.m * e.n));
}

std::pair<int, int> TeScoreboard::in_flight_word(model::SplitMix64& rng) const {
  const ExpectedMm& e = expected_.begin()->second;
  return {e.instr.psum_bank, (e.instr.psum_offset + static_cast<int>(rng.below(e.n))) / (e.narrow ? 2 : 1)};
}

uint32_t TeScoreboard::written(int partition, int bank, int word) const {
  const auto it = shadow_.find({partition, bank, word});
  return it == shadow_.end() ? 0u : it->second;
}

}  // namespace ncore::tb
