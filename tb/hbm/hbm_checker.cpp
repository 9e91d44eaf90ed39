#include "tb/hbm/hbm_checker.h"

#include <fmt/format.h>

namespace ncore::tb {

using model::HbmCmd;
using model::HbmCommand;

HbmChecker::HbmChecker(const model::HbmConfig& config) : config_(config) {
  bg_act_.fill(kNever);
  bg_rd_.fill(kNever);
  bg_wr_.fill(kNever);
}

void HbmChecker::fail(const HbmCommand& c, const std::string& why) {
  if (failure_.empty())
    failure_ = fmt::format("cycle {}: {}: {}", c.cycle, model::describe(c), why);
}

void HbmChecker::need(int64_t now, int64_t since, int gap, const char* rule, const HbmCommand& c,
                      const std::string& what) {
  if (since != kNever && now < since + gap)
    fail(c, fmt::format("violates {} ({} at cycle {}, so not before cycle {})", rule, what, since,
                        since + gap));
}

void HbmChecker::check_refresh_rate(int64_t now, const HbmCommand* c) {
  const bool per_bank = config_.refresh == model::HbmRefresh::kPerBank;
  const int64_t interval = per_bank ? config_.timing.refi / model::kHbmBanks : config_.timing.refi;
  const int64_t owed = now / interval - static_cast<int64_t>(refreshes_);
  std::string why;
  if (owed > config_.max_postpone + 1)
    why = fmt::format("refresh postponed too long: {} refreshes owed at cycle {} (one every {} "
                      "cycles; at most {} may be postponed)", owed, now, interval,
                      config_.max_postpone);
  else if (-owed > config_.max_pull_in)
    why = fmt::format("refresh pulled in too far: {} ahead at cycle {} (at most {})", -owed, now,
                      config_.max_pull_in);
  if (why.empty()) return;
  if (c != nullptr) {
    fail(*c, why);
  } else if (failure_.empty()) {
    failure_ = fmt::format("end of run: {}", why);
  }
}

void HbmChecker::observe(const HbmCommand& c) {
  const auto& t = config_.timing;
  const int64_t now = static_cast<int64_t>(c.cycle);
  ++commands_;
  const bool column = c.cmd == HbmCmd::kRd || c.cmd == HbmCmd::kWr;
  int64_t& last_bus = column ? last_col_cycle_ : last_row_cycle_;
  if (now < last_bus) fail(c, "commands out of cycle order");
  if (now == last_bus)
    fail(c, fmt::format("two {} commands in one cycle", column ? "column" : "row"));
  last_bus = now;
  if (c.cmd != HbmCmd::kRefAb && (c.bank < 0 || c.bank >= model::kHbmBanks)) {
    fail(c, "bank out of range");
    return;
  }
  BankHistory& b = bank_[static_cast<size_t>(c.cmd == HbmCmd::kRefAb ? 0 : c.bank)];
  const size_t bg = static_cast<size_t>(c.bank % model::kHbmBankGroups);
  switch (c.cmd) {
    case HbmCmd::kAct:
      if (b.open) fail(c, fmt::format("the bank is already open (row {})", b.row));
      need(now, b.pre, t.rp, "tRP", c, "PRE of this bank");
      need(now, b.act, t.rc, "tRC", c, "ACT of this bank");
      need(now, last_act_, t.rrd_s, "tRRD_S", c, "the last ACT");
      need(now, bg_act_[bg], t.rrd_l, "tRRD_L", c, "the last ACT in this bank group");
      if (acts_.size() == 4) need(now, acts_.front(), t.faw, "tFAW", c, "the fourth ACT back");
      need(now, b.refpb, t.rfcpb, "tRFCpb", c, "REFpb of this bank");
      if (last_refpb_bank_ != c.bank)
        need(now, last_refpb_, t.rrefd, "tRREFD", c, "REFpb of another bank");
      need(now, last_refab_, t.rfc, "tRFC", c, "REFab");
      b.open = true;
      b.row = c.row;
      b.act = now;
      last_act_ = bg_act_[bg] = now;
      acts_.push_back(now);
      if (acts_.size() > 4) acts_.pop_front();
      break;
    case HbmCmd::kPre:
      if (!b.open) fail(c, "the bank is not open");
      need(now, b.act, t.ras, "tRAS", c, "ACT of this bank");
      need(now, b.rd, t.rtp, "tRTP", c, "RD of this bank");
      need(now, b.wr, t.cwl + t.bl + t.wr, "tWR (CWL + BL + tWR)", c, "WR of this bank");
      b.open = false;
      b.pre = now;
      break;
    case HbmCmd::kRd:
    case HbmCmd::kWr: {
      const bool rd = c.cmd == HbmCmd::kRd;
      if (!b.open) {
        fail(c, "the bank is not open");
      } else if (b.row != c.row) {
        fail(c, fmt::format("row {} is open, not row {}", b.row, c.row));
      }
      if (c.col < 0 || c.col >= model::kHbmColumns) fail(c, "column out of range");
      if (rd) {
        need(now, b.act, t.rcd_rd, "tRCD_RD", c, "ACT of this bank");
        need(now, last_rd_, t.ccd_s, "tCCD_S", c, "the last RD");
        need(now, bg_rd_[bg], t.ccd_l, "tCCD_L", c, "the last RD in this bank group");
        need(now, last_wr_, t.cwl + t.bl + t.wtr_s, "tWTR_S (CWL + BL + tWTR_S)", c, "the last WR");
        need(now, bg_wr_[bg], t.cwl + t.bl + t.wtr_l, "tWTR_L (CWL + BL + tWTR_L)", c,
             "the last WR in this bank group");
        b.rd = now;
        last_rd_ = bg_rd_[bg] = now;
      } else {
        need(now, b.act, t.rcd_wr, "tRCD_WR", c, "ACT of this bank");
        need(now, last_wr_, t.ccd_s, "tCCD_S", c, "the last WR");
        need(now, bg_wr_[bg], t.ccd_l, "tCCD_L", c, "the last WR in this bank group");
        need(now, last_rd_, t.rtw, "tRTW", c, "the last RD");
        b.wr = now;
        last_wr_ = bg_wr_[bg] = now;
      }
      break;
    }
    case HbmCmd::kRefPb:
      if (config_.refresh != model::HbmRefresh::kPerBank)
        fail(c, "per-bank refresh while the configuration refreshes all banks");
      if (b.open) fail(c, fmt::format("the bank is open (row {})", b.row));
      if (b.refreshed) fail(c, "the bank was already refreshed in this round");
      need(now, b.pre, t.rp, "tRP", c, "PRE of this bank");
      need(now, b.act, t.rc, "tRC", c, "ACT of this bank");
      need(now, b.refpb, t.rfcpb, "tRFCpb", c, "REFpb of this bank");
      need(now, last_act_, t.rrd_s, "tRRD_S", c, "the last ACT");
      need(now, bg_act_[bg], t.rrd_l, "tRRD_L", c, "the last ACT in this bank group");
      need(now, last_refpb_, t.rrefd, "tRREFD", c, "the last REFpb");
      b.refpb = now;
      b.refreshed = true;
      last_refpb_ = now;
      last_refpb_bank_ = c.bank;
      {
        bool all = true;
        for (const auto& x : bank_) all = all && x.refreshed;
        if (all)
          for (auto& x : bank_) x.refreshed = false;
      }
      ++refreshes_;
      check_refresh_rate(now, &c);
      break;
    case HbmCmd::kRefAb:
      if (config_.refresh != model::HbmRefresh::kAllBank)
        fail(c, "all-bank refresh while the configuration refreshes per bank");
      for (int i = 0; i < model::kHbmBanks; ++i) {
        const BankHistory& x = bank_[static_cast<size_t>(i)];
        if (x.open) fail(c, fmt::format("bank {} is open", i));
        need(now, x.pre, t.rp, "tRP", c, fmt::format("PRE of bank {}", i));
        need(now, x.act, t.rc, "tRC", c, fmt::format("ACT of bank {}", i));
      }
      need(now, last_refab_, t.rfc, "tRFC", c, "the last REFab");
      last_refab_ = now;
      ++refreshes_;
      check_refresh_rate(now, &c);
      break;
    case HbmCmd::kNone:
      fail(c, "not a command");
      break;
  }
  if (c.cmd != HbmCmd::kRefPb && c.cmd != HbmCmd::kRefAb) check_refresh_rate(now, &c);
}

void HbmChecker::finish(uint64_t cycle) { check_refresh_rate(static_cast<int64_t>(cycle), nullptr); }

}  // namespace ncore::tb
