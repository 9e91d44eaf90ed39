#include "model/hbm/channel.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::model {
namespace {

uint64_t store_key(const HbmAddress& a) {
  return (static_cast<uint64_t>(a.row) << 9) | (static_cast<uint64_t>(a.bank) << 5) |
         static_cast<uint64_t>(a.col);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The state's timing rules.

HbmChannelState::HbmChannelState(const HbmConfig& c) : config(c) {
  config.validate();
  rdq.resize(static_cast<size_t>(config.rd_depth));
  wrq.resize(static_cast<size_t>(config.wr_depth));
  rd_detail.resize(rdq.size());
  wr_detail.resize(wrq.size());
}

bool HbmChannelState::act_ready(int bank) const {
  const HbmBankState& b = banks[static_cast<size_t>(bank)];
  const uint64_t faw_oldest = faw[static_cast<size_t>(faw_next)];
  return !b.open && now >= b.act_ok &&
         now >= bg_act_ok[static_cast<size_t>(bank % kHbmBankGroups)] && now >= ch_act_ok &&
         (faw_oldest == 0 || now + 1 >= faw_oldest + static_cast<uint64_t>(config.timing.faw));
}

bool HbmChannelState::ref_ready(int bank) const {
  const HbmBankState& b = banks[static_cast<size_t>(bank)];
  return !b.open && now >= b.act_ok &&
         now >= bg_act_ok[static_cast<size_t>(bank % kHbmBankGroups)] && now >= ch_act_ok &&
         now >= ch_ref_ok;
}

bool HbmChannelState::pre_ready(int bank) const {
  const HbmBankState& b = banks[static_cast<size_t>(bank)];
  return b.open && now >= b.pre_ok;
}

bool HbmChannelState::col_ready(const HbmEntry& e) const {
  const HbmBankState& b = banks[static_cast<size_t>(e.bank)];
  return b.open && b.row == e.row && col_timing_ready(e.bank, e.write);
}

bool HbmChannelState::col_timing_ready(int bank, bool write) const {
  const HbmBankState& b = banks[static_cast<size_t>(bank)];
  const size_t bg = static_cast<size_t>(bank % kHbmBankGroups);
  return write ? now >= b.wr_ok && now >= bg_wr_ok[bg] && now >= ch_wr_ok
               : now >= b.rd_ok && now >= bg_rd_ok[bg] && now >= ch_rd_ok;
}

bool HbmChannelState::all_bank_ref_ready() const {
  return std::all_of(banks.begin(), banks.end(),
                     [&](const HbmBankState& b) { return !b.open && now >= b.act_ok; }) &&
         now >= ch_ref_ok;
}

HbmCmd HbmChannelState::row_need(bool write, int slot, const std::array<bool, kHbmBanks>& hits) const {
  const HbmEntry& e = queue(write)[static_cast<size_t>(slot)];
  const HbmBankState& b = banks[static_cast<size_t>(e.bank)];
  if (!b.open) return act_ready(e.bank) ? HbmCmd::kAct : HbmCmd::kNone;
  if (b.row == e.row) return HbmCmd::kNone;
  const bool may_close = !hits[static_cast<size_t>(e.bank)] || (oldest.urgent && oldest.is(write, slot));
  return may_close && now >= b.pre_ok ? HbmCmd::kPre : HbmCmd::kNone;
}

// ---------------------------------------------------------------------------------------------
// The channel.

HbmChannel::HbmChannel(const HbmConfig& config)
    : s_(config), scheduler_(make_scheduler(config.sched)), refresh_(make_refresh(config)) {}

bool HbmChannel::ready(bool write) const {
  return s_.queued(write) < static_cast<int>(s_.queue(write).size());
}

void HbmChannel::preload(uint64_t byte_addr, const HbmData& data) {
  store_[store_key(hbm_map(byte_addr, s_.config.channels, s_.config.xor_hash))] = data;
}

HbmData HbmChannel::peek(uint64_t byte_addr) const {
  const auto it = store_.find(store_key(hbm_map(byte_addr, s_.config.channels, s_.config.xor_hash)));
  return it == store_.end() ? HbmData{} : it->second;
}

bool HbmChannel::idle() const {
  return s_.queued(false) == 0 && s_.queued(true) == 0 && in_flight_.empty() && !pending_[0] &&
         !pending_[1];
}

void HbmChannel::offer(const HbmRequest& r) {
  if (pending_[r.write] || !ready(r.write))
    throw Error("HBM channel: a request offered while not ready or twice in a cycle");
  pending_[r.write] = true;
  offer_[r.write] = r;
  settled_ = false;
}

uint64_t HbmChannel::next_activity() const {
  const uint64_t now = s_.now;
  if (!settled_) return now;
  // Every decision of a cycle rests on readiness rules, each true from the latest of its
  // registers on (now >= each). After a quiet cycle the queues and the banks stand still, so
  // nothing changes before the earliest rule still false turns true, the age cap makes the
  // oldest request urgent, the refresh timer adds a refresh owed, or a read's data is due.
  uint64_t next = now + refresh_->ticks_to_next_debt();
  const auto reach = [&](uint64_t at) {
    if (at >= now && at < next) next = at;
  };
  const uint64_t faw_oldest = s_.faw[static_cast<size_t>(s_.faw_next)];
  const uint64_t faw_ok = faw_oldest == 0 ? 0 : faw_oldest + static_cast<uint64_t>(s_.config.timing.faw) - 1;
  uint64_t all_closed_ok = s_.ch_ref_ok;  // all_bank_ref_ready()
  for (size_t k = 0; k < s_.banks.size(); ++k) {
    const HbmBankState& b = s_.banks[k];
    const size_t g = k % kHbmBankGroups;
    const bool wanted = s_.per_bank[k] > 0;
    all_closed_ok = std::max(all_closed_ok, b.act_ok);
    if (b.open) {
      reach(b.pre_ok);                                                      // pre_ready
      if (wanted) {                                                         // col_ready
        reach(std::max({b.rd_ok, s_.bg_rd_ok[g], s_.ch_rd_ok}));
        reach(std::max({b.wr_ok, s_.bg_wr_ok[g], s_.ch_wr_ok}));
      }
    } else {
      const uint64_t act_ok = std::max({b.act_ok, s_.bg_act_ok[g], s_.ch_act_ok});
      if (wanted) reach(std::max(act_ok, faw_ok));                          // act_ready
      reach(std::max(act_ok, s_.ch_ref_ok));                                // ref_ready
    }
  }
  reach(all_closed_ok);
  if (s_.oldest.found) reach(s_.oldest.arrival + static_cast<uint64_t>(s_.config.age_cap));
  if (!in_flight_.empty()) reach(in_flight_.front().cycle);
  return next;
}

void HbmChannel::skip_to(uint64_t cycle) {
  if (cycle == s_.now) return;
  const uint64_t next = next_activity();
  if (cycle < s_.now || cycle > next)
    throw Error(fmt::format("HBM channel: skip from cycle {} to {} past its next activity at {}", s_.now, cycle, next));
  refresh_->tick(cycle - s_.now);
  s_.now = cycle;
  // Arrived at the activity: this cycle's step is not quiet (the refresh timer may have added
  // a refresh owed on the way, which next_activity() would no longer see).
  if (cycle == next) settled_ = false;
}

void HbmChannel::issue(const HbmCommand& c) {
  const HbmTiming& t = s_.config.timing;
  const auto later = [](uint64_t& reg, uint64_t v) { reg = std::max(reg, v); };
  const auto at = [&](int d) { return s_.now + static_cast<uint64_t>(d); };
  if (c.cmd == HbmCmd::kRefAb) {
    for (auto& b : s_.banks) later(b.act_ok, at(t.rfc));
    later(s_.ch_ref_ok, at(t.rfc));
    ++counters_.refab;
    refresh_->issued(c);
    return;
  }
  HbmBankState& b = s_.banks[static_cast<size_t>(c.bank)];
  const size_t bg = static_cast<size_t>(c.bank % kHbmBankGroups);
  switch (c.cmd) {
    case HbmCmd::kAct:
      b.open = true;
      b.row = c.row;
      for (bool w : {false, true}) {
        int& hits = s_.row_hits[w][static_cast<size_t>(c.bank)];
        hits = 0;
        s_.for_each_valid(w, [&](size_t, const HbmEntry& e) { hits += e.bank == c.bank && e.row == c.row; });
      }
      b.rd_ok = at(t.rcd_rd);
      b.wr_ok = at(t.rcd_wr);
      later(b.pre_ok, at(t.ras));
      later(b.act_ok, at(t.rc));
      later(s_.bg_act_ok[bg], at(t.rrd_l));
      later(s_.ch_act_ok, at(t.rrd_s));
      s_.faw[static_cast<size_t>(s_.faw_next)] = s_.now + 1;
      s_.faw_next = (s_.faw_next + 1) % 4;
      ++counters_.act;
      break;
    case HbmCmd::kPre:
      b.open = false;
      s_.row_hits[0][static_cast<size_t>(c.bank)] = s_.row_hits[1][static_cast<size_t>(c.bank)] = 0;
      later(b.act_ok, at(t.rp));
      b.last_use = s_.now;
      ++counters_.pre;
      break;
    case HbmCmd::kRd:
      later(b.pre_ok, at(t.rtp));
      later(s_.bg_rd_ok[bg], at(t.ccd_l));
      later(s_.ch_rd_ok, at(t.ccd_s));
      later(s_.ch_wr_ok, at(t.rtw));
      b.last_use = s_.now;
      ++counters_.rd;
      break;
    case HbmCmd::kWr:
      later(b.pre_ok, at(t.cwl + t.bl + t.wr));
      later(s_.bg_wr_ok[bg], at(t.ccd_l));
      later(s_.ch_wr_ok, at(t.ccd_s));
      later(s_.ch_rd_ok, at(t.cwl + t.bl + t.wtr_s));
      later(s_.bg_rd_ok[bg], at(t.cwl + t.bl + t.wtr_l));
      b.last_use = s_.now;
      ++counters_.wr;
      break;
    case HbmCmd::kRefPb:
      later(b.act_ok, at(t.rfcpb));
      later(s_.ch_ref_ok, at(t.rrefd));
      later(s_.ch_act_ok, at(t.rrefd));
      ++counters_.refpb;
      refresh_->issued(c);
      break;
    default: break;
  }
}

void HbmChannel::retire(bool write, int slot) {
  HbmEntry& e = s_.queue(write)[static_cast<size_t>(slot)];
  const uint64_t key = e.burst;
  if (write) {
    if (s_.config.store_data) store_[key] = s_.wr_detail[static_cast<size_t>(slot)].data;
  } else {
    HbmReadResponse r;
    r.cycle = s_.now + static_cast<uint64_t>(s_.config.timing.cl + s_.config.timing.bl);
    r.id = e.id;
    const auto it = store_.find(key);
    if (it != store_.end()) r.data = it->second;
    in_flight_.push_back(r);
  }
  max_age_ = std::max(max_age_, s_.now - e.arrival);
  if (urgent_tracked_ && e.id == urgent_id_) {
    max_urgent_wait_ = std::max(max_urgent_wait_, s_.now - urgent_since_);
    urgent_tracked_ = false;
  }
  e.valid = false;
  (write ? s_.wr_valid : s_.rd_valid).reset(static_cast<size_t>(slot));
  const size_t bank = static_cast<size_t>(e.bank);
  auto& order = s_.bank_order[write][bank];
  order.erase(std::find_if(order.begin(), order.end(), [&](const HbmChannelState::Arrival& a) { return a.seq == e.seq; }));
  s_.queued_any[bank] = --s_.per_bank[bank] > 0;
  if (s_.banks[bank].open && s_.banks[bank].row == e.row) --s_.row_hits[write][bank];
  // The requests that waited for it wait for one fewer (only those with a dependency left).
  for (bool w : {false, true}) {
    if (s_.waiting[w] == 0) continue;
    s_.for_each_valid(w, [&](size_t i, const HbmEntry& x) {
      if (!x.waits) return;
      HbmEntryDetail& d = (w ? s_.wr_detail : s_.rd_detail)[i];
      (write ? d.dep_wr : d.dep_rd).reset(static_cast<size_t>(slot));
      if (d.dep_rd.none() && d.dep_wr.none()) {
        s_.queue(w)[i].waits = false;
        --s_.waiting[w];
      }
    });
  }
}

// The request waits for the older requests to its burst that conflict with it (a read waits
// for no older read), less the one retiring this cycle.
void HbmChannel::insert(bool write, const HbmRequest& r, int slot) {
  const HbmAddress a = hbm_map(r.addr, s_.config.channels, s_.config.xor_hash);
  HbmEntry n;
  n.valid = true;
  n.write = write;
  n.bank = a.bank;
  n.row = a.row;
  n.col = a.col;
  n.id = r.id;
  n.arrival = s_.now;
  n.burst = store_key(a);
  n.seq = s_.inserted++;
  HbmEntryDetail& d = (write ? s_.wr_detail : s_.rd_detail)[static_cast<size_t>(slot)];
  d.dep_rd.reset();
  d.dep_wr.reset();
  d.data = r.data;
  // Only a request to the same bank can be to the same burst.
  for (bool qw : {false, true}) {
    if (!qw && !write) continue;
    for (const HbmChannelState::Arrival& a : s_.bank_order[qw][static_cast<size_t>(n.bank)])
      if (s_.queue(qw)[static_cast<size_t>(a.slot)].burst == n.burst) (qw ? d.dep_wr : d.dep_rd)[static_cast<size_t>(a.slot)] = true;
  }
  n.waits = d.dep_rd.any() || d.dep_wr.any();
  s_.waiting[write] += n.waits;
  s_.queue(write)[static_cast<size_t>(slot)] = n;
  (write ? s_.wr_valid : s_.rd_valid).set(static_cast<size_t>(slot));
  s_.arrivals.push_back({write, slot, n.seq});
  const size_t bank = static_cast<size_t>(n.bank);
  s_.bank_order[write][bank].push_back({write, slot, n.seq});
  s_.queued_any[bank] = ++s_.per_bank[bank] > 0;
  if (s_.banks[bank].open && s_.banks[bank].row == n.row) ++s_.row_hits[write][bank];
}

void HbmChannel::find_oldest() {
  HbmOldest& o = s_.oldest;
  o = HbmOldest{};
  // The first arrival still queued (arrival order is oldest first, a read before a write of
  // the same cycle, as a scan of both queues for the least arrival would find).
  auto& order = s_.arrivals;
  while (!order.empty()) {
    const HbmChannelState::Arrival& a = order.front();
    const HbmEntry& e = s_.queue(a.write)[static_cast<size_t>(a.slot)];
    if (e.valid && e.seq == a.seq) {
      o.found = true;
      o.write = a.write;
      o.slot = a.slot;
      o.bank = e.bank;
      o.arrival = e.arrival;
      break;
    }
    order.pop_front();
  }
  o.urgent = o.found && s_.now - o.arrival >= static_cast<uint64_t>(s_.config.age_cap);
  if (o.urgent && !urgent_tracked_) {
    urgent_tracked_ = true;
    urgent_id_ = s_.queue(o.write)[static_cast<size_t>(o.slot)].id;
    urgent_since_ = s_.now;
  }
}

HbmChannel::StepResult HbmChannel::step() {
  StepResult out;
  const bool took = pending_[0] || pending_[1];
  const bool mode_before = scheduler_->write_mode(), urgent_before = urgent_tracked_;
  const int debt_before = refresh_->debt();
  find_oldest();

  // Decisions, all on the state at the start of the cycle.
  const HbmHold hold = refresh_->hold(s_);
  const HbmColumnPick col = scheduler_->pick_column(s_, hold);
  HbmCommand row = refresh_->forced_command(s_);
  if (row.cmd == HbmCmd::kRefPb || row.cmd == HbmCmd::kRefAb) ++counters_.forced_ref;
  if (row.cmd == HbmCmd::kNone && !hold.all) {
    const HbmRowPick pick = scheduler_->pick_row(s_, hold);
    row.cmd = pick.cmd;
    row.bank = pick.bank;
    row.row = pick.row;
  }
  if (row.cmd == HbmCmd::kNone) row = refresh_->opportunistic_command(s_);
  scheduler_->advance(s_, col);
  // Where the requests offered this cycle go: the lowest free slot at the start of the cycle.
  std::array<int, 2> insert_slot{-1, -1};
  for (bool w : {false, true}) {
    const size_t free = (w ? ~s_.wr_valid : ~s_.rd_valid)._Find_first();
    if (pending_[w] && free < s_.queue(w).size()) insert_slot[w] = static_cast<int>(free);
  }

  // Issue.
  if (row.cmd != HbmCmd::kNone) {
    row.cycle = s_.now;
    issue(row);
    out.row = row;
  }
  if (col.slot >= 0) {
    const HbmEntry& e = s_.queue(col.write)[static_cast<size_t>(col.slot)];
    HbmCommand c;
    c.cycle = s_.now;
    c.cmd = col.write ? HbmCmd::kWr : HbmCmd::kRd;
    c.bank = e.bank;
    c.row = e.row;
    c.col = e.col;
    c.id = e.id;
    issue(c);
    out.col = c;
    retire(col.write, col.slot);
  }
  // Insert the read, then the write (a read and a write arriving together: the read is older).
  for (bool w : {false, true}) {
    if (!pending_[w]) continue;
    insert(w, offer_[w], insert_slot[w]);
    pending_[w] = false;
  }
  refresh_->tick();

  // Read data due this cycle.
  if (!in_flight_.empty() && in_flight_.front().cycle == s_.now) {
    out.has_response = true;
    out.response = in_flight_.front();
    in_flight_.erase(in_flight_.begin());
  }
  settled_ = !took && row.cmd == HbmCmd::kNone && col.slot < 0 && !out.has_response &&
             scheduler_->write_mode() == mode_before && urgent_tracked_ == urgent_before &&
             refresh_->debt() == debt_before;
  ++s_.now;
  return out;
}

}  // namespace ncore::model
