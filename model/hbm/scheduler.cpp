#include "model/hbm/scheduler.h"

namespace ncore::model {
namespace {

// The oldest request of `queues` (reads before writes on equal arrival) that `eligible`
// accepts and whose row command is needed and ready now.
template <class Eligible>
HbmRowPick oldest_row_need(const HbmChannelState& s, const HbmHold& hold,
                           const std::array<bool, kHbmBanks>& hits, Eligible eligible) {
  HbmRowPick pick;
  const HbmEntry* best = nullptr;
  for (bool w : {false, true})
    s.for_each_valid(w, [&](size_t i, const HbmEntry& e) {
      if (!eligible(w, e) || hold.holds(e.bank)) return;
      const HbmCmd need = s.row_need(w, static_cast<int>(i), hits);
      if (need == HbmCmd::kNone) return;
      if (best == nullptr || e.arrival < best->arrival) {
        best = &e;
        pick.cmd = need;
        pick.bank = e.bank;
        pick.row = need == HbmCmd::kAct ? e.row : 0;
      }
    });
  return pick;
}

// Banks whose open row a request that `counts` still hits.
template <class Counts>
std::array<bool, kHbmBanks> open_row_hits(const HbmChannelState& s, Counts counts) {
  std::array<bool, kHbmBanks> hits{};
  for (bool w : {false, true}) {
    if (!counts(w)) continue;
    s.for_each_valid(w, [&](size_t, const HbmEntry& e) {
      const HbmBankState& b = s.banks[static_cast<size_t>(e.bank)];
      if (b.open && b.row == e.row) hits[static_cast<size_t>(e.bank)] = true;
    });
  }
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
  const auto& q = s.queue(write_mode_);
  s.for_each_valid(write_mode_, [&](size_t i, const HbmEntry& e) {
    const int slot = static_cast<int>(i);
    if (s.blocked(e) || hold.holds(e.bank) || yields_to_urgent(s, write_mode_, slot, e) || !s.col_ready(e)) return;
    if (pick.slot < 0 || e.arrival < q[static_cast<size_t>(pick.slot)].arrival) pick.slot = slot;
  });
  return pick;
}

HbmRowPick ReorderScheduler::pick_row(const HbmChannelState& s, const HbmHold& hold) const {
  const auto hits = open_row_hits(s, [&](bool w) { return w == write_mode_; });
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
  const auto hits = open_row_hits(s, [](bool) { return true; });
  return oldest_row_need(s, hold, hits, [](bool, const HbmEntry&) { return true; });
}

std::unique_ptr<HbmScheduler> make_scheduler(HbmSched policy) {
  if (policy == HbmSched::kFcfs) return std::make_unique<FcfsScheduler>();
  return std::make_unique<ReorderScheduler>();
}

}  // namespace ncore::model
