#pragma once
// The refresh manager of a pseudo-channel: when refreshes are owed, which bank a due refresh
// holds, and which refresh (or the PRE it needs) takes the row bus, after Ramulator2's
// IRefreshManager. The channel (channel.h) asks it each cycle, in this order: hold,
// forced_command, opportunistic_command (only when nothing else has the row bus), issued for
// each refresh that goes out, then tick. rtl/hbm/nc_hbm_refresh.sv is the same in hardware.
//
// Refresh is always on. Refreshes are owed one per interval (debt); a refresh issued pays one
// off. A manager may postpone up to max_postpone refreshes and pull in up to max_pull_in ahead
// of time; at max_postpone owed the next one is forced.

#include <memory>

#include "model/hbm/channel_state.h"

namespace ncore::model {

class HbmRefreshManager {
 public:
  virtual ~HbmRefreshManager() = default;
  // What a forced refresh holds this cycle: the requests' commands must keep out of it.
  virtual HbmHold hold(const HbmChannelState& s) const = 0;
  // The command a forced refresh needs now (a PRE of a bank it must close, or the refresh), or
  // kNone. It goes before any request's row command.
  virtual HbmCommand forced_command(const HbmChannelState& s) const = 0;
  // With the row bus otherwise idle: a refresh ahead of need (or a PRE to allow one), or kNone.
  virtual HbmCommand opportunistic_command(const HbmChannelState& s) const = 0;
  // A refresh command (REFpb or REFab) went out: one fewer owed.
  virtual void issued(const HbmCommand& c) = 0;
  // End of the cycle: the refresh timer; one more refresh owed every interval.
  void tick() { tick(1); }
  // Refreshes owed (negative: pulled in ahead of time).
  int debt() const { return debt_; }
  // Ticks until the next one adds to the debt (1: this cycle's tick does).
  uint64_t ticks_to_next_debt() const { return interval_ - timer_; }
  // `n` cycles' ticks at once (an event-driven channel skipping quiet cycles).
  void tick(uint64_t n);

 protected:
  explicit HbmRefreshManager(uint64_t interval) : interval_(interval) {}
  // max_postpone refreshes are owed: the next one may wait no longer.
  bool forced(const HbmChannelState& s) const { return debt_ >= s.config.max_postpone; }
  int debt_ = 0;

 private:
  uint64_t interval_;
  uint64_t timer_ = 0;
};

// Per-bank (HbmRefresh::kPerBank): one REFpb per bank per round of Banks refreshes, one owed
// every tREFI / Banks. Idle banks (no queued request) are refreshed ahead of need, the most
// recently used first (the least likely to be wanted soon); a forced refresh goes to the lowest
// bank not yet refreshed this round, closing it first.
class PerBankRefresh : public HbmRefreshManager {
 public:
  explicit PerBankRefresh(const HbmConfig& c);
  HbmHold hold(const HbmChannelState& s) const override;
  HbmCommand forced_command(const HbmChannelState& s) const override;
  HbmCommand opportunistic_command(const HbmChannelState& s) const override;
  void issued(const HbmCommand& c) override;

 private:
  std::array<bool, kHbmBanks> refreshed_{};  // in this round
};

// All-bank (HbmRefresh::kAllBank): REFab every tREFI. A forced refresh closes every bank and
// holds them all; ahead of need a refresh goes only while both queues are empty.
class AllBankRefresh : public HbmRefreshManager {
 public:
  explicit AllBankRefresh(const HbmConfig& c);
  HbmHold hold(const HbmChannelState& s) const override;
  HbmCommand forced_command(const HbmChannelState& s) const override;
  HbmCommand opportunistic_command(const HbmChannelState& s) const override;
  void issued(const HbmCommand& c) override;
};

std::unique_ptr<HbmRefreshManager> make_refresh(const HbmConfig& c);

}  // namespace ncore::model
