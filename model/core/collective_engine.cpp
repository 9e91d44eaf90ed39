#include "model/core/collective_engine.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/core/core_model.h"

namespace ncore::model {

uint64_t cc_send_bytes(const isa::CcInstruction& c, int ranks) {
  if (c.opcode == isa::Opcode::kCoreBarrier) return 0;
  const auto n = static_cast<uint64_t>(ranks);
  return c.opcode == isa::Opcode::kReduceScatter || c.opcode == isa::Opcode::kAllToAll ? c.bytes * n : c.bytes;
}

uint64_t cc_receive_bytes(const isa::CcInstruction& c, int ranks) {
  if (c.opcode == isa::Opcode::kCoreBarrier) return 0;
  const auto n = static_cast<uint64_t>(ranks);
  return c.opcode == isa::Opcode::kAllGather || c.opcode == isa::Opcode::kAllToAll ? c.bytes * n : c.bytes;
}

isa::CcError cc_check(const isa::CcInstruction& c, int ranks, uint64_t granule, uint64_t hbm_bytes, std::string* why) {
  if (c.opcode == isa::Opcode::kCoreBarrier) {  // no data: dtype, src and dst are not read
    if (c.bytes == 0) return isa::CcError::kNone;
    *why = fmt::format("bytes {}: a core_barrier moves nothing, expected 0", c.bytes);
    return isa::CcError::kSize;
  }
  if (c.dtype != DType::kFp32 && c.dtype != DType::kBf16) {
    const auto d = static_cast<size_t>(c.dtype);
    *why = d < isa::kDTypeNames.size() ? fmt::format("dtype {}: a collective takes fp32 or bf16", isa::kDTypeNames[d])
                                       : fmt::format("dtype code {}: a collective takes fp32 or bf16", d);
    return isa::CcError::kDtype;
  }
  if (c.bytes == 0 || c.bytes % granule != 0) {
    *why = fmt::format("bytes {}: expected a positive multiple of {}", c.bytes, granule);
    return isa::CcError::kSize;
  }
  const uint64_t send = cc_send_bytes(c, ranks), receive = cc_receive_bytes(c, ranks);
  if (c.src + send > hbm_bytes || c.dst + receive > hbm_bytes) {
    *why = fmt::format("src {:#x} + {} bytes or dst {:#x} + {} bytes is past the end of HBM ({} bytes)", c.src, send,
                       c.dst, receive, hbm_bytes);
    return isa::CcError::kRange;
  }
  return isa::CcError::kNone;
}

LoneCollectives::LoneCollectives(SparseMemory& hbm, uint64_t hbm_bytes, uint64_t latency_cycles, double bytes_per_cycle,
                                 bool move_data)
    : hbm_(hbm), hbm_bytes_(hbm_bytes), latency_(latency_cycles), rate_(bytes_per_cycle), move_data_(move_data) {}

uint64_t lone_collective_end(const isa::CcInstruction& c, bool refused, uint64_t now, uint64_t previous_end,
                             uint64_t latency_cycles, double bytes_per_cycle) {
  // Read once, write once, through the core's share of HBM; in order, after the one before it.
  const uint64_t move = refused ? 0 : static_cast<uint64_t>(std::ceil(2.0 * static_cast<double>(c.bytes) / bytes_per_cycle));
  return std::max(now, previous_end) + latency_cycles + move;
}

void LoneCollectives::issue(size_t, const isa::CcInstruction& c, uint64_t now) {
  Pending p;
  p.c = c;
  p.error = cc_check(c, 1, 32, hbm_bytes_, &p.why);
  p.end = lone_collective_end(c, p.error != isa::CcError::kNone, now, pending_.empty() ? 0 : pending_.back().end,
                              latency_, rate_);
  pending_.push_back(std::move(p));
}

bool LoneCollectives::done(uint64_t now) const { return !pending_.empty() && pending_.front().end <= now; }

isa::CcError LoneCollectives::error(std::string* why) const {
  *why = pending_.front().why;
  return pending_.front().error;
}

std::pair<uint64_t, uint64_t> LoneCollectives::written() const {
  const Pending& p = pending_.front();
  return p.error == isa::CcError::kNone ? std::pair{p.c.dst, p.c.bytes} : std::pair{uint64_t{0}, uint64_t{0}};
}

void LoneCollectives::retire() {
  const Pending& p = pending_.front();
  if (p.error == isa::CcError::kNone && move_data_) {  // one member: every collective is a copy
    std::vector<uint8_t> piece(std::min<uint64_t>(p.c.bytes, uint64_t{1} << 20));
    for (uint64_t done = 0; done < p.c.bytes; done += piece.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), p.c.bytes - done));
      hbm_.read_block(p.c.src + done, piece.data(), n);
      hbm_.write_block(p.c.dst + done, piece.data(), n);
    }
  }
  pending_.pop_front();
}

uint64_t LoneCollectives::next_event(uint64_t now) const {
  return pending_.empty() ? kNoEvent : std::max(now + 1, pending_.front().end);
}

}  // namespace ncore::model
