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
  // A column command needs its row open: with no request of the direction hitting an open row,
  // there is none to find.
  const auto& hits = s.row_hits[write_mode_];
  if (std::none_of(hits.begin(), hits.end(), [](int n) { return n > 0; })) return pick;
  s.for_each_oldest_first([&](bool w, int slot, const HbmEntry& e) {
    if (w != write_mode_ || s.blocked(e) || hold.holds(e.bank) || yields_to_urgent(s, w, slot, e) || !s.col_ready(e))
      return false;
    pick.slot = slot;
    return true;
  });
  return pick;
}

HbmRowPick ReorderScheduler::pick_row(const HbmChannelState& s, const HbmHold& hold) const {
  const auto hits = open_row_hits(s, !write_mode_, write_mode_);
  return oldest_row_need(s, hold, hits,
                         [&](bool w, const HbmEntry& e) { return w == write_mode_ && !s.blocked(e); });
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
