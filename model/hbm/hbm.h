#pragma once
// The HBM reference controller: HBM3 timing, the address map, and the request scheduler of one
// pseudo-channel, cycle by cycle. It is the golden model of rtl/hbm/nc_hbm_ctrl.sv (same policy,
// same command trace, cycle for cycle) and the fast HBM model for the chip-level TLM.
//
// The policies live behind interfaces beside it: the request scheduler in scheduler.h
// (batched FR-FCFS and FCFS), the refresh manager in refresh.h (per-bank and all-bank), and the
// pseudo-channel that runs them in channel.h. rtl/hbm/README.md gives the theory of operation.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/isa/isa_gen.h"

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

// The DRAM's timing in the units the HBM3 standard (JESD238) states it, so that a slower
// interface keeps the DRAM's own latencies: the burst and the column-to-column delays (BL,
// tCCD_S, tCCD_L) are clocks of the interface; the row, recovery, turnaround and refresh times
// are nanoseconds; CL and CWL are programmed in clocks, the fewest whose time covers the DRAM's
// read and write access times (nanoseconds here). tRTW follows: CL + BL + 2 - CWL. The defaults
// are HbmTiming's at tCK 0.625 ns (6.4 Gb/s a pin), so there both give the same cycles
// (HbmModel.DramTimingAtTheDefaultClockIsTheDefaultCycles).
struct HbmDramTiming {
  int bl = 2, ccd_s = 2, ccd_l = 4;                        // clocks
  double cl_ns = 12.5, cwl_ns = 6.25;                      // access times
  double rcd_rd_ns = 19.375, rcd_wr_ns = 9.375, rp_ns = 16.25, ras_ns = 28.125, rc_ns = 45;
  double rrd_s_ns = 2.5, rrd_l_ns = 3.125, faw_ns = 15;
  double wr_ns = 20.625, rtp_ns = 5.625, wtr_s_ns = 4.375, wtr_l_ns = 6.25;
  double refi_ns = 3900, rfc_ns = 350, rfcpb_ns = 160, rrefd_ns = 5;
  // The controller's timing at clock period tck_ns: each time in whole clocks, rounded up.
  HbmTiming at(double tck_ns) const;
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
  bool store_data = true;    // false: timing only, writes are not kept and reads return zeros
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

// A burst as its 32 bytes in address order (word w holds bytes 8w..8w+7, little-endian), and back.
inline std::array<uint8_t, 32> hbm_bytes(const HbmData& d) {
  std::array<uint8_t, 32> out;
  for (size_t b = 0; b < out.size(); ++b) out[b] = static_cast<uint8_t>(d[b / 8] >> (8 * (b % 8)));
  return out;
}
inline HbmData hbm_data(const uint8_t* bytes) {
  HbmData d{};
  for (size_t b = 0; b < 32; ++b) d[b / 8] |= static_cast<uint64_t>(bytes[b]) << (8 * (b % 8));
  return d;
}

// A request of one burst, as it enters a channel.
struct HbmRequest {
  bool write = false;
  uint64_t addr = 0;    // byte address, 32-byte aligned
  uint32_t id = 0;
  HbmData data{};       // write data
};

using isa::HbmCmd;  // model/isa/ncore.isa, enum hbm_cmd
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
