#include "tb/hbm/hbm_rtl_channel.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <verilated.h>

#include "Vnc_hbm.h"
#include "model/common/error.h"
#include "tb/common/bench.h"
#include "tb/common/wide.h"

namespace ncore::tb {
namespace {

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

// Request ids as the RTL sees them with scramble_ids: id * kIdScramble mod 2^32, undone by its
// inverse.
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

// The DRAM's key of a burst within its channel: row, bank, column.
uint64_t dram_key(int row, int bank, int col) {
  return (static_cast<uint64_t>(row) << 9) | (static_cast<uint64_t>(bank) << 5) | static_cast<uint64_t>(col);
}

}  // namespace

void require_hbm_rtl_shape(const HbmConfig& config) {
  config.validate();
  if (config.rd_depth != kHbmRtlRdDepth || config.wr_depth != kHbmRtlWrDepth)
    throw Error(fmt::format("HBM RTL: queue depths are {} (read) and {} (write) in the built "
                            "model, the configuration asks for {} and {}", kHbmRtlRdDepth,
                            kHbmRtlWrDepth, config.rd_depth, config.wr_depth));
}

HbmRtlChannel::HbmRtlChannel(VerilatedContext* context, const HbmConfig& config, int index, bool check,
                             bool scramble_ids)
    : config_(config), index_(index), check_(check), scramble_ids_(scramble_ids), reference_(config) {
  require_hbm_rtl_shape(config);
  top_ = std::make_unique<Vnc_hbm>(context, fmt::format("ch{}", index).c_str());
  configure(*top_, config);
  top_->rd_req_valid_i = 0;
  top_->wr_req_valid_i = 0;
  top_->dram_rd_valid_i = 0;
  top_->upset_i = 0;
  hold_in_reset(*top_);
}

HbmRtlChannel::~HbmRtlChannel() { top_->final(); }

uint32_t HbmRtlChannel::rtl_id(uint32_t id) const { return scramble_ids_ ? id * kIdScramble : id; }
uint32_t HbmRtlChannel::model_id(uint32_t id) const {
  return scramble_ids_ ? id * inverse_mod_2_32(kIdScramble) : id;
}

HbmRtlChannel::Cycle HbmRtlChannel::cycle(uint64_t now, const model::HbmRequest* rd, const model::HbmRequest* wr,
                                          Waves* waves, bool spurious_data) {
  Cycle out;
  Vnc_hbm& t = *top_;
  t.rd_req_valid_i = rd != nullptr;
  if (rd) {
    t.rd_req_addr_i = static_cast<uint32_t>(rd->addr);
    t.rd_req_id_i = rtl_id(rd->id);
  }
  t.wr_req_valid_i = wr != nullptr;
  if (wr) {
    t.wr_req_addr_i = static_cast<uint32_t>(wr->addr);
    t.wr_req_id_i = rtl_id(wr->id);
    to_wide(wr->data, t.wr_req_data_i);
  }
  const bool data_due = !device_reads_.empty() && device_reads_.front().first == now;
  t.dram_rd_valid_i = data_due || spurious_data;
  if (data_due) to_wide(device_reads_.front().second, t.dram_rd_data_i);
  t.clk_i = 0;
  t.eval();
  if (waves) waves->dump(now, false);

  out.rd_ready = t.rd_req_ready_o;
  out.wr_ready = t.wr_req_ready_o;
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
  const uint64_t key = dram_key(out.col.row, out.col.bank, out.col.col);
  if (out.col.cmd == HbmCmd::kWr) memory_[key] = from_wide<decltype(t.col_wdata_o)>(t.col_wdata_o);
  if (out.col.cmd == HbmCmd::kRd) {
    const auto it = memory_.find(key);
    device_reads_.emplace_back(now + static_cast<uint64_t>(config_.timing.cl + config_.timing.bl),
                               it == memory_.end() ? HbmData{} : it->second);
  }
  if (data_due) device_reads_.pop_front();
  if (check_) compare(now, rd, wr, out);
  t.clk_i = 1;
  t.eval();
  if (waves) waves->dump(now, true);
  return out;
}

bool HbmRtlChannel::ready(bool write) const { return write ? top_->wr_req_ready_o : top_->rd_req_ready_o; }
bool HbmRtlChannel::idle() const {
  return top_->idle_o && device_reads_.empty() && (!check_ || reference_.idle());
}

std::string HbmRtlChannel::counters_mismatch() const {
  const auto& g = reference_.counters();
  const Vnc_hbm& t = *top_;
  if (t.cnt_act_o != g.act || t.cnt_rd_o != g.rd || t.cnt_wr_o != g.wr || t.cnt_ref_o != g.refpb + g.refab)
    return fmt::format("counters: RTL ACT {} RD {} WR {} REF {}, model ACT {} RD {} WR {} REF {}", t.cnt_act_o,
                       t.cnt_rd_o, t.cnt_wr_o, t.cnt_ref_o, g.act, g.rd, g.wr, g.refpb + g.refab);
  return {};
}

void HbmRtlChannel::compare(uint64_t now, const model::HbmRequest* rd, const model::HbmRequest* wr, Cycle& out) {
  for (bool w : {false, true}) {
    const bool rtl_ready = w ? out.wr_ready : out.rd_ready;
    if (reference_.ready(w) != rtl_ready && out.failure.empty())
      out.failure = fmt::format("{} request port ready: RTL {}, model {}", w ? "write" : "read", rtl_ready,
                                reference_.ready(w));
  }
  if (out.rd_accepted) reference_.offer(*rd);
  if (out.wr_accepted) reference_.offer(*wr);
  const auto g = reference_.step();
  HbmCommand grow = g.row, gcol = g.col;
  grow.cycle = gcol.cycle = now;
  if (!(grow == out.row) && out.failure.empty())
    out.failure = fmt::format("row command: RTL {}, model {}", show(out.row), show(grow));
  if (!(gcol == out.col) && out.failure.empty())
    out.failure = fmt::format("column command: RTL {}, model {}", show(out.col), show(gcol));
  if (out.failure.empty() &&
      (g.has_response != out.response ||
       (out.response && (g.response.id != out.response_id || g.response.data != out.response_data))))
    out.failure = fmt::format(
        "read response: RTL {}, model {}",
        out.response ? fmt::format("id {} data {:016x}..", out.response_id, out.response_data[0]) : std::string("none"),
        g.has_response ? fmt::format("id {} data {:016x}..", g.response.id, g.response.data[0]) : std::string("none"));
}
int HbmRtlChannel::queued(bool write) const { return write ? top_->wr_count_o : top_->rd_count_o; }

uint64_t HbmRtlChannel::key_of(uint64_t byte_addr) const {
  const model::HbmAddress a = model::hbm_map(byte_addr, config_.channels, config_.xor_hash);
  if (a.channel != index_)
    throw Error(fmt::format("HBM RTL channel {}: address 0x{:x} belongs to channel {}", index_, byte_addr, a.channel));
  return dram_key(a.row, a.bank, a.col);
}

void HbmRtlChannel::preload(uint64_t byte_addr, const HbmData& data) {
  memory_[key_of(byte_addr)] = data;
  if (check_) reference_.preload(byte_addr, data);
}

HbmData HbmRtlChannel::peek(uint64_t byte_addr) const {
  const auto it = memory_.find(key_of(byte_addr));
  return it == memory_.end() ? HbmData{} : it->second;
}

std::vector<uint64_t> HbmRtlChannel::bursts() const {
  std::vector<uint64_t> out;
  for (const auto& [key, data] : memory_) {
    model::HbmAddress a;
    a.channel = index_;
    a.row = static_cast<int>(key >> 9);
    a.bank = static_cast<int>(key >> 5 & 0xF);
    a.col = static_cast<int>(key & 0x1F);
    out.push_back(model::hbm_unmap(a, config_.channels, config_.xor_hash));
  }
  return out;
}

namespace {

// An HbmRtlChannel behind the fabric: the requests offered in a cycle go in with its clock.
class RtlController : public HbmController {
 public:
  RtlController(std::shared_ptr<VerilatedContext> context, const HbmConfig& config, int index)
      : context_(std::move(context)), channel_(context_.get(), config, index, true), index_(index) {}
  bool ready(bool write) const override { return channel_.ready(write); }
  void offer(const model::HbmRequest& r) override {
    (r.write ? wr_ : rd_) = r;
    offered_at_[r.id] = now_;
  }
  model::HbmChannel::StepResult step() override {
    const HbmRtlChannel::Cycle c = channel_.cycle(now_, rd_ ? &*rd_ : nullptr, wr_ ? &*wr_ : nullptr);
    if (!c.failure.empty() && failure_.empty())
      failure_ = fmt::format("HBM channel {}, cycle {}: the RTL controller differs from the reference: {}", index_,
                             now_, c.failure);
    if ((rd_ && !c.rd_accepted) || (wr_ && !c.wr_accepted))
      throw Error(fmt::format("HBM RTL channel: a request offered while ready was not taken at cycle {}", now_));
    rd_.reset();
    wr_.reset();
    model::HbmChannel::StepResult s;
    s.row = c.row;
    s.col = c.col;
    if (c.col.cmd == model::HbmCmd::kRd || c.col.cmd == model::HbmCmd::kWr) {
      const auto it = offered_at_.find(c.col.id);
      if (it != offered_at_.end()) {
        max_age_ = std::max(max_age_, now_ - it->second);
        offered_at_.erase(it);
      }
    }
    s.has_response = c.response;
    if (c.response) {
      s.response.cycle = now_;  // as the reference's: the cycle it is handed back
      s.response.id = c.response_id;
      s.response.data = c.response_data;
    }
    ++now_;
    return s;
  }
  bool idle() const override { return channel_.idle(); }
  int queued(bool write) const override { return channel_.queued(write); }
  uint64_t max_age() const override { return max_age_; }
  void preload(uint64_t byte_addr, const HbmData& data) override { channel_.preload(byte_addr, data); }
  HbmData peek(uint64_t byte_addr) const override { return channel_.peek(byte_addr); }
  std::vector<uint64_t> bursts() const override { return channel_.bursts(); }
  Vnc_hbm& top() { return channel_.top(); }
  std::string failure() const override {
    if (!failure_.empty()) return failure_;
    const std::string counters = channel_.counters_mismatch();
    return counters.empty() ? counters : fmt::format("HBM channel {}: {}", index_, counters);
  }

 private:
  std::shared_ptr<VerilatedContext> context_;  // before channel_: it outlives the model
  HbmRtlChannel channel_;
  std::optional<model::HbmRequest> rd_, wr_;  // offered this cycle
  std::unordered_map<uint32_t, uint64_t> offered_at_;  // request id -> the cycle it was taken
  int index_;
  uint64_t now_ = 0;
  uint64_t max_age_ = 0;
  std::string failure_;  // the first difference from the reference
};

}  // namespace

HbmControllerFactory rtl_hbm_controllers(std::function<void(int channel, Vnc_hbm& top)> after_reset) {
  auto context = std::make_shared<VerilatedContext>();
  return [context, after_reset](const HbmConfig& config, int channel) {
    auto controller = std::make_unique<RtlController>(context, config, channel);
    if (after_reset) after_reset(channel, controller->top());
    return controller;
  };
}

}  // namespace ncore::tb
