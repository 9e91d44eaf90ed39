#include "model/hbm/scheduler.h"

#include <algorithm>

namespace ncore::model {
namespace {

// The oldest request that `eligible` accepts and whose row command is needed and ready now.
template <class Eligible>
HbmRowPick oldest_row_need(const HbmChannelState& s, const HbmHold& hold,
                           const std::array<bool, kHbmBanks>& hits, Eligible eligible) {
  HbmRowPick pick;
  s.for_each_oldest_first([&](bool w, int slot, const HbmEntry& e) {
    if (!eligible(w, e) || hold.holds(e.bank)) return false;
    const HbmCmd need = s.row_need(w, slot, hits);
    if (need == HbmCmd::kNone) return false;
    pick.cmd = need;
    pick.bank = e.bank;
    pick.row = need == HbmCmd::kAct ? e.row : 0;
    return true;
  });
  return pick;
}

// Banks whose open row a request of the queues that count still hits.
std::array<bool, kHbmBanks> open_row_hits(const HbmChannelState& s, bool reads, bool writes) {
  std::array<bool, kHbmBanks> hits{};
  for (size_t b = 0; b < hits.size(); ++b)
    hits[b] = (reads && s.row_hits[0][b] > 0) || (writes && s.row_hits[1][b] > 0);
  return hits;
}

// Whether the column command of request (w, slot) is kept out of its bank by the urgent one.
bool yields_to_urgent(const HbmChannelState& s, bool w, int slot, const HbmEntry& e) {
  return s.oldest.urgent && e.bank == s.oldest.bank && !s.oldest.is(w, slot);
}

}  // namespace

HbmColumnPick ReorderScheduler::pick_column(const HbmChannelState& s, const HbmHold& hold) const {
  HbmColumnPick pick;
  pick.write = write_mode_;
  if (hold.all) return pick;
  // The oldest request of the direction whose column command may go, bank by bank: only a bank
  // whose open row a request of the direction hits has one, if the bank's timing allows.
  uint64_t oldest = ~uint64_t{0};
  for (int b = 0; b < kHbmBanks; ++b) {
    if (s.row_hits[write_mode_][static_cast<size_t>(b)] == 0 || hold.holds(b) || !s.col_timing_ready(b, write_mode_))
      continue;
    for (const HbmChannelState::Arrival& a : s.bank_order[write_mode_][static_cast<size_t>(b)]) {
      if (a.seq >= oldest) break;
      const HbmEntry& e = s.queue(write_mode_)[static_cast<size_t>(a.slot)];
      if (s.blocked(e) || yields_to_urgent(s, write_mode_, a.slot, e) || !s.col_ready(e)) continue;
      oldest = a.seq;
      pick.slot = a.slot;
      break;
    }
  }
  return pick;
}

HbmRowPick ReorderScheduler::pick_row(const HbmChannelState& s, const HbmHold& hold) const {
  // The oldest request of the direction, not blocked, whose ACT or PRE may go (row_need), bank
  // by bank: a closed bank ready for an ACT serves its oldest; an open one ready for a PRE, its
  // oldest request to another row, while no request of the direction hits the open row (or
  // that request is the urgent one).
  HbmRowPick pick;
  uint64_t oldest = ~uint64_t{0};
  const bool w = write_mode_;
  for (int b = 0; b < kHbmBanks; ++b) {
    const auto& order = s.bank_order[w][static_cast<size_t>(b)];
    if (order.empty() || hold.holds(b)) continue;
    const HbmBankState& bank = s.banks[static_cast<size_t>(b)];
    if (bank.open ? s.now < bank.pre_ok : !s.act_ready(b)) continue;
    if (bank.open && s.row_hits[w][static_cast<size_t>(b)] > 0) {  // only the urgent request may close it
      if (!s.oldest.urgent || s.oldest.write != w || s.oldest.bank != b) continue;
      const HbmEntry& e = s.queue(w)[static_cast<size_t>(s.oldest.slot)];
      if (s.blocked(e) || e.row == bank.row || e.seq >= oldest) continue;
      oldest = e.seq;
      pick.cmd = HbmCmd::kPre;
      pick.bank = b;
      pick.row = 0;
      continue;
    }
    for (const HbmChannelState::Arrival& a : order) {
      if (a.seq >= oldest) break;
      const HbmEntry& e = s.queue(w)[static_cast<size_t>(a.slot)];
      if (s.blocked(e)) continue;
      if (bank.open && bank.row == e.row) continue;
      oldest = a.seq;
      pick.cmd = bank.open ? HbmCmd::kPre : HbmCmd::kAct;
      pick.bank = b;
      pick.row = bank.open ? 0 : e.row;
      break;
    }
  }
  return pick;
}

void ReorderScheduler::advance(const HbmChannelState& s, const HbmColumnPick& served) {
  const int wr_count = s.queued(true);
  const int rd_ready = s.ready_count(false), wr_ready = s.ready_count(true);
  const HbmConfig& c = s.config;
  bool next = write_mode_;
  if (s.oldest.urgent)
    next = s.oldest.write;
  else if (!write_mode_)
    next = (wr_count >= c.wr_high && rd_served_ >= c.rd_batch) || (rd_ready == 0 && wr_count > 0);
  else
    next = !(wr_count == 0 || (rd_ready > 0 && (wr_count <= c.wr_low || wr_ready == 0)));
  if (served.slot >= 0 && !served.write && rd_served_ < c.rd_batch) ++rd_served_;
  if (next && !write_mode_) rd_served_ = 0;
  write_mode_ = next;
}

HbmColumnPick FcfsScheduler::pick_column(const HbmChannelState& s, const HbmHold& hold) const {
  HbmColumnPick pick;
  pick.write = s.oldest.write;
  if (hold.all || !s.oldest.found) return pick;
  const HbmEntry& e = s.queue(s.oldest.write)[static_cast<size_t>(s.oldest.slot)];
  if (!hold.holds(e.bank) && s.col_ready(e)) pick.slot = s.oldest.slot;
  return pick;
}

HbmRowPick FcfsScheduler::pick_row(const HbmChannelState& s, const HbmHold& hold) const {
  const auto hits = open_row_hits(s, true, true);
  return oldest_row_need(s, hold, hits, [](bool, const HbmEntry&) { return true; });
}

std::unique_ptr<HbmScheduler> make_scheduler(HbmSched policy) {
  if (policy == HbmSched::kFcfs) return std::make_unique<FcfsScheduler>();
  return std::make_unique<ReorderScheduler>();
}

}  // namespace ncore::model
