#pragma once
// How long the golden core's DMA transfers take over its HBM pseudo-channels: the core's own
// DmaTransferModel (dma_transfer.h), calibrated against the RTL core, whose DMA ports are
// served by the HBM reference controller (tb/hbm/hbm_fabric.h). Issue 27 asks for the golden
// core's cycles within 5% of the RTL's and at 10 million simulated cycles a second without
// data, so this is a fluid model of *runs*, not of bursts:
//
//   - A descriptor's bursts, in the order its engine issues them, are cut into runs: bursts in
//     a row that share one pseudo-channel, bank and DRAM row (at most 32: a 1 KiB row).
//   - An engine keeps up to `window` bursts queued in the channels (its 64 read tags, less the
//     ones whose data is on its way back), so it works on every run that starts within that
//     many bursts of its oldest unfinished one; a run enters its channel's read queue (64)
//     when its first burst arrives and the queue has room, or at once if it is its engine's
//     only run there (the ports and the fabric take requests round-robin, so every reading
//     engine has requests in the queue).
//   - Servers: each bank group of a pseudo-channel serves a burst every tCCD_L (4) cycles, the
//     pseudo-channel a burst every tCCD_S = BL (2) cycles; each DMA port sends, and each
//     pseudo-channel takes, one read and one write burst a cycle. Read runs share their
//     channel and bank groups max-min fairly (the queue holds the engines' requests in turn,
//     and FR-FCFS serves the oldest); writes and drains take them oldest first. Behind a full
//     read queue (more entered than it holds) a crowded bank group serves its reads oldest
//     first instead.
//   - Head-of-line blocking: a port whose engine has a run waiting for room in a full read
//     queue that other ports read too sends its bursts in turn with theirs, so each of its
//     engines moves no faster than the channel's rate over the ports reading there.
//   - A port sends one burst a cycle, round-robin over its reading engines, so a run's first
//     burst leaves no earlier than its place in the descriptor times those engines after the
//     descriptor starts.
//   - A run whose bank holds another row (or none) waits tRP + tRCD (or tRCD) first; runs of
//     one bank are served one row at a time, oldest first.
//   - Reads end CL + BL + the response path after their last burst is served. Writes are
//     posted: a write descriptor ends when its last burst enters the channel's write queue
//     (256 deep). The queued writes of a run then drain to their bank and row like a read
//     run (tRCD_WR to open it), when no read is queued, or, once 224 are queued, ahead of
//     reads until 32 are left (the write batch of model/hbm/scheduler.h).
//   - Refresh (model/hbm/refresh.h, per bank): after reset every channel pulls in 8 refreshes,
//     one every tRREFD (8) cycles, then one more every tREFI / 16; each holds an idle, closed
//     bank not refreshed this round (the most recently used, else the lowest) for tRFCpb.
//     A bank a stream will need next is often such a bank.
// model/README.md ("The golden core's timing") gives the figures against the RTL.

#include <array>
#include <cstdint>
#include <vector>

#include "model/core/dma_transfer.h"
#include "model/hbm/hbm.h"

namespace ncore::model {

// The pseudo-channels the RTL core harness puts behind the DMA ports (tb/core: 16 of them, 4 GiB).
inline HbmConfig core_hbm_config() {
  HbmConfig c;
  c.channels = 16;
  return c;
}

struct HbmDmaConfig {
  int engines = 16;
  int ports = 4;             // engine e is on port e % ports
  // Instruction-fetch streams (CoreConfig::fetch): engines `engines` and up, all on one more
  // port of their own (the core's fetch port), reading like any DMA engine.
  int fetch_engines = 0;
  // The controllers' timing, address map, queue depths, write watermarks and refresh pull-in,
  // as the reference controller (model/hbm) has them.
  HbmConfig hbm = core_hbm_config();
  int window = 52;           // bursts an engine keeps queued in the channels
  uint64_t read_tail_cycles = 25;   // last burst served -> the engine sees its data (CL + BL + path)
  uint64_t write_tail_cycles = 3;   // last burst accepted -> the engine sees it taken
  uint64_t issue_lead_cycles = 3;   // transfer begins -> its first burst reaches a channel
};

// The RTL's drain of a transpose block: 2 cycles to turn the buffer around, 16 columns.
inline constexpr uint64_t kTransposeDrainCycles = 18;

class HbmDmaTransfers : public DmaTransferModel {
 public:
  explicit HbmDmaTransfers(const HbmDmaConfig& c);
  void begin(int engine, const DmaDescriptor& d, uint64_t now) override;
  bool done(int engine) const override;
  void retire(int engine) override;
  uint64_t next_event(uint64_t now) const override;
  void advance(uint64_t now, uint64_t to) override;
  bool busy() const;  // some begun transfer has not finished

 private:
  struct Run {
    int channel = 0, bank = 0, row = 0;
    double bursts = 0;
    uint64_t first = 0;  // its first burst's place in the descriptor
  };
  enum class Kind : uint8_t { kRead, kWrite, kDrain };
  // A run in motion: an engine reading it (kRead), an engine handing it to its channel's write
  // queue (kWrite), or the channel writing it to DRAM from that queue (kDrain, which outlives
  // its engine's transfer).
  struct Flow {
    Kind kind = Kind::kRead;
    int engine = 0;
    size_t run = 0;          // in the engine's transfer (kRead, kWrite)
    int channel = 0, bank = 0, row = 0;
    double left = 0;         // bursts still to serve (kDrain: queued, waiting to be written)
    bool feeding = false;    // kDrain: its kWrite flow still adds bursts
    uint64_t arrive = 0;     // its first burst reaches the channel
    uint64_t ready = 0;      // its row is open from this cycle
    bool entered = false;    // kRead: in its channel's read queue
    bool row_open = false;   // it holds its bank's row (kWrite: needs none)
    double rate = 0;
  };
  struct Engine {
    bool active = false, write = false;
    double window = 0;        // bursts it keeps queued (a transpose: one block)
    uint64_t tail_extra = 0;  // cycles after its last burst's data (a transpose: the drain)
    std::vector<Run> runs;
    size_t next_run = 0;      // first run not yet in the window
    double queued = 0;        // bursts of its flows still to serve
    uint64_t begin_at = 0;    // bursts reach the channels from here
    uint64_t end = kNoEvent;  // every burst served: the transfer ends at end
  };
  struct Bank {
    int row = -1;             // open row (-1: closed)
    uint64_t free_at = 0;     // refresh or the last row switch
    uint64_t last_use = 0;    // its last burst served
    bool refreshed = false;   // in this round of per-bank refreshes
  };
  struct Channel {
    std::vector<Bank> banks;
    double reads = 0;         // queued read bursts
    double writes = 0;        // queued write bursts
    bool write_mode = false;  // draining a write batch ahead of reads
    int refresh_slots = 0;    // refresh opportunities taken or owed so far
    int refresh_owed = 0;     // opportunities that found no bank to refresh yet
    int closed_unrefreshed = 0;  // banks a refresh could still take
  };
  static void count_closed_unrefreshed(Channel& ch);

  bool admit(int e, uint64_t now);  // the next run entering engine e's window, if it may
  void refresh_until(size_t channel, uint64_t now);  // the refreshes due before `now`
  std::array<uint64_t, kHbmBanks> demand_at(size_t channel) const;  // when a request first reaches each bank
  // When the run's first burst leaves its port; sharing: the engines reading on that port now
  // (reading_on_port(), counted when negative).
  uint64_t arrival(int engine, size_t run, int sharing = -1) const;
  int reading_on_port(int port) const;
  int port_of(int engine) const { return engine < cfg_.engines ? engine % cfg_.ports : cfg_.ports; }
  int ports() const { return cfg_.ports + (cfg_.fetch_engines > 0 ? 1 : 0); }
  void open_rows(uint64_t now);     // flows whose bank may switch to their row
  void allocate();                  // rates
  // Per port, the most each of its engines may move while a full read queue that other ports
  // fill too holds it (1e30: not held); whether any port is held.
  bool pace_held_ports(double channel_rate, std::vector<double>& pace);
  // Each channel's read flows get max-min fair shares of it and its bank groups (as bounds).
  void share_reads_fairly(const std::vector<size_t>& reads, double channel_rate, double group_rate,
                          std::vector<double>& bound);
  void settle(uint64_t now);        // ends, admissions, rows, rates after a change
  void index_writes();                      // writer_ and fed_drain_, after flows_ changed
  Flow* drain_of(const Flow& write);        // the drain a write flow feeds
  const Flow* write_of(const Flow& drain) const;  // the write feeding a drain, if it still does

  HbmDmaConfig cfg_;
  std::vector<Engine> engines_;
  std::vector<Flow> flows_;
  std::vector<Channel> channels_;
  // Per engine, the index in flows_ of its write flow and of the drain that flow feeds (-1:
  // none); an engine hands over one run at a time.
  std::vector<int> writer_, fed_drain_;
  struct Scratch {  // working vectors, kept to spare allocations on every event
    std::vector<double> cap, initial, bound, demand, share, sorted;
    std::vector<std::array<size_t, 3>> uses;
    std::vector<char> reads_queued, entry_waits;  // per channel
    std::vector<char> has_entered;                // open_rows(): per engine, a read run in its queue
    std::vector<double> group_share;              // share_reads_fairly(): per (channel, bank group)
    std::vector<int> group_flows;
    std::array<std::vector<size_t>, 3> by_kind;  // allocate(): the flows that can move, by Kind
    std::vector<size_t> order;
    std::vector<int> sharing;  // open_rows(): reading_on_port() of each port
    std::vector<double> engine_rate, read_rate, write_in, write_out;
    std::vector<uint32_t> asking, waiting;  // pace_held_ports(): per channel, ports (bits)
    std::vector<double> pace;               // allocate(): per port (pace_held_ports())
    std::vector<double> port_total;         // allocate(): per port resource, its engines' demands
    std::vector<int> admitting;             // settle(): engines that may admit another run
  };
  Scratch scratch_;                // settle(), allocate(), open_rows()
  mutable Scratch const_scratch_;  // next_event()'s
  uint64_t capacity_ = 0;
  uint64_t now_ = 0;
};

}  // namespace ncore::model
