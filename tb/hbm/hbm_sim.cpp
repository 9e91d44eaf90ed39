#include "tb/hbm/hbm_sim.h"

#include <deque>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <verilated.h>

#include "Vnc_hbm.h"
#include "model/common/error.h"
#include "tb/common/bench.h"
#include "tb/common/wide.h"
#include "model/common/numerics.h"

namespace ncore::tb {
namespace {

using model::HbmBurst;
using model::HbmCmd;
using model::HbmCommand;
using model::HbmConfig;
using model::HbmData;

constexpr int kLog2[] = {0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4};

void configure(Vnc_hbm& top, const HbmConfig& c) {
  const auto& t = c.timing;
  top.cfg_bl_i = t.bl;
  top.cfg_cl_i = t.cl;
  top.cfg_cwl_i = t.cwl;
  top.cfg_rcd_rd_i = t.rcd_rd;
  top.cfg_rcd_wr_i = t.rcd_wr;
  top.cfg_rp_i = t.rp;
  top.cfg_ras_i = t.ras;
  top.cfg_rc_i = t.rc;
  top.cfg_ccd_s_i = t.ccd_s;
  top.cfg_ccd_l_i = t.ccd_l;
  top.cfg_rrd_s_i = t.rrd_s;
  top.cfg_rrd_l_i = t.rrd_l;
  top.cfg_faw_i = t.faw;
  top.cfg_wr_i = t.wr;
  top.cfg_rtp_i = t.rtp;
  top.cfg_wtr_s_i = t.wtr_s;
  top.cfg_wtr_l_i = t.wtr_l;
  top.cfg_rtw_i = t.rtw;
  top.cfg_rfc_i = t.rfc;
  top.cfg_rfcpb_i = t.rfcpb;
  top.cfg_rrefd_i = t.rrefd;
  top.cfg_refi_i = t.refi;
  top.cfg_fcfs_i = c.sched == model::HbmSched::kFcfs;
  top.cfg_all_bank_ref_i = c.refresh == model::HbmRefresh::kAllBank;
  top.cfg_xor_hash_i = c.xor_hash;
  top.cfg_ch_bits_i = kLog2[c.channels];
  top.cfg_wr_high_i = c.wr_high;
  top.cfg_wr_low_i = c.wr_low;
  top.cfg_rd_batch_i = c.rd_batch;
  top.cfg_age_cap_i = c.age_cap;
  top.cfg_max_postpone_i = c.max_postpone;
  top.cfg_max_pull_in_i = c.max_pull_in;
}


// Request ids as the RTL sees them with HbmSimOptions::scramble_ids: id * kIdScramble mod 2^32,
// undone by its inverse.
constexpr uint32_t kIdScramble = 0x9E3779B1u;
constexpr uint32_t inverse_mod_2_32(uint32_t odd) {
  uint32_t x = odd;  // Newton's iteration doubles the correct low bits each step
  for (int i = 0; i < 5; ++i) x *= 2u - odd * x;
  return x;
}
static_assert(kIdScramble * inverse_mod_2_32(kIdScramble) == 1u);

std::string show(const HbmCommand& c) {
  return c.cmd == HbmCmd::kNone ? std::string("nothing") : model::describe(c);
}

// One channel: the RTL controller, its DRAM device model, and (when checking) the reference.
class Channel {
 public:
  Channel(VerilatedContext* context, const HbmConfig& config, bool check, bool scramble_ids, int index)
      : config_(config), golden_(config), index_(index), check_(check), scramble_ids_(scramble_ids) {
    top_ = std::make_unique<Vnc_hbm>(context, fmt::format("ch{}", index).c_str());
    configure(*top_, config);
    top_->rd_req_valid_i = 0;
    top_->wr_req_valid_i = 0;
    top_->dram_rd_valid_i = 0;
    top_->upset_i = 0;
    hold_in_reset(*top_);
  }
  ~Channel() { top_->final(); }
  Vnc_hbm& top() { return *top_; }
  model::HbmChannel& golden() { return golden_; }

  struct Offer {
    const HbmBurst* burst = nullptr;  // offered this cycle (valid), or null
  };
  struct Outcome {
    bool rd_accepted = false, wr_accepted = false;
    HbmCommand row, col;
    bool response = false;
    uint32_t response_id = 0;
    HbmData response_data{};
    std::string failure;
  };

  // One clock cycle with these requests on the ports. Compares with the reference as it goes.
  // `waves`: the channel whose FST is written, or null.
  Outcome cycle(uint64_t now, const HbmBurst* rd, const HbmBurst* wr, Waves* waves = nullptr,
                bool spurious_data = false) {
    Outcome out;
    Vnc_hbm& t = *top_;
    t.rd_req_valid_i = rd != nullptr;
    if (rd) {
      t.rd_req_addr_i = static_cast<uint32_t>(rd->request.addr);
      t.rd_req_id_i = rtl_id(rd->request.id);
    }
    t.wr_req_valid_i = wr != nullptr;
    if (wr) {
      t.wr_req_addr_i = static_cast<uint32_t>(wr->request.addr);
      t.wr_req_id_i = rtl_id(wr->request.id);
      to_wide(wr->request.data, t.wr_req_data_i);
    }
    const bool data_due = !device_reads_.empty() && device_reads_.front().first == now;
    t.dram_rd_valid_i = data_due || spurious_data;
    if (data_due) to_wide(device_reads_.front().second, t.dram_rd_data_i);
    t.clk_i = 0;
    t.eval();
    if (waves) waves->dump(now, false);

    out.rd_accepted = rd && t.rd_req_ready_o;
    out.wr_accepted = wr && t.wr_req_ready_o;
    out.row.cycle = out.col.cycle = now;
    out.row.cmd = static_cast<HbmCmd>(t.row_cmd_o);
    if (out.row.cmd != HbmCmd::kNone) {
      out.row.bank = t.row_bank_o;
      out.row.row = out.row.cmd == HbmCmd::kAct ? t.row_row_o : 0;
    }
    out.col.cmd = static_cast<HbmCmd>(t.col_cmd_o);
    if (out.col.cmd != HbmCmd::kNone) {
      out.col.bank = t.col_bank_o;
      out.col.row = t.col_row_o;
      out.col.col = t.col_col_o;
      out.col.id = model_id(t.col_id_o);
    }
    out.response = t.rsp_valid_o;
    out.response_id = model_id(t.rsp_id_o);
    out.response_data = from_wide<decltype(t.rsp_data_o)>(t.rsp_data_o);

    // The DRAM: writes land at their WR, reads answer CL + BL cycles after their RD.
    const uint64_t key = (static_cast<uint64_t>(out.col.row) << 9) |
                         (static_cast<uint64_t>(out.col.bank) << 5) |
                         static_cast<uint64_t>(out.col.col);
    if (out.col.cmd == HbmCmd::kWr) memory_[key] = from_wide<decltype(t.col_wdata_o)>(t.col_wdata_o);
    if (out.col.cmd == HbmCmd::kRd) {
      const auto it = memory_.find(key);
      device_reads_.emplace_back(now + static_cast<uint64_t>(config_.timing.cl + config_.timing.bl),
                                 it == memory_.end() ? HbmData{} : it->second);
    }
    if (data_due) device_reads_.pop_front();

    if (check_) {
      for (bool w : {false, true}) {
        const bool rtl_ready = w ? t.wr_req_ready_o : t.rd_req_ready_o;
        if (golden_.ready(w) != rtl_ready && out.failure.empty())
          out.failure = fmt::format("{} request port ready: RTL {}, model {}",
                                    w ? "write" : "read", rtl_ready, golden_.ready(w));
      }
      if (out.rd_accepted) golden_.offer(rd->request);
      if (out.wr_accepted) golden_.offer(wr->request);
      const auto g = golden_.step();
      HbmCommand grow = g.row, gcol = g.col;
      grow.cycle = gcol.cycle = now;
      if (!(grow == out.row) && out.failure.empty())
        out.failure = fmt::format("row command: RTL {}, model {}", show(out.row), show(grow));
      if (!(gcol == out.col) && out.failure.empty())
        out.failure = fmt::format("column command: RTL {}, model {}", show(out.col), show(gcol));
      if (out.failure.empty() &&
          (g.has_response != out.response ||
           (out.response && (g.response.id != out.response_id ||
                             g.response.data != out.response_data))))
        out.failure = fmt::format(
            "read response: RTL {}, model {}",
            out.response ? fmt::format("id {} data {:016x}..", out.response_id,
                                       out.response_data[0])
                         : std::string("none"),
            g.has_response ? fmt::format("id {} data {:016x}..", g.response.id,
                                         g.response.data[0])
                           : std::string("none"));
    }
    t.clk_i = 1;
    t.eval();
    if (waves) waves->dump(now, true);
    return out;
  }

  bool idle() const { return top_->idle_o && device_reads_.empty() && (!check_ || golden_.idle()); }
  std::string counters_mismatch() const {
    const auto& g = golden_.counters();
    if (top_->cnt_act_o != g.act || top_->cnt_rd_o != g.rd || top_->cnt_wr_o != g.wr ||
        top_->cnt_ref_o != g.refpb + g.refab)
      return fmt::format("counters: RTL ACT {} RD {} WR {} REF {}, model ACT {} RD {} WR {} REF {}",
                         top_->cnt_act_o, top_->cnt_rd_o, top_->cnt_wr_o, top_->cnt_ref_o, g.act,
                         g.rd, g.wr, g.refpb + g.refab);
    return {};
  }

 private:
  HbmConfig config_;
  std::unique_ptr<Vnc_hbm> top_;
  model::HbmChannel golden_;
  int index_;
  bool check_;
  bool scramble_ids_;
  uint32_t rtl_id(uint32_t id) const { return scramble_ids_ ? id * kIdScramble : id; }
  uint32_t model_id(uint32_t id) const {
    return scramble_ids_ ? id * inverse_mod_2_32(kIdScramble) : id;
  }
  std::unordered_map<uint64_t, HbmData> memory_;
  std::deque<std::pair<uint64_t, HbmData>> device_reads_;
};

void require_rtl_shape(const HbmConfig& config) {
  config.validate();
  if (config.rd_depth != kHbmRtlRdDepth || config.wr_depth != kHbmRtlWrDepth)
    throw Error(fmt::format("HBM RTL: queue depths are {} (read) and {} (write) in the built "
                            "model, the configuration asks for {} and {}", kHbmRtlRdDepth,
                            kHbmRtlWrDepth, config.rd_depth, config.wr_depth));
}

}  // namespace

HbmSimResult run_hbm_rtl(const std::vector<HbmBurst>& bursts, const HbmConfig& config,
                         const HbmSimOptions& options,
                         std::vector<std::vector<HbmCommand>>* commands) {
  require_rtl_shape(config);
  if (options.xprop_seed != 0) throw Error("HBM harness: there is no X-propagation build of the controller");
  const WallClock wall;
  auto context = make_context(options);
  const int channels = config.channels;
  std::vector<std::unique_ptr<Channel>> ch;
  std::vector<model::HbmPlayer> players;
  for (int c = 0; c < channels; ++c) {
    ch.push_back(std::make_unique<Channel>(context.get(), config, options.check, options.scramble_ids, c));
    players.emplace_back(bursts, c);
    Vnc_hbm& top = ch.back()->top();
    // A configuration the validator would refuse (tRTW + tCWL < CL + BL), driven past it.
    if (options.fault == HbmFault::kConfigBypassesValidation) top.cfg_rtw_i = 0;
    top.upset_i = options.fault == HbmFault::kUpsetInFlightFull ? 1
                : options.fault == HbmFault::kUpsetRefreshDebt ? 2 : 0;
  }
  const CoverageDump coverage(*context, "hbm");
  Waves waves;
  waves.open(ch[0]->top(), options);
  if (commands) commands->assign(static_cast<size_t>(channels), {});
  auto expected = model::hbm_expected_reads(bursts);
  model::HbmStatsBuilder stats(config, bursts.size(), options.timeline_window);
  model::SplitMix64 rng(options.seed);
  const auto chance = [&] { return (rng.next() >> 11) * 0x1.0p-53; };
  std::vector<std::array<const HbmBurst*, 2>> offering(static_cast<size_t>(channels), {nullptr, nullptr});
  HbmSimResult result;
  Failure fail(result, options);
  HbmBurst changed;            // kRdPayloadChangesWhileStalled: the read, readdressed
  std::vector<bool> rd_stalled(static_cast<size_t>(channels), false);  // not taken last cycle
  size_t done = 0;
  // The cycle is the controllers' own (their commands carry it), from the end of reset.
  uint64_t cycle = 0;
  Watchdog watchdog(options.watchdog);
  for (;; ++cycle) {
    bool all_idle = true;
    for (int c = 0; c < channels && result.ok; ++c) {
      auto& player = players[static_cast<size_t>(c)];
      auto& offer = offering[static_cast<size_t>(c)];
      // A port holds its request until it is taken; a new one waits out a random stall.
      for (bool w : {false, true})
        if (offer[w] == nullptr && !(options.stall > 0 && chance() < options.stall))
          offer[w] = player.head(w, cycle);
      const HbmBurst* rd = offer[0];
      if (options.fault == HbmFault::kRdPayloadChangesWhileStalled && rd &&
          rd_stalled[static_cast<size_t>(c)]) {
        changed = *rd;
        changed.request.addr ^= 32;
        rd = &changed;
      }
      const bool spurious = options.fault == HbmFault::kDramDataWithoutRead && cycle == 3;
      const auto out =
          ch[static_cast<size_t>(c)]->cycle(cycle, rd, offer[1], c == 0 ? &waves : nullptr, spurious);
      rd_stalled[static_cast<size_t>(c)] = rd != nullptr && !out.rd_accepted;
      result.rd_port_stalls += rd_stalled[static_cast<size_t>(c)];
      for (bool w : {false, true})
        if (w ? out.wr_accepted : out.rd_accepted) {
          stats.accepted(offer[w]->request.id, cycle);
          player.accept(w);
          offer[w] = nullptr;
          watchdog.progress(cycle);
        }
      for (const HbmCommand* cmd : {&out.row, &out.col}) {
        if (cmd->cmd == HbmCmd::kNone) continue;
        if (commands) (*commands)[static_cast<size_t>(c)].push_back(*cmd);
        stats.command(*cmd);
        if (options.check) ++result.commands_compared;
        if (cmd->cmd == HbmCmd::kRd || cmd->cmd == HbmCmd::kWr) {
          ++done;
          watchdog.progress(cycle);
        }
      }
      std::string failure = out.failure;
      if (failure.empty() && out.response) {
        failure = model::hbm_check_read(expected, out.response_id, out.response_data);
        stats.response(out.response_id, cycle);
        ++result.responses_checked;
      }
      if (!failure.empty()) fail(cycle, fmt::format("channel {}: {}", c, failure));
      if (!player.done() || offer[0] || offer[1] || !ch[static_cast<size_t>(c)]->idle())
        all_idle = false;
    }
    if (!result.ok) break;
    stats.end_of_cycle(cycle);
    if (all_idle && done == bursts.size()) break;
    if (watchdog.expired(cycle)) {
      fail(cycle, fmt::format("{} ({} of {} bursts served)", watchdog.report(), done, bursts.size()));
      break;
    }
  }
  result.cycles = cycle;
  result.cycles_compared = options.check ? cycle + 1 : 0;
  if (!expected.empty()) fail(cycle, fmt::format("{} reads never returned data", expected.size()));
  uint64_t age = 0, urgent_wait = 0;
  for (int c = 0; c < channels && result.ok && options.check; ++c) {
    const auto mismatch = ch[static_cast<size_t>(c)]->counters_mismatch();
    if (!mismatch.empty()) fail(cycle, fmt::format("channel {}: {}", c, mismatch));
    age = std::max(age, ch[static_cast<size_t>(c)]->golden().max_age());
    urgent_wait = std::max(urgent_wait, ch[static_cast<size_t>(c)]->golden().max_urgent_wait());
  }
  waves.close();
  result.stats = stats.finish(cycle, age, urgent_wait);
  result.wall_seconds = wall.seconds();
  return result;
}

HbmRefusal hbm_rtl_refuse(const HbmConfig& config, bool write, uint64_t addr) {
  require_rtl_shape(config);
  VerilatedContext context;
  Channel ch(&context, config, false, false, 0);
  HbmBurst bad;
  bad.request.write = write;
  bad.request.addr = addr;
  bad.request.id = 7;
  HbmBurst good;
  good.request.addr = 0;
  good.request.id = 8;
  HbmRefusal r;
  uint64_t now = 0;
  bool accepted = false;
  for (; now < 8 && !accepted; ++now) {
    const auto out = ch.cycle(now, write ? nullptr : &bad, write ? &bad : nullptr, nullptr, false);
    accepted = out.rd_accepted || out.wr_accepted;
  }
  r.err_code = ch.top().err_code_o;
  bool answered = false;
  bool good_taken = false;
  for (; now < 2000 && !answered; ++now) {
    const auto out = ch.cycle(now, good_taken ? nullptr : &good, nullptr, nullptr, false);
    good_taken = good_taken || out.rd_accepted;
    answered = out.response && out.response_id == 8;
  }
  for (int i = 0; i < 100 && !ch.idle(); ++i, ++now) ch.cycle(now, nullptr, nullptr, nullptr, false);
  r.live = accepted && answered && ch.idle();
  return r;
}

}  // namespace ncore::tb
