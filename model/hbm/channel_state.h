#pragma once
// What a pseudo-channel's policies see: the request queues, the banks and the timing registers
// as they stand at the start of a cycle, with the readiness rules of HBM3 timing. The channel
// (channel.h) owns and updates it; the scheduler (scheduler.h) and the refresh manager
// (refresh.h) only read it.

#include <array>
#include <bitset>
#include <cstdint>
#include <deque>
#include <vector>

#include "model/hbm/hbm.h"

namespace ncore::model {

inline constexpr int kHbmMaxQueue = 256;

// One queued request of one burst: what the policies read every cycle (kept small, so a scan
// of a queue touches one cache line per request).
struct HbmEntry {
  bool valid = false;
  bool write = false;
  bool waits = false;                 // an older conflicting request to its burst is still queued
  int bank = 0, row = 0, col = 0;
  uint32_t id = 0;
  uint64_t arrival = 0;
  uint64_t burst = 0;                 // burst address within the channel (same-address checks)
  uint64_t seq = 0;                   // insertion count (HbmChannelState::arrivals)
};

// What only a request's arrival and retirement touch: its same-address dependencies and data.
struct HbmEntryDetail {
  std::bitset<kHbmMaxQueue> dep_rd;   // older conflicting entries it waits for, per read slot
  std::bitset<kHbmMaxQueue> dep_wr;   // ... per write slot
  HbmData data{};
};

// One bank: its open row and the first cycle each command may go to it.
struct HbmBankState {
  bool open = false;
  int row = 0;
  uint64_t act_ok = 0, pre_ok = 0, rd_ok = 0, wr_ok = 0;
  uint64_t last_use = 0;              // the cycle of its last PRE or column command
};

// The oldest request of both queues, and whether it has waited past the age cap: an urgent
// request takes over the direction and its bank (no other column command goes there).
struct HbmOldest {
  bool found = false;
  bool write = false;
  int slot = -1;
  int bank = 0;
  uint64_t arrival = 0;
  bool urgent = false;
  bool is(bool w, int s) const { return found && write == w && slot == s; }
};

// What a due refresh holds back this cycle: one bank (per-bank) or every bank (all-bank).
struct HbmHold {
  int bank = -1;       // -1: none
  bool all = false;
  bool holds(int b) const { return all || b == bank; }
};

struct HbmChannelState {
  explicit HbmChannelState(const HbmConfig& c);

  HbmConfig config;
  uint64_t now = 0;
  std::vector<HbmEntry> rdq, wrq;
  std::vector<HbmEntryDetail> rd_detail, wr_detail;
  std::bitset<kHbmMaxQueue> rd_valid, wr_valid;  // which slots hold a request
  // Kept as requests arrive and retire, so no cycle scans the queues for them: the requests in
  // arrival order (a read before a write of the same cycle; entries whose seq no longer
  // matches their slot have retired), the requests per bank, and the waiting ones per queue.
  struct Arrival {
    bool write = false;
    int slot = 0;
    uint64_t seq = 0;
  };
  std::deque<Arrival> arrivals;
  // The same per queue and bank, oldest first, without retired entries: the scheduler's
  // oldest-first searches look bank by bank, where the timing a bank's requests share is
  // checked once (the oldest request any search accepts is the oldest of its banks' firsts).
  std::array<std::array<std::vector<Arrival>, kHbmBanks>, 2> bank_order;
  uint64_t inserted = 0;
  std::array<int, kHbmBanks> per_bank{};
  std::array<int, 2> waiting{};
  std::array<std::array<int, kHbmBanks>, 2> row_hits{};  // per queue and bank: requests its open row serves
  std::array<HbmBankState, kHbmBanks> banks{};
  std::array<uint64_t, kHbmBankGroups> bg_act_ok{}, bg_rd_ok{}, bg_wr_ok{};
  uint64_t ch_act_ok = 0, ch_rd_ok = 0, ch_wr_ok = 0, ch_ref_ok = 0;
  std::array<uint64_t, 4> faw{};  // the last four ACT cycles (+1, so 0 means none)
  int faw_next = 0;
  // Derived at the start of each cycle (HbmChannel::step).
  HbmOldest oldest;
  std::array<bool, kHbmBanks> queued_any{};      // a request of either queue goes to the bank

  std::vector<HbmEntry>& queue(bool write) { return write ? wrq : rdq; }
  const std::vector<HbmEntry>& queue(bool write) const { return write ? wrq : rdq; }
  int queued(bool write) const { return static_cast<int>((write ? wr_valid : rd_valid).count()); }
  // f(slot, entry) for every valid entry of a queue, in slot order (the order a full scan
  // visits them, so results do not change; only occupied slots cost time).
  template <class F>
  void for_each_valid(bool write, F f) const {
    const auto& bits = write ? wr_valid : rd_valid;
    const auto& q = queue(write);
    for (size_t i = bits._Find_first(); i < q.size(); i = bits._Find_next(i)) f(i, q[i]);
  }
  // f(write, slot, entry) for every queued request, oldest first (a read before a write of the
  // same cycle: the order a scan for the least arrival finds them in), until f returns true.
  template <class F>
  void for_each_oldest_first(F f) const {
    for (const Arrival& a : arrivals) {
      const HbmEntry& e = queue(a.write)[static_cast<size_t>(a.slot)];
      if (e.valid && e.seq == a.seq && f(a.write, a.slot, e)) return;
    }
  }
  // Waits for an older request to its burst (same-address order).
  bool blocked(const HbmEntry& e) const { return e.waits; }
  int ready_count(bool write) const { return queued(write) - waiting[write]; }  // not blocked
  // An ACT may go to the bank now: closed, tRP/tRC/tRRD/tRREFD passed, and tFAW.
  bool act_ready(int bank) const;
  // A REFpb may go to the bank now: as an ACT, but tRREFD instead of tFAW.
  bool ref_ready(int bank) const;
  bool pre_ready(int bank) const;
  // The request's RD/WR may go now: its row is open and tRCD/tCCD/tWTR/tRTW passed.
  bool col_ready(const HbmEntry& e) const;
  // The timing part of col_ready, the same for every request of the bank and direction.
  bool col_timing_ready(int bank, bool write) const;
  // Every bank closed, past tRP/tRFC, and the channel past its last refresh: a REFab may go.
  bool all_bank_ref_ready() const;
  // What request (write, slot) needs on the row bus now: kAct, kPre or kNone. A row is closed
  // only when no request that counts (hits) still hits it, unless the request is urgent.
  HbmCmd row_need(bool write, int slot, const std::array<bool, kHbmBanks>& hits) const;
};

}  // namespace ncore::model
