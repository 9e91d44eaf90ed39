#include "model/hbm/hbm.h"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/hbm/channel.h"

namespace ncore::model {
namespace {

int log2_exact(int v) {
  int b = 0;
  while ((1 << b) < v) ++b;
  return b;
}

// XOR of the w-bit chunks of x.
int fold(uint64_t x, int w) {
  if (w == 0) return 0;
  uint64_t r = 0;
  for (; x != 0; x >>= w) r ^= x & ((1ull << w) - 1);
  return static_cast<int>(r);
}

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void check_range(const char* field, long long value, long long lo, long long hi) {
  if (value < lo || value > hi)
    throw Error(fmt::format("HBM configuration: {} is {}, expected {} to {}", field, value, lo,
                            hi));
}

}  // namespace

HbmTiming HbmDramTiming::at(double tck_ns) const {
  if (!(tck_ns > 0)) throw Error(fmt::format("HBM timing: a clock period of {} ns, expected a positive one", tck_ns));
  // Whole clocks covering `ns` (a time already a whole number of clocks stays that number).
  const auto clocks = [tck_ns](double ns) {
    const double c = std::ceil(ns / tck_ns - 1e-9);
    return static_cast<int>(std::clamp(c, 1.0, 1e9));
  };
  HbmTiming t;
  t.tck_ns = tck_ns;
  t.bl = bl;
  t.ccd_s = ccd_s;
  t.ccd_l = ccd_l;
  t.cl = clocks(cl_ns);
  t.cwl = clocks(cwl_ns);
  t.rcd_rd = clocks(rcd_rd_ns);
  t.rcd_wr = clocks(rcd_wr_ns);
  t.rp = clocks(rp_ns);
  t.ras = clocks(ras_ns);
  t.rc = clocks(rc_ns);
  t.rrd_s = clocks(rrd_s_ns);
  t.rrd_l = clocks(rrd_l_ns);
  t.faw = clocks(faw_ns);
  t.wr = clocks(wr_ns);
  t.rtp = clocks(rtp_ns);
  t.wtr_s = clocks(wtr_s_ns);
  t.wtr_l = clocks(wtr_l_ns);
  t.rtw = std::max(1, t.cl + t.bl + 2 - t.cwl);
  t.refi = clocks(refi_ns);
  t.rfc = clocks(rfc_ns);
  t.rfcpb = clocks(rfcpb_ns);
  t.rrefd = clocks(rrefd_ns);
  return t;
}

void HbmConfig::validate() const {
  check_range("channels", channels, 1, 16);
  if ((channels & (channels - 1)) != 0)
    throw Error(fmt::format("HBM configuration: channels is {}, expected a power of two",
                            channels));
  check_range("rd_depth", rd_depth, 2, 256);
  check_range("wr_depth", wr_depth, 2, 256);
  check_range("wr_high", wr_high, 1, wr_depth);
  check_range("wr_low", wr_low, 0, wr_high - 1);
  check_range("rd_batch", rd_batch, 0, 4095);
  check_range("age_cap", age_cap, 1, 65535);
  check_range("max_postpone", max_postpone, 1, 8);
  check_range("max_pull_in", max_pull_in, 0, 8);
  const auto& t = timing;
  const std::pair<const char*, int> fields[] = {
      {"bl", t.bl},         {"cl", t.cl},       {"cwl", t.cwl},       {"rcd_rd", t.rcd_rd},
      {"rcd_wr", t.rcd_wr}, {"rp", t.rp},       {"ras", t.ras},       {"rc", t.rc},
      {"ccd_s", t.ccd_s},   {"ccd_l", t.ccd_l}, {"rrd_s", t.rrd_s},   {"rrd_l", t.rrd_l},
      {"faw", t.faw},       {"wr", t.wr},       {"rtp", t.rtp},       {"wtr_s", t.wtr_s},
      {"wtr_l", t.wtr_l},   {"rtw", t.rtw},     {"rfc", t.rfc},       {"rfcpb", t.rfcpb},
      {"rrefd", t.rrefd}};
  for (const auto& [name, v] : fields) check_range(name, v, 1, 4095);
  check_range("refi", t.refi, 1, 65535);
  // A forced refresh must finish within one refresh interval, or the debt would keep growing.
  const int forced_time = t.ras + t.cwl + t.bl + t.wr + t.rp + t.rc + 16;
  const int interval = refresh == HbmRefresh::kPerBank ? t.refi / kHbmBanks : t.refi;
  const int needed = forced_time;
  if (interval < needed)
    throw Error(fmt::format("HBM configuration: refi is {}, expected a refresh interval ({} "
                            "cycles per refresh) of at least {} cycles, the time a forced "
                            "refresh may take", t.refi, interval, needed));
  if (t.ccd_s < t.bl)
    throw Error(fmt::format("HBM configuration: ccd_s is {}, expected at least bl ({}): bursts "
                            "would overlap on the data bus", t.ccd_s, t.bl));
  if (t.rtw < t.cl + t.bl - t.cwl)
    throw Error(fmt::format("HBM configuration: rtw is {}, expected at least cl + bl - cwl ({}): "
                            "write data would overlap read data", t.rtw, t.cl + t.bl - t.cwl));
  if (!(t.tck_ns > 0)) throw Error("HBM configuration: tck_ns must be positive");
}

HbmAddress hbm_map(uint64_t byte_addr, int channels, bool xor_hash) {
  if (byte_addr % kHbmBurstBytes != 0 || byte_addr >= hbm_capacity_bytes(channels))
    throw Error(fmt::format("HBM address 0x{:x}: expected a 32-byte aligned address below 0x{:x}",
                            byte_addr, hbm_capacity_bytes(channels)));
  const int ch_bits = log2_exact(channels);
  uint64_t b = byte_addr / kHbmBurstBytes;
  HbmAddress a;
  a.col = static_cast<int>(b % kHbmColumns);
  b /= kHbmColumns;
  a.bank = static_cast<int>(b % kHbmBanks);
  b /= kHbmBanks;
  a.channel = static_cast<int>(b & ((1u << ch_bits) - 1));
  b >>= ch_bits;
  a.row = static_cast<int>(b);
  if (xor_hash) {
    a.bank ^= fold(a.row, 4);
    a.channel ^= fold(a.row, ch_bits);
  }
  return a;
}

uint64_t hbm_unmap(const HbmAddress& a, int channels, bool xor_hash) {
  const int ch_bits = log2_exact(channels);
  int bank = a.bank, channel = a.channel;
  if (xor_hash) {
    bank ^= fold(a.row, 4);
    channel ^= fold(a.row, ch_bits);
  }
  uint64_t b = static_cast<uint64_t>(a.row);
  b = (b << ch_bits) | static_cast<uint64_t>(channel);
  b = b * kHbmBanks + static_cast<uint64_t>(bank);
  b = b * kHbmColumns + static_cast<uint64_t>(a.col);
  return b * kHbmBurstBytes;
}

uint64_t hbm_capacity_bytes(int channels) {
  return static_cast<uint64_t>(channels) * kHbmBanks * (1ull << kHbmRowBits) * kHbmColumns *
         kHbmBurstBytes;
}

const char* hbm_cmd_name(HbmCmd c) {
  switch (c) {
    case HbmCmd::kAct: return "ACT";
    case HbmCmd::kPre: return "PRE";
    case HbmCmd::kRd: return "RD";
    case HbmCmd::kWr: return "WR";
    case HbmCmd::kRefPb: return "REFpb";
    case HbmCmd::kRefAb: return "REFab";
    case HbmCmd::kNone: break;
  }
  return "none";
}

std::string describe(const HbmCommand& c) {
  switch (c.cmd) {
    case HbmCmd::kAct: return fmt::format("ACT bank {} row {}", c.bank, c.row);
    case HbmCmd::kPre:
    case HbmCmd::kRefPb: return fmt::format("{} bank {}", hbm_cmd_name(c.cmd), c.bank);
    case HbmCmd::kRd:
    case HbmCmd::kWr:
      return fmt::format("{} bank {} row {} col {} id {}", hbm_cmd_name(c.cmd), c.bank, c.row,
                         c.col, c.id);
    case HbmCmd::kRefAb: return "REFab";
    case HbmCmd::kNone: break;
  }
  return "none";
}

HbmData hbm_write_data(uint64_t seed, uint32_t id) {
  HbmData d;
  for (int i = 0; i < 4; ++i) d[i] = splitmix(seed * 0x100000001ull + id * 4ull + i);
  return d;
}

double hbm_activation_bound(const HbmTiming& t, int bursts_per_act) {
  // ACTs are at least max(tRRD_S, tFAW / 4, tRC / banks) apart; each brings bursts_per_act
  // bursts of BL data cycles.
  const double act_interval = std::max({static_cast<double>(t.rrd_s), t.faw / 4.0,
                                        static_cast<double>(t.rc) / kHbmBanks});
  return std::min(1.0, bursts_per_act * t.bl / act_interval);
}

// ---------------------------------------------------------------------------------------------
// Traces and runs.

namespace {
// The whole of text as an unsigned number in this base.
bool parse_number(const std::string& text, int base, uint64_t& value) {
  size_t used = 0;
  try {
    value = std::stoull(text, &used, base);
  } catch (...) {
    return false;
  }
  return used == text.size();
}
}  // namespace

std::vector<HbmTraceEntry> parse_hbm_trace(std::istream& in, const std::string& source) {
  std::vector<HbmTraceEntry> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string cycle, dir, addr, bytes, extra;
    if (!(fields >> cycle)) continue;  // blank or comment
    const auto bad = [&](const std::string& what) {
      return Error(fmt::format("{}:{}: {}", source, number, what));
    };
    if (!(fields >> dir >> addr >> bytes))
      throw bad("expected '<issue_cycle> <R|W> <hex byte address> <bytes>', found too few fields");
    if (fields >> extra) throw bad(fmt::format("expected 4 fields, found more ('{}')", extra));
    HbmTraceEntry e;
    if (cycle[0] == '-' || !parse_number(cycle, 10, e.cycle))
      throw bad(fmt::format("issue cycle: expected a decimal number, found '{}'", cycle));
    if (dir != "R" && dir != "W" && dir != "r" && dir != "w")
      throw bad(fmt::format("direction: expected R or W, found '{}'", dir));
    e.write = dir == "W" || dir == "w";
    std::string hex = addr;
    if (hex.rfind("0x", 0) == 0 || hex.rfind("0X", 0) == 0) hex = hex.substr(2);
    if (hex.empty() || hex[0] == '-' || !parse_number(hex, 16, e.addr))
      throw bad(fmt::format("address: expected a hex byte address, found '{}'", addr));
    if (bytes[0] == '-' || !parse_number(bytes, 10, e.bytes))
      throw bad(fmt::format("bytes: expected a decimal number, found '{}'", bytes));
    if (e.addr % kHbmBurstBytes != 0)
      throw bad(fmt::format("address: expected a multiple of {} bytes, found 0x{:x}",
                            kHbmBurstBytes, e.addr));
    if (e.bytes == 0 || e.bytes % kHbmBurstBytes != 0)
      throw bad(fmt::format("bytes: expected a positive multiple of {}, found {}", kHbmBurstBytes,
                            e.bytes));
    e.line = number;
    if (!out.empty() && e.cycle < out.back().cycle)
      throw bad(fmt::format("issue cycle: expected cycles in order (at least {}), found {}",
                            out.back().cycle, e.cycle));
    out.push_back(e);
  }
  return out;
}

std::vector<HbmBurst> hbm_bursts(const std::vector<HbmTraceEntry>& trace, const HbmConfig& config,
                                 uint64_t seed, const std::string& source) {
  std::vector<HbmBurst> out;
  const uint64_t capacity = hbm_capacity_bytes(config.channels);
  uint64_t bursts = 0;
  for (const auto& t : trace) {
    const std::string where = t.line ? fmt::format("{}:{}", source, t.line) : source;
    // addr + bytes may not fit in 64 bits: compare without adding.
    if (t.addr >= capacity || t.bytes > capacity - t.addr)
      throw Error(fmt::format("{}: address: expected {} bytes at 0x{:x} to end within HBM (0x{:x} bytes "
                              "with {} channels), found them past its end", where, t.bytes, t.addr, capacity,
                              config.channels));
    bursts += t.bytes / kHbmBurstBytes;
    if (bursts > kMaxTraceBursts)
      throw Error(fmt::format("{}: bytes: expected a trace of at most {} bursts ({} MiB), found more", where,
                              kMaxTraceBursts, kMaxTraceBursts * kHbmBurstBytes >> 20));
  }
  out.reserve(bursts);
  uint32_t id = 0;
  for (const auto& t : trace) {
    for (uint64_t a = t.addr; a < t.addr + t.bytes; a += kHbmBurstBytes) {
      HbmBurst b;
      b.cycle = t.cycle;
      b.channel = hbm_map(a, config.channels, config.xor_hash).channel;
      b.request.write = t.write;
      b.request.addr = a;
      b.request.id = id;
      if (t.write) b.request.data = hbm_write_data(seed, id);
      ++id;
      out.push_back(b);
    }
  }
  return out;
}

HbmPlayer::HbmPlayer(const std::vector<HbmBurst>& bursts, int channel) : bursts_(bursts) {
  for (size_t i = 0; i < bursts.size(); ++i) {
    if (bursts[i].channel != channel) continue;
    const bool w = bursts[i].request.write;
    lane_[w].push_back(i);
    unaccepted_[bursts[i].request.addr][w].push_back(i);
  }
}

const HbmBurst* HbmPlayer::head(bool write, uint64_t cycle) const {
  if (next_[write] == lane_[write].size()) return nullptr;
  const size_t i = lane_[write][next_[write]];
  const HbmBurst& b = bursts_[i];
  if (b.cycle > cycle) return nullptr;
  const auto& other = unaccepted_.at(b.request.addr)[!write];
  if (!other.empty() && other.front() < i) return nullptr;
  return &b;
}

void HbmPlayer::accept(bool write) {
  const size_t i = lane_[write][next_[write]++];
  auto it = unaccepted_.find(bursts_[i].request.addr);
  it->second[write].pop_front();
  if (it->second[0].empty() && it->second[1].empty()) unaccepted_.erase(it);
}

std::unordered_map<uint32_t, HbmData> hbm_expected_reads(const std::vector<HbmBurst>& bursts) {
  std::unordered_map<uint64_t, HbmData> memory;
  std::unordered_map<uint32_t, HbmData> expected;
  for (const auto& b : bursts) {
    if (b.request.write) {
      memory[b.request.addr] = b.request.data;
    } else {
      const auto it = memory.find(b.request.addr);
      expected[b.request.id] = it == memory.end() ? HbmData{} : it->second;
    }
  }
  return expected;
}

HbmStatsBuilder::HbmStatsBuilder(const HbmConfig& config, size_t bursts, uint64_t window)
    : config_(config), window_(window) {
  latencies_.reserve(bursts);
  stats_.peak_gbps = config.peak_gbps();
}

void HbmStatsBuilder::command(const HbmCommand& c) {
  const HbmTiming& t = config_.timing;
  if (c.cmd == HbmCmd::kRd || c.cmd == HbmCmd::kWr) {
    const bool rd = c.cmd == HbmCmd::kRd;
    stats_.data_cycles += static_cast<uint64_t>(t.bl);
    window_busy_ += static_cast<uint64_t>(t.bl);
    last_beat_ = std::max(last_beat_, c.cycle + static_cast<uint64_t>((rd ? t.cl : t.cwl) + t.bl));
    (rd ? stats_.reads : stats_.writes)++;
  }
  if (c.cmd == HbmCmd::kAct) ++stats_.acts;
  if (c.cmd == HbmCmd::kRefPb || c.cmd == HbmCmd::kRefAb) ++stats_.refreshes;
}

void HbmStatsBuilder::response(uint32_t id, uint64_t cycle) {
  const auto it = accepted_at_.find(id);
  if (it == accepted_at_.end()) return;
  latencies_.push_back(cycle - it->second);
  accepted_at_.erase(it);
}

void HbmStatsBuilder::end_of_cycle(uint64_t cycle) {
  if (window_ && (cycle + 1) % window_ == 0) {
    stats_.timeline.emplace_back(cycle + 1, window_busy_);
    window_busy_ = 0;
  }
}

HbmStats HbmStatsBuilder::finish(uint64_t last_cycle, uint64_t max_age, uint64_t max_urgent_wait) {
  HbmStats s = stats_;
  s.cycles = std::max(last_beat_, last_cycle + 1);
  s.max_age_cycles = max_age;
  s.max_urgent_wait_cycles = max_urgent_wait;
  const double total = static_cast<double>(s.cycles) * config_.channels;
  s.utilization = total > 0 ? static_cast<double>(s.data_cycles) / total : 0;
  s.gbps = s.utilization * s.peak_gbps;
  const uint64_t cols = s.reads + s.writes;
  s.row_hit_rate = cols ? 1.0 - static_cast<double>(std::min(s.acts, cols)) / cols : 0;
  if (!latencies_.empty()) {
    double sum = 0;
    for (auto l : latencies_) sum += static_cast<double>(l);
    s.lat_mean_ns = sum / latencies_.size() * config_.timing.tck_ns;
    std::sort(latencies_.begin(), latencies_.end());
    const size_t p99 = std::min(latencies_.size() - 1, (latencies_.size() * 99) / 100);
    s.lat_p99_ns = static_cast<double>(latencies_[p99]) * config_.timing.tck_ns;
  }
  return s;
}

std::string hbm_check_read(std::unordered_map<uint32_t, HbmData>& expected, uint32_t id,
                           const HbmData& data) {
  const auto it = expected.find(id);
  if (it == expected.end())
    return fmt::format("a read response for id {} that was never requested (or came twice)", id);
  if (it->second != data)
    return fmt::format("read id {} returned {:016x}.. where the latest earlier write (or zero) "
                       "holds {:016x}..", id, data[0], it->second[0]);
  expected.erase(it);
  return {};
}

HbmStats run_hbm_golden(const std::vector<HbmBurst>& bursts, const HbmConfig& config,
                        uint64_t timeline_window, std::vector<std::vector<HbmCommand>>* commands) {
  const int channels = config.channels;
  std::vector<HbmChannel> ch;
  for (int c = 0; c < channels; ++c) ch.emplace_back(config);
  std::vector<HbmPlayer> players;
  for (int c = 0; c < channels; ++c) players.emplace_back(bursts, c);
  auto expected = hbm_expected_reads(bursts);
  if (commands) commands->assign(static_cast<size_t>(channels), {});
  HbmStatsBuilder stats(config, bursts.size(), timeline_window);
  size_t done = 0;
  const uint64_t watchdog = 1000000;
  uint64_t last_progress = 0;
  for (uint64_t cycle = 0;; ++cycle) {
    bool all_idle = true;
    for (int c = 0; c < channels; ++c) {
      auto& chn = ch[static_cast<size_t>(c)];
      auto& player = players[static_cast<size_t>(c)];
      // Both ports' heads are decided before either is taken (as the RTL harness drives them).
      const std::array<const HbmBurst*, 2> heads{player.head(false, cycle), player.head(true, cycle)};
      for (bool w : {false, true}) {
        const HbmBurst* b = heads[w];
        if (b == nullptr || !chn.ready(w)) continue;
        chn.offer(b->request);
        stats.accepted(b->request.id, cycle);
        player.accept(w);
        last_progress = cycle;
      }
      const auto r = chn.step();
      for (const HbmCommand* cmd : {&r.row, &r.col}) {
        if (cmd->cmd == HbmCmd::kNone) continue;
        if (commands) (*commands)[static_cast<size_t>(c)].push_back(*cmd);
        stats.command(*cmd);
        if (cmd->cmd == HbmCmd::kRd || cmd->cmd == HbmCmd::kWr) {
          ++done;
          last_progress = cycle;
        }
      }
      if (r.has_response) {
        const std::string bad = hbm_check_read(expected, r.response.id, r.response.data);
        if (!bad.empty()) throw Error(fmt::format("HBM channel {}: cycle {}: {}", c, cycle, bad));
        stats.response(r.response.id, cycle);
      }
      if (!player.done() || !chn.idle()) all_idle = false;
    }
    stats.end_of_cycle(cycle);
    if (all_idle && done == bursts.size()) {
      uint64_t age = 0, urgent_wait = 0;
      for (const auto& c : ch) {
        age = std::max(age, c.max_age());
        urgent_wait = std::max(urgent_wait, c.max_urgent_wait());
      }
      if (!expected.empty())
        throw Error(fmt::format("HBM golden model: {} reads never returned data", expected.size()));
      return stats.finish(cycle, age, urgent_wait);
    }
    if (cycle - last_progress > watchdog)
      throw Error(fmt::format("HBM golden model: no progress for {} cycles at cycle {} ({} of {} "
                              "bursts served)", watchdog, cycle, done, bursts.size()));
  }
}

}  // namespace ncore::model
