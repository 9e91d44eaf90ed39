#pragma once
// One HBM3 pseudo-channel controller, stepped a cycle at a time: the golden model of
// rtl/hbm/nc_hbm_ctrl.sv (the same command trace, cycle for cycle).
//
// The channel owns the mechanism: a read queue and a write queue, the same-address order
// between them, the age cap, the banks and the HBM3 timing. Its two policies are objects behind
// interfaces: the scheduler (scheduler.h) picks the requests' commands, the refresh manager
// (refresh.h) owes and places refreshes. Each cycle: a forced refresh has the row bus first,
// then the scheduler's ACT/PRE, then an opportunistic refresh; the scheduler's RD/WR has the
// column bus.

#include <memory>
#include <unordered_map>
#include <vector>

#include "model/hbm/channel_state.h"
#include "model/hbm/hbm.h"
#include "model/hbm/refresh.h"
#include "model/hbm/scheduler.h"

namespace ncore::model {

// Like AXI it has a read request port and a write request port: each cycle offer() at most one
// read and one write (each accepted iff ready() for its direction), then step(). Commands and
// responses of the step are returned. Arrival order defines memory order: a read and a write
// arriving in one cycle, read first.
class HbmChannel {
 public:
  explicit HbmChannel(const HbmConfig& config);

  // Whether a request of this direction would be accepted this cycle (depends on state only).
  bool ready(bool write) const;
  // Takes the request this cycle (call before step(); once per direction a cycle; ready() must hold).
  void offer(const HbmRequest& r);
  struct StepResult {
    HbmCommand row, col;                 // cmd kNone when the bus is idle
    bool has_response = false;
    HbmReadResponse response;
  };
  StepResult step();

  uint64_t cycle() const { return s_.now; }

  // Event-driven use (the chip's HBM in system runs). A step is quiet when it issues no
  // command, answers no read, takes no request and changes neither the scheduler's direction,
  // the refresh debt nor the urgent request. After a quiet step every later cycle repeats it
  // until a timing register, the age cap, the refresh timer or a due read reaches the cycle:
  // next_activity() is the first such cycle (the current one unless settled()), and skip_to()
  // jumps to any cycle up to it, counting the skipped cycles on the refresh timer. Stepping
  // only there gives the same commands, cycle for cycle, as stepping every cycle
  // (HbmModel.SkippingQuietCyclesKeepsEveryCommand). offer() unsettles the channel.
  bool settled() const { return settled_; }
  uint64_t next_activity() const;
  void skip_to(uint64_t cycle);
  bool idle() const;                     // queues empty, nothing in flight
  int queued(bool write) const { return s_.queued(write); }
  uint64_t max_age() const { return max_age_; }  // oldest age any request reached at its column command
  // The longest any request waited from becoming the oldest urgent request to its column command.
  uint64_t max_urgent_wait() const { return max_urgent_wait_; }
  bool write_mode() const { return scheduler_->write_mode(); }
  int refresh_debt() const { return refresh_->debt(); }
  // Backdoor access to the backing store (as TLM's transport_dbg): no timing, no commands.
  void preload(uint64_t byte_addr, const HbmData& data);
  HbmData peek(uint64_t byte_addr) const;
  // The controller's view of memory (the backing store its RD/WR commands act on).
  const std::unordered_map<uint64_t, HbmData>& store() const { return store_; }

  struct Counters {
    uint64_t act = 0, pre = 0, rd = 0, wr = 0, refpb = 0, refab = 0, forced_ref = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  void find_oldest();
  void issue(const HbmCommand& c);
  void retire(bool write, int slot);
  void insert(bool write, const HbmRequest& r, int slot);

  HbmChannelState s_;
  std::unique_ptr<HbmScheduler> scheduler_;
  std::unique_ptr<HbmRefreshManager> refresh_;
  std::array<bool, 2> pending_{};        // a read / a write offered this cycle
  std::array<HbmRequest, 2> offer_{};
  std::vector<HbmReadResponse> in_flight_;  // read responses by due cycle
  std::unordered_map<uint64_t, HbmData> store_;
  uint64_t max_age_ = 0;
  uint64_t max_urgent_wait_ = 0;
  bool settled_ = false;          // the last step was quiet and nothing was offered since
  bool urgent_tracked_ = false;   // the oldest request is urgent, since urgent_since_
  uint32_t urgent_id_ = 0;
  uint64_t urgent_since_ = 0;
  Counters counters_;
};

}  // namespace ncore::model
