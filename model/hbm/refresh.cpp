#include "model/hbm/refresh.h"

namespace ncore::model {
namespace {

HbmCommand command(const HbmChannelState& s, HbmCmd cmd, int bank = 0) {
  HbmCommand c;
  c.cycle = s.now;
  c.cmd = cmd;
  c.bank = bank;
  return c;
}

// A PRE of the lowest bank that is open and may close now, or, with every bank closed and
// ready, a REFab.
HbmCommand close_all_then_refresh(const HbmChannelState& s) {
  for (int b = 0; b < kHbmBanks; ++b)
    if (s.pre_ready(b)) return command(s, HbmCmd::kPre, b);
  if (s.all_bank_ref_ready()) return command(s, HbmCmd::kRefAb);
  return command(s, HbmCmd::kNone);
}

}  // namespace

void HbmRefreshManager::tick(uint64_t n) {
  timer_ += n;
  debt_ += static_cast<int>(timer_ / interval_);
  timer_ %= interval_;
}

// ---------------------------------------------------------------------------------------------
// Per-bank

PerBankRefresh::PerBankRefresh(const HbmConfig& c)
    : HbmRefreshManager(static_cast<uint64_t>(c.timing.refi / kHbmBanks)) {}

HbmHold PerBankRefresh::hold(const HbmChannelState& s) const {
  HbmHold h;
  if (!forced(s)) return h;
  for (int b = 0; b < kHbmBanks && h.bank < 0; ++b)
    if (!refreshed_[static_cast<size_t>(b)]) h.bank = b;
  return h;
}

HbmCommand PerBankRefresh::forced_command(const HbmChannelState& s) const {
  const int target = hold(s).bank;
  if (target < 0) return command(s, HbmCmd::kNone);
  if (s.pre_ready(target)) return command(s, HbmCmd::kPre, target);
  if (s.ref_ready(target)) return command(s, HbmCmd::kRefPb, target);
  return command(s, HbmCmd::kNone);
}

HbmCommand PerBankRefresh::opportunistic_command(const HbmChannelState& s) const {
  if (debt_ <= -s.config.max_pull_in) return command(s, HbmCmd::kNone);
  const auto idle = [&](int b) {
    return !refreshed_[static_cast<size_t>(b)] && !s.queued_any[static_cast<size_t>(b)];
  };
  int best = -1;
  for (int b = 0; b < kHbmBanks; ++b) {
    if (!idle(b) || !s.ref_ready(b)) continue;
    if (best < 0 || s.banks[static_cast<size_t>(b)].last_use > s.banks[static_cast<size_t>(best)].last_use)
      best = b;
  }
  if (best >= 0) return command(s, HbmCmd::kRefPb, best);
  if (debt_ > 0)
    for (int b = 0; b < kHbmBanks; ++b)
      if (idle(b) && s.pre_ready(b)) return command(s, HbmCmd::kPre, b);
  return command(s, HbmCmd::kNone);
}

void PerBankRefresh::issued(const HbmCommand& c) {
  if (c.cmd != HbmCmd::kRefPb) return;
  refreshed_[static_cast<size_t>(c.bank)] = true;
  bool round_done = true;
  for (bool r : refreshed_) round_done &= r;
  if (round_done) refreshed_.fill(false);
  --debt_;
}

// ---------------------------------------------------------------------------------------------
// All-bank

AllBankRefresh::AllBankRefresh(const HbmConfig& c)
    : HbmRefreshManager(static_cast<uint64_t>(c.timing.refi)) {}

HbmHold AllBankRefresh::hold(const HbmChannelState& s) const {
  HbmHold h;
  h.all = forced(s);
  return h;
}

HbmCommand AllBankRefresh::forced_command(const HbmChannelState& s) const {
  return forced(s) ? close_all_then_refresh(s) : command(s, HbmCmd::kNone);
}

HbmCommand AllBankRefresh::opportunistic_command(const HbmChannelState& s) const {
  if (forced(s) || debt_ <= -s.config.max_pull_in || s.oldest.found) return command(s, HbmCmd::kNone);
  return close_all_then_refresh(s);
}

void AllBankRefresh::issued(const HbmCommand& c) {
  if (c.cmd == HbmCmd::kRefAb) --debt_;
}

std::unique_ptr<HbmRefreshManager> make_refresh(const HbmConfig& c) {
  if (c.refresh == HbmRefresh::kAllBank) return std::make_unique<AllBankRefresh>(c);
  return std::make_unique<PerBankRefresh>(c);
}

}  // namespace ncore::model
