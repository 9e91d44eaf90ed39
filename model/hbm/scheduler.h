#pragma once
// The request scheduler of a pseudo-channel: which queued request gets the column bus (RD/WR)
// and which the row bus (ACT/PRE) each cycle, after Ramulator2's IScheduler. The channel
// (channel.h) asks it once per cycle, in this order: pick_column, pick_row, then advance.
// rtl/hbm/nc_hbm_sched.sv makes the same decisions in hardware.
//
// Both schedulers share three rules the channel's state gives them:
//   - a request never overtakes an older one to the same burst when either writes
//     (HbmChannelState::blocked);
//   - the urgent request (the oldest, past the age cap) owns its bank: no other request's
//     column command goes there, and it may close a row other requests still hit;
//   - nothing goes to a bank a due refresh holds (HbmHold).

#include <memory>

#include "model/hbm/channel_state.h"

namespace ncore::model {

struct HbmColumnPick {
  int slot = -1;       // -1: the column bus stays idle
  bool write = false;
};

struct HbmRowPick {
  HbmCmd cmd = HbmCmd::kNone;  // kAct or kPre for a request, kNone
  int bank = 0;
  int row = 0;                 // kAct: the row it opens
};

class HbmScheduler {
 public:
  virtual ~HbmScheduler() = default;
  // The request whose RD/WR goes this cycle: one whose command is ready now
  // (HbmChannelState::col_ready), outside `hold`, not in the urgent request's bank unless it is
  // the urgent request. Reads the state only.
  virtual HbmColumnPick pick_column(const HbmChannelState& s, const HbmHold& hold) const = 0;
  // The request whose ACT or PRE goes this cycle (HbmChannelState::row_need), outside `hold`.
  // Called only when no refresh command has the row bus. Reads the state only.
  virtual HbmRowPick pick_row(const HbmChannelState& s, const HbmHold& hold) const = 0;
  // End of the cycle: updates the scheduler's own registered state from the state at the start
  // of the cycle and the column command just picked.
  virtual void advance(const HbmChannelState& s, const HbmColumnPick& served) = 0;
  // The direction the column bus serves (true: writes), for waves and tests.
  virtual bool write_mode() const = 0;
};

// Batched FR-FCFS (the default, HbmSched::kReorder): one direction at a time. Writes drain in
// batches between the high and the low watermark; a read phase serves at least rd_batch reads
// while reads wait. Within the direction the oldest request whose column command is ready goes
// first (row hits first, since only open rows are ready); the oldest whose ACT or PRE is ready
// gets the row bus; a row stays open while requests of the direction still hit it.
class ReorderScheduler : public HbmScheduler {
 public:
  HbmColumnPick pick_column(const HbmChannelState& s, const HbmHold& hold) const override;
  HbmRowPick pick_row(const HbmChannelState& s, const HbmHold& hold) const override;
  void advance(const HbmChannelState& s, const HbmColumnPick& served) override;
  bool write_mode() const override { return write_mode_; }

 private:
  bool write_mode_ = false;
  int rd_served_ = 0;  // reads issued in this read phase (saturates at rd_batch)
};

// FCFS (HbmSched::kFcfs): the column bus serves strictly the oldest request; any request may
// get its ACT or PRE ahead of its turn (bank by bank), and a row stays open while any request
// hits it.
class FcfsScheduler : public HbmScheduler {
 public:
  HbmColumnPick pick_column(const HbmChannelState& s, const HbmHold& hold) const override;
  HbmRowPick pick_row(const HbmChannelState& s, const HbmHold& hold) const override;
  void advance(const HbmChannelState&, const HbmColumnPick&) override {}
  bool write_mode() const override { return false; }
};

std::unique_ptr<HbmScheduler> make_scheduler(HbmSched policy);

}  // namespace ncore::model
