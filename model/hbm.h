#pragma once
// The HBM reference controller: HBM3 timing, the address map, and the request scheduler of one
// pseudo-channel, cycle by cycle. It is the golden model of rtl/hbm/nc_hbm_ctrl.sv (same policy,
// same command trace, cycle for cycle) and the fast HBM model for the chip-level TLM.
//
// Policy (rtl/hbm/README.md gives the theory of operation):
//   - Separate read and write queues. Reorder mode serves one direction at a time: writes drain
//     in batches between a high and a low watermark, reads in phases of at least rd_batch (while
//     reads wait); within a direction the oldest request whose column command is ready is
//     served first (row hits first), and the oldest request whose row command (ACT or PRE) is
//     ready gets the row bus. A row is not closed while requests of the
//     current direction still hit it. FCFS mode serves strictly the oldest request.
//   - Age cap: the oldest request, once older than the cap, is urgent: the direction switches to
//     it, its row may be closed despite hits, and no other column command touches its bank.
//   - Same-address order: a request never overtakes an older one to the same 32-byte burst when
//     either of them writes (RAW, WAR, WAW).
//   - Refresh is always on. Per-bank: one REFpb per bank per round of Banks refreshes, one owed
//     every tREFI/Banks, postponed up to MaxPostpone or pulled in up to MaxPullIn; idle banks
//     (no queued request) are refreshed first, most recently used first; a bank owed past the
//     postponement limit is forced (precharged and refreshed). All-bank: REFab every tREFI.

#include <array>
#include <bitset>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace ncore::model {

// HBM3 timing in clock cycles (tCK). Defaults: an HBM3 part at 6.4 Gb/s per pin, tCK 0.625 ns,
// after Ramulator2's HBM3 configuration (CL 20, CWL 10, tRCD 31/15, tRP 26, tRAS 45, tRC 72,
// tCCD_S/L 2/4, tRRD_S/L 4/5, tFAW 24, tWR 33, tRTP 9, tWTR_S/L 7/10, tREFI 3.9 us); tRFC 350 ns
// and tRFCpb 160 ns are JESD238's 8 Gb figures, tRREFD 8 cycles.
struct HbmTiming {
  double tck_ns = 0.625;
  int bl = 2;       // data-bus cycles per burst: BL8 on a 32-bit pseudo-channel at 4 beats/tCK
  int cl = 20, cwl = 10;
  int rcd_rd = 31, rcd_wr = 15;
  int rp = 26, ras = 45, rc = 72;
  int ccd_s = 2, ccd_l = 4;
  int rrd_s = 4, rrd_l = 5, faw = 24;
  int wr = 33, rtp = 9, wtr_s = 7, wtr_l = 10;
  int rtw = 14;     // read-to-write turnaround, RD to WR: CL + BL + 2 - CWL
  int refi = 6240;  // 3.9 us
  int rfc = 560;    // all-bank refresh, 350 ns
  int rfcpb = 256;  // per-bank refresh, 160 ns
  int rrefd = 8;    // REFpb to REFpb or ACT of another bank
};

enum class HbmSched : uint8_t { kReorder = 0, kFcfs = 1 };
enum class HbmRefresh : uint8_t { kPerBank = 0, kAllBank = 1 };

// One pseudo-channel: 32 data bits, 32 bytes per burst, 4 bank groups x 4 banks, 1 KiB page.
inline constexpr int kHbmBurstBytes = 32;
inline constexpr int kHbmBankGroups = 4;
inline constexpr int kHbmBanksPerGroup = 4;
inline constexpr int kHbmBanks = kHbmBankGroups * kHbmBanksPerGroup;
inline constexpr int kHbmColumns = 32;  // bursts per 1 KiB row
inline constexpr int kHbmRowBits = 14;  // 16,384 rows per bank: 256 MiB per pseudo-channel

struct HbmConfig {
  HbmTiming timing;
  HbmSched sched = HbmSched::kReorder;
  HbmRefresh refresh = HbmRefresh::kPerBank;
  int channels = 1;          // pseudo-channels, a power of two up to 16
  bool xor_hash = true;      // fold row bits into the bank and channel bits
  int rd_depth = 64;         // structural (RTL parameters RdDepth, WrDepth)
  int wr_depth = 256;
  int wr_high = 224;         // write queue fill that starts a write batch
  int wr_low = 32;           // write batch ends at or below this fill (when reads wait)
  int rd_batch = 512;        // reads a read phase serves before the high watermark ends it
  int age_cap = 4096;        // cycles in the queue before a request becomes urgent
  int max_postpone = 8;      // refreshes owed before one is forced
  int max_pull_in = 8;       // refreshes issued ahead of time, at most
  // Peak bandwidth of all channels in GB/s: burst bytes per BL cycles.
  double peak_gbps() const {
    return channels * kHbmBurstBytes / (timing.bl * timing.tck_ns);
  }
  void validate() const;     // throws Error naming the field, its value and the legal range
};

// Where a byte address lives. Burst address bits, low to high: column (5), bank id (4: bank
// group in the low 2 bits, so consecutive KiB rotate bank groups), channel (log2 channels),
// row (14). With xor_hash, bank id ^= fold4(row) and channel ^= fold_c(row): the row bits are
// XOR-folded in chunks of the field's width, so streams aligned to any power of two spread over
// every bank and channel instead of piling onto one.
struct HbmAddress {
  int channel = 0, bank = 0, row = 0, col = 0;  // bank = bank group * 4 + bank in group
  int bank_group() const { return bank % kHbmBankGroups; }
};
HbmAddress hbm_map(uint64_t byte_addr, int channels, bool xor_hash);
uint64_t hbm_unmap(const HbmAddress& a, int channels, bool xor_hash);  // the inverse
uint64_t hbm_capacity_bytes(int channels);

using HbmData = std::array<uint64_t, 4>;  // one 32-byte burst

// A request of one burst, as it enters a channel.
struct HbmRequest {
  bool write = false;
  uint64_t addr = 0;    // byte address, 32-byte aligned
  uint32_t id = 0;
  HbmData data{};       // write data
};

enum class HbmCmd : uint8_t { kNone = 0, kAct = 1, kPre = 2, kRd = 3, kWr = 4, kRefPb = 5, kRefAb = 6 };
const char* hbm_cmd_name(HbmCmd c);

// A command on the row bus (ACT, PRE, REFpb, REFab) or the column bus (RD, WR).
struct HbmCommand {
  uint64_t cycle = 0;
  HbmCmd cmd = HbmCmd::kNone;
  int bank = 0, row = 0, col = 0;
  uint32_t id = 0;      // RD/WR: the request served
  bool operator==(const HbmCommand& o) const {
    return cycle == o.cycle && cmd == o.cmd && bank == o.bank && row == o.row && col == o.col &&
           id == o.id;
  }
};
std::string describe(const HbmCommand& c);

struct HbmReadResponse {
  uint64_t cycle = 0;   // the cycle after the last data beat
  uint32_t id = 0;
  HbmData data{};
};

// One pseudo-channel controller, stepped a cycle at a time. Like AXI it has a read request port
// and a write request port: each cycle offer() at most one read and one write (each accepted iff
// ready() for its direction), then step(). Commands and responses of the step are returned.
// Arrival order defines memory order: a read and a write arriving in one cycle, read first.
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

  uint64_t cycle() const { return now_; }
  bool idle() const;                     // queues empty, nothing in flight
  int queued(bool write) const;
  uint64_t max_age() const { return max_age_; }  // oldest age any request reached at its column command
  // The longest any request waited from becoming the oldest urgent request to its column command.
  uint64_t max_urgent_wait() const { return max_urgent_wait_; }
  bool write_mode() const { return write_mode_; }
  int refresh_debt() const { return ref_debt_; }
  // Backdoor access to the backing store (as TLM's transport_dbg): no timing, no commands.
  void preload(uint64_t byte_addr, const HbmData& data);
  HbmData peek(uint64_t byte_addr) const;
  // The controller's view of memory (the backing store its RD/WR commands act on).
  const std::unordered_map<uint64_t, HbmData>& store() const { return store_; }

  struct Counters {
    uint64_t act = 0, pre = 0, rd = 0, wr = 0, refpb = 0, refab = 0, forced_ref = 0;
    uint64_t mode_switches = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Entry {
    bool valid = false;
    bool write = false;
    int bank = 0, row = 0, col = 0;
    uint32_t id = 0;
    uint64_t arrival = 0;
    uint64_t burst = 0;          // burst address within the channel (same-address checks)
    std::bitset<256> dep_rd;     // older conflicting entries it waits for, per read slot
    std::bitset<256> dep_wr;     // ... per write slot
    HbmData data{};
  };
  struct Bank {
    bool open = false;
    int row = 0;
    uint64_t act_ok = 0, pre_ok = 0, rd_ok = 0, wr_ok = 0;
    uint64_t last_use = 0;
    bool refreshed = false;      // in this refresh round
  };
  std::vector<Entry>& queue(bool write) { return write ? wrq_ : rdq_; }
  const std::vector<Entry>& queue(bool write) const { return write ? wrq_ : rdq_; }
  bool blocked(const Entry& e) const {
    return (e.dep_rd & rd_valid_).any() || (e.dep_wr & wr_valid_).any();
  }
  bool act_ready(int bank) const;
  bool ref_ready(int bank) const;
  bool col_ready(const Entry& e) const;
  void issue(const HbmCommand& c);
  void retire(bool write, int slot);

  HbmConfig config_;
  uint64_t now_ = 0;
  std::vector<Entry> rdq_, wrq_;
  std::bitset<256> rd_valid_, wr_valid_;  // which slots hold a request
  std::array<Bank, kHbmBanks> banks_{};
  std::array<uint64_t, kHbmBankGroups> bg_act_ok_{}, bg_rd_ok_{}, bg_wr_ok_{};
  uint64_t ch_act_ok_ = 0, ch_rd_ok_ = 0, ch_wr_ok_ = 0, ch_ref_ok_ = 0;
  std::array<uint64_t, 4> faw_{};  // the last four ACT cycles (+1, so 0 means none)
  int faw_next_ = 0;
  bool write_mode_ = false;
  int rd_served_ = 0;              // reads issued in this read phase (saturates at rd_batch)
  int ref_debt_ = 0;               // refreshes owed (negative: pulled in)
  uint64_t ref_timer_ = 0;
  std::array<bool, 2> pending_{};        // a read / a write offered this cycle
  std::array<HbmRequest, 2> offer_{};
  std::vector<HbmReadResponse> in_flight_;  // read responses by due cycle
  std::unordered_map<uint64_t, HbmData> store_;
  uint64_t max_age_ = 0;
  uint64_t max_urgent_wait_ = 0;
  bool urgent_tracked_ = false;   // the oldest request is urgent, since urgent_since_
  uint32_t urgent_id_ = 0;
  uint64_t urgent_since_ = 0;
  Counters counters_;
};

// A trace line: <issue_cycle> <R|W> <hex byte address> <bytes>.
struct HbmTraceEntry {
  uint64_t cycle = 0;
  bool write = false;
  uint64_t addr = 0;
  uint64_t bytes = 0;
  int line = 0;  // in the trace file (0: made in code)
};
// The most bursts one trace may expand to (512 MiB of traffic): memory stays bounded.
inline constexpr uint64_t kMaxTraceBursts = uint64_t{1} << 24;
// Parses a trace; a bad line throws Error naming the source, the line and what is wrong.
std::vector<HbmTraceEntry> parse_hbm_trace(std::istream& in, const std::string& source);

// Statistics of a run over all channels.
struct HbmStats {
  uint64_t cycles = 0;             // first cycle to the last data beat
  uint64_t data_cycles = 0;        // data-bus busy cycles, summed over channels
  uint64_t reads = 0, writes = 0;  // bursts
  uint64_t acts = 0, refreshes = 0;
  double utilization = 0, gbps = 0, peak_gbps = 0, row_hit_rate = 0;
  double lat_mean_ns = 0, lat_p99_ns = 0;
  uint64_t max_age_cycles = 0;
  uint64_t max_urgent_wait_cycles = 0;  // urgent (oldest past the age cap) to served
  std::vector<std::pair<uint64_t, uint64_t>> timeline;  // (window end cycle, busy data cycles)
};

// Splits a trace into bursts, each tagged with an id and (for writes) data drawn from the seed.
// Bursts go to their channel's input in trace order, each no earlier than its issue cycle.
struct HbmBurst {
  uint64_t cycle = 0;
  int channel = 0;
  HbmRequest request;
};
// A request past the end of HBM, or a trace past kMaxTraceBursts, throws Error naming `source`
// and the line.
std::vector<HbmBurst> hbm_bursts(const std::vector<HbmTraceEntry>& trace, const HbmConfig& config,
                                 uint64_t seed, const std::string& source = "trace");

// Plays one channel's bursts into its read and write ports, each in trace order. A burst is
// offered no earlier than its issue cycle, and not before every earlier burst of the other
// direction to the same address was accepted: the controller's arrival order keeps trace order
// wherever it matters, so a reference memory updated in trace order predicts every read.
class HbmPlayer {
 public:
  HbmPlayer(const std::vector<HbmBurst>& bursts, int channel);  // keeps a reference to bursts
  const HbmBurst* head(bool write, uint64_t cycle) const;  // the burst to offer now, or null
  void accept(bool write);
  bool done() const { return next_[0] == lane_[0].size() && next_[1] == lane_[1].size(); }
  size_t remaining() const {
    return lane_[0].size() - next_[0] + lane_[1].size() - next_[1];
  }

 private:
  const std::vector<HbmBurst>& bursts_;
  std::array<std::vector<size_t>, 2> lane_;  // indices into bursts_, per direction
  std::array<size_t, 2> next_{};
  std::unordered_map<uint64_t, std::array<std::deque<size_t>, 2>> unaccepted_;  // by address
};

// What each read of a burst list must return: the latest earlier write to its address (zeros if
// none), by read id.
std::unordered_map<uint32_t, HbmData> hbm_expected_reads(const std::vector<HbmBurst>& bursts);

// Gathers the statistics of a run, golden or RTL, from what the channels do.
class HbmStatsBuilder {
 public:
  HbmStatsBuilder(const HbmConfig& config, size_t bursts, uint64_t timeline_window);
  void accepted(uint32_t id, uint64_t cycle) { accepted_at_[id] = cycle; }
  void command(const HbmCommand& c);
  void response(uint32_t id, uint64_t cycle);
  void end_of_cycle(uint64_t cycle);
  HbmStats finish(uint64_t last_cycle, uint64_t max_age, uint64_t max_urgent_wait);

 private:
  HbmConfig config_;
  uint64_t window_ = 0, window_busy_ = 0, last_beat_ = 0;
  HbmStats stats_;
  std::unordered_map<uint32_t, uint64_t> accepted_at_;
  std::vector<uint64_t> latencies_;
};

// Checks a read response against what it must return and removes it from `expected`; returns
// what is wrong, or an empty string.
std::string hbm_check_read(std::unordered_map<uint32_t, HbmData>& expected, uint32_t id,
                           const HbmData& data);

// The fast model: every channel's reference controller, fed the bursts. Checks every read
// against a reference memory updated in request order (throws Error on a difference).
HbmStats run_hbm_golden(const std::vector<HbmBurst>& bursts, const HbmConfig& config,
                        uint64_t timeline_window = 0,
                        std::vector<std::vector<HbmCommand>>* commands = nullptr);

// Pattern of write data for a burst (deterministic in seed and id) and the bound that ACT
// timing puts on random traffic of `bursts_per_act` bursts per activation.
HbmData hbm_write_data(uint64_t seed, uint32_t id);
double hbm_activation_bound(const HbmTiming& t, int bursts_per_act);

}  // namespace ncore::model
