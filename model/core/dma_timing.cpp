#include "model/core/dma_timing.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>

namespace ncore::model {

namespace {
constexpr double kEps = 1e-7;
}  // namespace

HbmDmaTransfers::HbmDmaTransfers(const HbmDmaConfig& c)
    : cfg_(c), engines_(static_cast<size_t>(c.engines + c.fetch_engines)), channels_(static_cast<size_t>(c.hbm.channels)),
      capacity_(hbm_capacity_bytes(c.hbm.channels)) {
  for (Channel& ch : channels_) {
    ch.banks.resize(kHbmBanks);
    count_closed_unrefreshed(ch);
  }
  index_writes();
}

std::array<uint64_t, kHbmBanks> HbmDmaTransfers::demand_at(size_t channel) const {
  std::array<uint64_t, kHbmBanks> at;
  at.fill(kNoEvent);
  for (const Flow& f : flows_)
    if (f.kind != Kind::kWrite && static_cast<size_t>(f.channel) == channel)
      at[static_cast<size_t>(f.bank)] = std::min(at[static_cast<size_t>(f.bank)], f.arrive);
  for (size_t i = 0; i < engines_.size(); ++i) {  // the next run of a stream waiting for room, once it asks
    const Engine& e = engines_[i];
    if (e.active && !e.write && e.next_run < e.runs.size() && e.end == kNoEvent &&
        static_cast<size_t>(e.runs[e.next_run].channel) == channel) {
      uint64_t& bank = at[static_cast<size_t>(e.runs[e.next_run].bank)];
      bank = std::min(bank, arrival(static_cast<int>(i), e.next_run));
    }
  }
  return at;
}

void HbmDmaTransfers::count_closed_unrefreshed(Channel& ch) {
  ch.closed_unrefreshed = 0;
  for (const Bank& b : ch.banks) ch.closed_unrefreshed += !b.refreshed && b.row < 0;
}

void HbmDmaTransfers::refresh_until(size_t channel, uint64_t now) {
  Channel& ch = channels_[channel];
  // After reset the refresh manager pulls in max_pull_in refreshes, tRREFD apart; then one is
  // owed every tREFI / banks.
  const HbmTiming& t = cfg_.hbm.timing;
  const int pulled_in = cfg_.hbm.max_pull_in;
  const uint64_t interval = static_cast<uint64_t>(t.refi / kHbmBanks);
  const auto slot_time = [&](int k) {
    return k < pulled_in ? static_cast<uint64_t>(t.rrefd) * static_cast<uint64_t>(k)
                         : interval * static_cast<uint64_t>(k - pulled_in + 1);
  };
  // Each opportunity refreshes the best idle, closed bank not refreshed this round, if any.
  std::array<uint64_t, kHbmBanks> demand{};
  bool demand_known = false;
  const auto idle = [&](const Bank& k, uint64_t at) { return !k.refreshed && k.row < 0 && k.free_at <= at; };
  const auto refresh_one = [&](uint64_t at) {
    // A bank never closes its row again: a channel whose banks are all open or refreshed this
    // round (the round cannot end) has nothing to refresh, and costs nothing to ask.
    if (ch.closed_unrefreshed == 0) return false;
    if (std::none_of(ch.banks.begin(), ch.banks.end(), [&](const Bank& k) { return idle(k, at); })) return false;
    if (!demand_known) demand = demand_at(channel), demand_known = true;
    int best = -1;
    for (int b = 0; b < kHbmBanks; ++b) {
      const Bank& k = ch.banks[static_cast<size_t>(b)];
      if (!idle(k, at) || demand[static_cast<size_t>(b)] <= at) continue;
      if (best < 0 || k.last_use > ch.banks[static_cast<size_t>(best)].last_use) best = b;
    }
    if (best < 0) return false;
    Bank& k = ch.banks[static_cast<size_t>(best)];
    k.refreshed = true;
    k.free_at = at + static_cast<uint64_t>(t.rfcpb);
    bool round = true;
    for (const Bank& b : ch.banks) round &= b.refreshed;
    if (round)
      for (Bank& b : ch.banks) b.refreshed = false;
    count_closed_unrefreshed(ch);
    return true;
  };
  for (; ch.refresh_owed > 0 && refresh_one(now); --ch.refresh_owed) {
  }
  for (; slot_time(ch.refresh_slots) < now; ++ch.refresh_slots)
    if (!refresh_one(slot_time(ch.refresh_slots))) ++ch.refresh_owed;
}

void HbmDmaTransfers::begin(int engine, const DmaDescriptor& d, uint64_t now) {
  Engine& e = engines_[static_cast<size_t>(engine)];
  e = Engine{};
  e.active = true;
  e.write = d.to_hbm;
  e.begin_at = now + cfg_.issue_lead_cycles;
  e.window = static_cast<double>(cfg_.window);
  uint64_t bursts = 0;
  if (d.transpose) {
    // A transpose reads one 16-row block at a time (its engine's buffer), each block a run of
    // its own, and its last block's drain (2 + 16 cycles) follows its last read.
    e.window = kDmaTransposeRows;
    e.tail_extra = kTransposeDrainCycles;
    for (const auto& [h, s] : dma_bursts(d)) {
      const HbmAddress a = hbm_map(h % capacity_, cfg_.hbm.channels, cfg_.hbm.xor_hash);
      Run* last = e.runs.empty() ? nullptr : &e.runs.back();
      if (last && bursts % kDmaTransposeRows != 0 && last->channel == a.channel && last->bank == a.bank &&
          last->row == a.row)
        last->bursts += 1;
      else
        e.runs.push_back({a.channel, a.bank, a.row, 1, bursts});
      ++bursts;
    }
  }
  // Every burst of an aligned KiB (a DRAM row's 32 columns) maps to one channel, bank and row.
  constexpr uint64_t kColumnsBytes = kHbmColumns * kHbmBurstBytes;
  uint64_t mapped_block = ~uint64_t{0};
  HbmAddress a;
  for (uint64_t p = 0; p < (d.transpose ? 0 : d.count2); ++p)
    for (uint64_t r = 0; r < d.count1; ++r) {
      const uint64_t row = d.hbm_addr + p * d.hbm_stride2 + r * d.hbm_stride1;
      for (uint64_t off = 0; off < d.bytes; off += kDmaBurstBytes, ++bursts) {
        const uint64_t addr = (row + off) % capacity_;
        if (addr / kColumnsBytes != mapped_block) {
          mapped_block = addr / kColumnsBytes;
          a = hbm_map(addr, cfg_.hbm.channels, cfg_.hbm.xor_hash);
        }
        if (!e.runs.empty()) {
          Run& last = e.runs.back();
          if (last.channel == a.channel && last.bank == a.bank && last.row == a.row) {
            last.bursts += 1;
            continue;
          }
        }
        e.runs.push_back({a.channel, a.bank, a.row, 1, bursts});
      }
    }
  // Refreshes due before its first request reaches the channel pass that bank by only from then.
  if (!e.runs.empty()) refresh_until(static_cast<size_t>(e.runs[0].channel), e.begin_at);
  settle(now);
}

bool HbmDmaTransfers::done(int engine) const {
  const Engine& e = engines_[static_cast<size_t>(engine)];
  return e.active && e.end != kNoEvent && e.end <= now_;
}

void HbmDmaTransfers::retire(int engine) { engines_[static_cast<size_t>(engine)].active = false; }

bool HbmDmaTransfers::busy() const {
  for (const Engine& e : engines_)
    if (e.active && (e.end == kNoEvent || e.end > now_)) return true;
  return false;
}

int HbmDmaTransfers::reading_on_port(int port) const {
  int sharing = 0;
  for (size_t k = 0; k < engines_.size(); ++k)
    sharing += port_of(static_cast<int>(k)) == port && engines_[k].active && !engines_[k].write &&
               engines_[k].end == kNoEvent;
  return sharing;
}

uint64_t HbmDmaTransfers::arrival(int engine, size_t run, int sharing) const {
  // The port sends one burst a cycle, shared round-robin by its engines that are reading now.
  if (sharing < 0) sharing = reading_on_port(port_of(engine));
  const Engine& e = engines_[static_cast<size_t>(engine)];
  return e.begin_at + e.runs[run].first * static_cast<uint64_t>(std::max(sharing, 1));
}

void HbmDmaTransfers::index_writes() {
  writer_.assign(engines_.size(), -1);
  fed_drain_.assign(engines_.size(), -1);
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    const size_t e = static_cast<size_t>(f.engine);
    if (f.kind == Kind::kWrite && writer_[e] < 0) writer_[e] = static_cast<int>(i);
    if (f.kind == Kind::kDrain && f.feeding && fed_drain_[e] < 0) fed_drain_[e] = static_cast<int>(i);
  }
}

HbmDmaTransfers::Flow* HbmDmaTransfers::drain_of(const Flow& write) {
  const int i = fed_drain_[static_cast<size_t>(write.engine)];
  if (i < 0) return nullptr;
  Flow& d = flows_[static_cast<size_t>(i)];
  return d.feeding && d.run == write.run ? &d : nullptr;
}

const HbmDmaTransfers::Flow* HbmDmaTransfers::write_of(const Flow& drain) const {
  if (!drain.feeding) return nullptr;
  const int i = writer_[static_cast<size_t>(drain.engine)];
  if (i < 0) return nullptr;
  const Flow& w = flows_[static_cast<size_t>(i)];
  return w.run == drain.run ? &w : nullptr;
}

bool HbmDmaTransfers::admit(int engine, uint64_t now) {
  Engine& e = engines_[static_cast<size_t>(engine)];
  if (!e.active || e.end != kNoEvent) return false;
  // Writes go out in order through one staging FIFO: one run at a time. Reads keep `window`
  // bursts queued.
  const double limit = e.write ? kEps : e.window;
  if (e.next_run < e.runs.size() && e.queued < limit) {
    const Run& run = e.runs[e.next_run];
    Flow f;
    f.kind = e.write ? Kind::kWrite : Kind::kRead;
    f.engine = engine;
    f.run = e.next_run++;
    f.channel = run.channel, f.bank = run.bank, f.row = run.row;
    f.left = run.bursts;
    f.arrive = f.ready = std::max(now, e.write ? e.begin_at : arrival(engine, f.run));
    f.row_open = e.write;
    e.queued += f.left;
    flows_.push_back(f);
    if (e.write) {  // the channel's side of it: writing what the write queue receives
      Flow d = f;
      d.kind = Kind::kDrain;
      d.left = 0;
      d.feeding = true;
      d.row_open = false;
      flows_.push_back(d);
    }
    return true;
  }
  if (e.queued < kEps && e.next_run == e.runs.size())
    e.end = std::max(now, e.begin_at) + (e.write ? cfg_.write_tail_cycles : cfg_.read_tail_cycles) + e.tail_extra;
  return false;
}

void HbmDmaTransfers::open_rows(uint64_t now) {
  const HbmTiming& t = cfg_.hbm.timing;
  std::vector<int>& sharing = scratch_.sharing;  // per port: its engines reading now
  sharing.assign(static_cast<size_t>(ports()), 0);  // one pass over the engines, not one per port
  for (size_t k = 0; k < engines_.size(); ++k)
    if (engines_[k].active && !engines_[k].write && engines_[k].end == kNoEvent)
      ++sharing[static_cast<size_t>(port_of(static_cast<int>(k)))];
  // The ports and the interconnect take requests round-robin, so every reading engine has a
  // request in its channel's read queue: an engine's first run enters whether or not the queue
  // is full, its later ones when there is room.
  std::vector<char>& has_entered = scratch_.has_entered;
  has_entered.assign(engines_.size(), 0);
  for (const Flow& f : flows_)
    if (f.kind == Kind::kRead && f.entered && f.left > kEps) has_entered[static_cast<size_t>(f.engine)] = 1;
  for (Flow& f : flows_) {
    if (f.kind == Kind::kWrite || f.row_open) continue;
    if (f.kind == Kind::kRead) {
      if (f.arrive > now) {  // not there yet: engines joining its port since delay it
        f.arrive = f.ready =
            std::max(now + 1, arrival(f.engine, f.run, sharing[static_cast<size_t>(port_of(f.engine))]));
        continue;
      }
      if (!f.entered) {  // into the channel's read queue, when it has room
        Channel& ch = channels_[static_cast<size_t>(f.channel)];
        char& first = has_entered[static_cast<size_t>(f.engine)];
        if (ch.reads >= cfg_.hbm.rd_depth && first) continue;
        ch.reads += f.left;
        f.entered = true;
        first = 1;
      }
    } else if (f.left <= kEps) {
      continue;  // a drain with nothing queued yet asks for no row
    }
    Bank& bank = channels_[static_cast<size_t>(f.channel)].banks[static_cast<size_t>(f.bank)];
    if (bank.row == f.row) {
      f.row_open = true;
      f.ready = std::max(f.ready, bank.free_at);
      continue;
    }
    // Another row is open: it closes once no flow of the direction the channel serves wants
    // it any more (FR-FCFS serves hits first; the other direction's rows do not hold a bank).
    const bool write_mode = channels_[static_cast<size_t>(f.channel)].write_mode;
    if ((f.kind == Kind::kDrain) != write_mode) continue;
    bool wanted = false;
    if (bank.row >= 0)
      for (const Flow& g : flows_)
        if (&g != &f && g.row_open && (g.kind == Kind::kDrain) == write_mode && g.kind != Kind::kWrite &&
            g.channel == f.channel && g.bank == f.bank && g.row == bank.row)
          wanted = true;
    if (wanted) continue;
    const uint64_t from = std::max(now, bank.free_at);
    const int rcd = f.kind == Kind::kDrain ? t.rcd_wr : t.rcd_rd;
    bank.free_at = from + static_cast<uint64_t>((bank.row >= 0 ? t.rp : 0) + rcd);
    const bool was_closed = bank.row < 0;
    bank.row = f.row;
    if (was_closed) count_closed_unrefreshed(channels_[static_cast<size_t>(f.channel)]);
    for (Flow& g : flows_)  // flows on the row just closed must open it again
      if (g.kind != Kind::kWrite && g.channel == f.channel && g.bank == f.bank && g.row != f.row) g.row_open = false;
    f.row_open = true;
    f.ready = std::max(f.ready, bank.free_at);
  }
}

void HbmDmaTransfers::share_reads_fairly(const std::vector<size_t>& reads, double channel_rate, double group_rate,
                                         std::vector<double>& bound) {
  // The reads a channel's queue holds come from its engines in turn, and the scheduler serves
  // the oldest: each flow gets an equal share of the channel (max-min fair), less where its
  // bank group (tCCD_L) cannot give that much, which leaves the rest to the other groups.
  // Behind a full queue (more entered than it holds) a crowded group serves its flows oldest
  // first instead: each may take the whole group, and allocate() hands it out in the order
  // the flows entered. There the RTL's ports hold their engines while the queue has no room,
  // and the engines keep the stagger their runs entered with; equal shares would end every
  // run of the group at once, in step into the next crowded group (layernorm.s: 1.119 of the
  // RTL's cycles with equal shares, 0.978 oldest first). A queue with room for all of them
  // interleaves them, as equal shares do (Core.DmaTimingSharesAChannelsReadsFairly).
  const auto group_of = [&](const Flow& f) {
    return static_cast<size_t>(f.channel) * kHbmBankGroups + static_cast<size_t>(f.bank % kHbmBankGroups);
  };
  std::vector<double>& rate = scratch_.group_share;  // per (channel, bank group): each flow's rate
  std::vector<int>& in_group = scratch_.group_flows;  // per (channel, bank group): its read flows
  in_group.assign(channels_.size() * kHbmBankGroups, 0);
  rate.assign(in_group.size(), 0.0);
  for (const size_t i : reads) ++in_group[group_of(flows_[i])];
  for (size_t c = 0; c < channels_.size(); ++c) {
    int* unfixed = &in_group[c * kHbmBankGroups];  // flows whose share is still open
    double* group = &rate[c * kHbmBankGroups];
    int open = 0;
    for (int g = 0; g < kHbmBankGroups; ++g) open += unfixed[g];
    double channel_left = channel_rate;
    const bool full = channels_[c].reads > cfg_.hbm.rd_depth + kEps;
    for (bool group_bound = true; group_bound && open > 0;) {
      const double share = channel_left / open;
      group_bound = false;  // a group that cannot give its flows that share fixes them at its rate
      for (int g = 0; g < kHbmBankGroups; ++g) {
        if (unfixed[g] == 0 || unfixed[g] * share <= group_rate + 1e-12) continue;
        group[g] = full ? group_rate : group_rate / unfixed[g];
        channel_left -= group_rate;
        open -= unfixed[g];
        unfixed[g] = 0;
        group_bound = true;
      }
      if (!group_bound)
        for (int g = 0; g < kHbmBankGroups; ++g)
          if (unfixed[g] > 0) group[g] = share;
    }
  }
  for (const size_t i : reads) bound[i] = rate[group_of(flows_[i])];
}

// Head-of-line blocking (issue 50). A DMA port holds its request until the channel takes it,
// so a port whose engine has a run waiting for room in a full read queue sends nothing else
// meanwhile: that engine's bursts go out only as the queue frees slots for the port (in turn
// with the other ports that read there), and its other engines' bursts only in turn between
// them. Each engine of the port then moves no faster than the port's share of that channel.
// A queue that only its own port fills holds nothing back that the port's share does not
// already (long_rows: 0.823 of the RTL's cycles without this, 1.005 with it).
bool HbmDmaTransfers::pace_held_ports(double channel_rate, std::vector<double>& pace) {
  const size_t nch = channels_.size();
  std::vector<uint32_t>& asking = scratch_.asking;    // per channel: the ports reading there (bits)
  std::vector<uint32_t>& waiting = scratch_.waiting;  // per channel: the ports waiting for room
  asking.assign(nch, 0);
  waiting.assign(nch, 0);
  bool any = false;
  for (const Flow& f : flows_) {
    if (f.kind != Kind::kRead || f.left <= kEps || f.arrive > now_) continue;
    const size_t c = static_cast<size_t>(f.channel);
    asking[c] |= 1u << port_of(f.engine);
    if (!f.entered) waiting[c] |= 1u << port_of(f.engine), any = true;
  }
  pace.assign(static_cast<size_t>(ports()), 1e30);
  if (!any) return false;
  bool held = false;
  for (size_t c = 0; c < nch; ++c) {
    const auto ports_asking = static_cast<int>(std::bitset<32>(asking[c]).count());
    if (!waiting[c] || ports_asking < 2) continue;
    for (size_t p = 0; p < pace.size(); ++p)
      if (waiting[c] >> p & 1) pace[p] = std::min(pace[p], channel_rate / ports_asking), held = true;
  }
  return held;
}

void HbmDmaTransfers::allocate() {
  const double channel_rate = 1.0 / cfg_.hbm.timing.bl, group_rate = 1.0 / cfg_.hbm.timing.ccd_l;
  const size_t nch = channels_.size(), nports = static_cast<size_t>(ports());
  // Resources: channel c (reads and writes to DRAM), bank group (c, g), read port, write port,
  // a channel's write queue taking one write a cycle, and none (a drain uses no port).
  const size_t r_channel = 0, r_group = nch, r_rport = r_group + nch * kHbmBankGroups, r_wport = r_rport + nports,
               r_wtake = r_wport + nports, r_none = r_wtake + nch;
  std::vector<double>& cap = scratch_.cap;
  cap.assign(r_none + 1, 0.0);
  for (size_t c = 0; c < nch; ++c) cap[r_channel + c] = channel_rate;
  for (size_t g = 0; g < nch * kHbmBankGroups; ++g) cap[r_group + g] = group_rate;
  for (size_t p = 0; p < nports; ++p) cap[r_rport + p] = cap[r_wport + p] = 1.0;
  for (size_t c = 0; c < nch; ++c) cap[r_wtake + c] = 1.0;
  cap[r_none] = 1e30;

  // A channel writes its queue to DRAM in write mode only (settle() sets the direction).
  std::vector<std::array<size_t, 3>>& uses = scratch_.uses;
  uses.assign(flows_.size(), {});
  // The flows that can move now, reads, then writes, then drains (each in the order they
  // entered): the order they take their resources in.
  std::array<std::vector<size_t>, 3>& by_kind = scratch_.by_kind;
  for (auto& v : by_kind) v.clear();
  for (size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    f.rate = 0;
    const size_t c = static_cast<size_t>(f.channel);
    const size_t group = r_group + c * kHbmBankGroups + static_cast<size_t>(f.bank % kHbmBankGroups);
    const size_t port = static_cast<size_t>(port_of(f.engine));
    switch (f.kind) {
      case Kind::kRead:
        if (f.left <= kEps || f.ready > now_ || !f.row_open || channels_[c].write_mode) continue;
        uses[i] = {r_rport + port, r_channel + c, group};
        break;
      case Kind::kWrite:
        if (f.left <= kEps || f.ready > now_) continue;
        uses[i] = {r_wport + port, r_wtake + c, r_none};
        break;
      case Kind::kDrain:
        if (!channels_[c].write_mode || f.ready > now_ || !f.row_open || (f.left <= kEps && !f.feeding)) continue;
        uses[i] = {r_none, r_channel + c, group};
        break;
    }
    by_kind[static_cast<size_t>(f.kind)].push_back(i);
  }
  std::vector<size_t>& live = scratch_.order;
  live.clear();
  for (const auto& v : by_kind) live.insert(live.end(), v.begin(), v.end());
  // Each flow, in the order it entered, takes what its channel and bank group have left, a
  // read no more than its fair share of them (share_reads_fairly). Ports serve their engines
  // round-robin: an engine gets an equal share of its port (water-filling), and a flow held
  // back by its port leaves its channel's share to younger flows; a few passes settle it.
  std::vector<double>& bound = scratch_.bound;
  bound.assign(flows_.size(), 1e30);
  share_reads_fairly(by_kind[static_cast<size_t>(Kind::kRead)], channel_rate, group_rate, bound);
  std::vector<double>& pace = scratch_.pace;
  const bool held = pace_held_ports(channel_rate, pace);
  std::vector<double>& initial = scratch_.initial;
  initial = cap;
  for (int pass = 0; pass < 3; ++pass) {
    cap = initial;
    // Writes are handed over before their drains are allocated (a drain of an empty queue
    // writes only what arrives).
    for (const size_t i : live) {
      Flow& f = flows_[i];
      f.rate = 0;
      double rate = bound[i];
      if (f.kind == Kind::kDrain && f.left <= kEps) {  // nothing queued: it writes what arrives
        const Flow* w = write_of(f);
        rate = std::min(rate, w ? w->rate : 0.0);
      }
      for (int k = 1; k < 3; ++k) rate = std::min(rate, cap[uses[i][static_cast<size_t>(k)]]);
      if (rate <= 1e-12) continue;
      f.rate = rate;
      for (int k = 1; k < 3; ++k) cap[uses[i][static_cast<size_t>(k)]] -= rate;
    }
    // Each port (uses[i][0]): its engines' demands, water-filled to the port's one burst.
    bool changed = false;
    const size_t ne = engines_.size();
    std::vector<double>& demand = scratch_.demand;  // [port resource - r_rport][engine]
    std::vector<double>& port_total = scratch_.port_total;  // per port resource: its engines' demands
    demand.assign(2 * nports * ne, 0.0);
    port_total.assign(2 * nports, 0.0);
    for (const size_t i : live)
      if (uses[i][0] < r_wtake) {
        const size_t p = uses[i][0] - r_rport;
        demand[p * ne + static_cast<size_t>(flows_[i].engine)] += flows_[i].rate;
        port_total[p] += flows_[i].rate;
      }
    std::vector<double>& share = scratch_.share;  // per port resource: the fair share (1e30: no limit)
    share.assign(2 * nports, 1e30);
    for (size_t p = 0; p < 2 * nports; ++p) {
      const double* d = &demand[p * ne];
      if (port_total[p] <= 1.0 + 1e-9) continue;
      std::vector<double>& sorted = scratch_.sorted;
      sorted.clear();
      for (size_t e = 0; e < ne; ++e)
        if (d[e] > 1e-12) sorted.push_back(d[e]);
      std::sort(sorted.begin(), sorted.end());
      double left = 1.0, s = 0;  // the fair share s: sum(min(d, s)) = 1
      for (size_t k = 0; k < sorted.size(); ++k) {
        s = left / static_cast<double>(sorted.size() - k);
        if (sorted[k] >= s) break;
        left -= sorted[k];
      }
      share[p] = s;
    }
    for (const size_t i : live) {
      if (uses[i][0] >= r_wtake) continue;
      const size_t p = uses[i][0] - r_rport;
      const double d = demand[p * ne + static_cast<size_t>(flows_[i].engine)];
      if (d <= share[p] + 1e-12) continue;
      const double limited = flows_[i].rate * share[p] / d;
      if (limited < bound[i] - 1e-12) bound[i] = limited, changed = true;
    }
    if (held)  // each engine of a held port at most its pace
      for (const size_t i : by_kind[static_cast<size_t>(Kind::kRead)]) {
        const size_t p = static_cast<size_t>(port_of(flows_[i].engine));
        const double d = demand[p * ne + static_cast<size_t>(flows_[i].engine)];
        if (flows_[i].rate <= 1e-12 || d <= pace[p] + 1e-12) continue;
        const double limited = flows_[i].rate * pace[p] / d;
        if (limited < bound[i] - 1e-12) bound[i] = limited, changed = true;
      }
    if (!changed) break;
  }
  for (const size_t i : live) flows_[i].rate = std::min(flows_[i].rate, bound[i]);
  // A full write queue takes writes only as fast as it drains.
  for (size_t c = 0; c < nch; ++c) {
    if (channels_[c].writes < cfg_.hbm.wr_depth - kEps) continue;
    double out = 0, in = 0;
    for (const Flow& f : flows_) {
      if (static_cast<size_t>(f.channel) != c) continue;
      if (f.kind == Kind::kDrain) out += f.rate;
      if (f.kind == Kind::kWrite) in += f.rate;
    }
    if (in <= out) continue;
    for (Flow& f : flows_)
      if (f.kind == Kind::kWrite && static_cast<size_t>(f.channel) == c) f.rate *= out / in;
  }
}

void HbmDmaTransfers::settle(uint64_t now) {
  now_ = std::max(now_, now);
  for (size_t c = 0; c < channels_.size(); ++c) refresh_until(c, now + 1);
  // Finished flows leave (a drain once its write has handed over everything); a bank keeps its
  // row open.
  for (Flow& f : flows_)
    if (f.kind == Kind::kDrain && f.feeding) {
      const Flow* w = write_of(f);
      f.feeding = w && w->left > kEps;
    }
  flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                              [](const Flow& f) { return f.left <= kEps && !(f.kind == Kind::kDrain && f.feeding); }),
               flows_.end());
  // The ports interleave their engines' bursts: runs enter the windows one per engine in turn.
  // An engine that admits nothing now admits nothing more in this settle (only its own
  // admissions change what it may admit), so each round asks only the engines that admitted.
  std::vector<int>& admitting = scratch_.admitting;
  admitting.clear();
  for (size_t e = 0; e < engines_.size(); ++e)
    if (engines_[e].active && engines_[e].end == kNoEvent) admitting.push_back(static_cast<int>(e));
  while (!admitting.empty())
    admitting.erase(std::remove_if(admitting.begin(), admitting.end(), [&](int e) { return !admit(e, now); }),
                    admitting.end());
  index_writes();
  // The batched FR-FCFS scheduler's direction: writes once the high watermark is reached or no
  // read is queued; back to reads when the queue is empty, or reads wait and the low
  // watermark is reached.
  std::vector<char>& reads_queued = scratch_.reads_queued;
  reads_queued.assign(channels_.size(), 0);
  for (const Flow& f : flows_)
    if (f.kind == Kind::kRead && f.entered && f.left > kEps) reads_queued[static_cast<size_t>(f.channel)] = 1;
  for (size_t c = 0; c < channels_.size(); ++c) {
    Channel& ch = channels_[c];
    const bool reads = reads_queued[c];
    if (!ch.write_mode)
      ch.write_mode = ch.writes > kEps && (ch.writes >= cfg_.hbm.wr_high - kEps || !reads);
    else
      ch.write_mode = !(ch.writes <= kEps || (reads && ch.writes <= cfg_.hbm.wr_low + kEps));
  }
  open_rows(now);
  allocate();
}

uint64_t HbmDmaTransfers::next_event(uint64_t now) const {
  uint64_t next = kNoEvent;
  const auto at = [&](double cycles) {
    next = std::min(next, now + std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(std::max(cycles, 0.0) - 1e-9))));
  };
  for (const Engine& e : engines_) {
    if (!e.active) continue;
    if (e.end != kNoEvent && e.end > now) next = std::min(next, e.end);
    if (e.begin_at > now) next = std::min(next, e.begin_at);
  }
  const size_t nch = channels_.size();
  Scratch& k = const_scratch_;
  std::vector<double>&engine_rate = k.engine_rate, &read_rate = k.read_rate, &write_in = k.write_in,
                      &write_out = k.write_out;
  engine_rate.assign(engines_.size(), 0.0);
  read_rate.assign(nch, 0.0);
  write_in.assign(nch, 0.0);
  write_out.assign(nch, 0.0);
  // One pass over the flows: their own events, and what the channels' events need.
  std::vector<char>&reads_queued = k.reads_queued, &entry_waits = k.entry_waits;
  reads_queued.assign(nch, 0);
  entry_waits.assign(nch, 0);  // an arrived read run waits for room in the channel's read queue
  bool waiting = false;  // engines or drains still to move anything
  for (const Flow& f : flows_) {
    const size_t c = static_cast<size_t>(f.channel);
    if (f.kind == Kind::kDrain) {  // its row opens, or its queued bursts run out
      waiting = true;
      write_out[c] += f.rate;
      if (f.ready > now && f.left > kEps) next = std::min(next, f.ready);
      const Flow* w = write_of(f);
      const double in = w ? w->rate : 0.0;
      if (f.rate > in + kEps && f.left > kEps) at(f.left / (f.rate - in));
      continue;
    }
    if (f.ready > now) next = std::min(next, f.ready);
    else if (f.rate > 0) at(f.left / f.rate);
    engine_rate[static_cast<size_t>(f.engine)] += f.rate;
    (f.kind == Kind::kRead ? read_rate : write_in)[c] += f.rate;
    if (f.kind == Kind::kRead) {
      if (f.entered && f.left > kEps) reads_queued[c] = 1;
      if (!f.entered && f.arrive <= now) entry_waits[c] = 1;
    }
  }
  for (const Engine& e : engines_) waiting |= e.active && e.end == kNoEvent;
  if (!waiting) return next;
  // The next run enters a window once enough of the queued ones are served (the engine's own
  // window); an arrived run enters its channel's read queue once it has room.
  for (size_t i = 0; i < engines_.size(); ++i) {
    const Engine& e = engines_[i];
    if (!e.active || e.write || e.next_run >= e.runs.size()) continue;
    if (e.queued >= e.window && engine_rate[i] > 0) at((e.queued - e.window) / engine_rate[i] + kEps);
  }
  for (size_t c = 0; c < nch; ++c)
    if (entry_waits[c] && read_rate[c] > 0) at((channels_[c].reads - cfg_.hbm.rd_depth) / read_rate[c] + kEps);
  // Write batches begin and end at the watermarks (a batch ends at the low one only while
  // reads wait).
  for (size_t c = 0; c < nch; ++c) {
    const Channel& ch = channels_[c];
    const double net = write_in[c] - write_out[c];
    if (ch.write_mode && reads_queued[c] && net < -kEps && ch.writes > cfg_.hbm.wr_low) at((ch.writes - cfg_.hbm.wr_low) / -net);
    else if (!ch.write_mode && net > kEps && ch.writes < cfg_.hbm.wr_high) at((cfg_.hbm.wr_high - ch.writes) / net);
  }
  return next;
}

void HbmDmaTransfers::advance(uint64_t now, uint64_t to) {
  if (to <= now) return;
  const double dt = static_cast<double>(to - now);
  // Writes handed over feed their drains first, so a drain never writes what has not arrived.
  for (Flow& f : flows_) {
    if (f.kind != Kind::kWrite || f.rate <= 0) continue;
    const double moved = std::min(f.left, f.rate * dt);
    f.left -= moved;
    if (f.left < kEps) f.left = 0;
    Engine& e = engines_[static_cast<size_t>(f.engine)];
    e.queued = std::max(0.0, e.queued - moved);
    channels_[static_cast<size_t>(f.channel)].writes += moved;
    if (Flow* d = drain_of(f)) d->left += moved;
  }
  for (Flow& f : flows_) {
    if (f.kind == Kind::kWrite || f.rate <= 0) continue;
    const double moved = std::min(f.left, f.rate * dt);
    f.left -= moved;
    if (f.left < kEps) f.left = 0;
    Channel& ch = channels_[static_cast<size_t>(f.channel)];
    ch.banks[static_cast<size_t>(f.bank)].last_use = to;
    if (f.kind == Kind::kDrain) {
      ch.writes = std::max(0.0, ch.writes - moved);
    } else {
      Engine& e = engines_[static_cast<size_t>(f.engine)];
      e.queued = std::max(0.0, e.queued - moved);
      ch.reads = std::max(0.0, ch.reads - moved);
    }
  }
  now_ = to;
  settle(to);
}

}  // namespace ncore::model
