#pragma once
// An independent HBM3 timing checker. It watches every command of one pseudo-channel, keeps its
// own history (it shares nothing with the controller's bookkeeping but the configuration), and
// records the first command that breaks a rule, with the cycle, the command and the rule.

#include <array>
#include <cstdint>
#include <deque>
#include <string>

#include "model/hbm/hbm.h"

namespace ncore::tb {

class HbmChecker {
 public:
  explicit HbmChecker(const model::HbmConfig& config);
  // Commands in cycle order; at most one row command (ACT, PRE, REFpb, REFab) and one column
  // command (RD, WR) per cycle.
  void observe(const model::HbmCommand& c);
  // The run ended at this cycle: refresh must not be owed past the postponement limit.
  void finish(uint64_t cycle);
  bool ok() const { return failure_.empty(); }
  const std::string& failure() const { return failure_; }
  uint64_t commands() const { return commands_; }

 private:
  static constexpr int64_t kNever = INT64_MIN / 2;
  struct BankHistory {
    bool open = false;
    int row = 0;
    int64_t act = kNever, pre = kNever, rd = kNever, wr = kNever, refpb = kNever;
    bool refreshed = false;  // in this round
  };
  // Fails when now < since + gap: the command came too early after `what`.
  void need(int64_t now, int64_t since, int gap, const char* rule, const model::HbmCommand& c,
            const std::string& what);
  void fail(const model::HbmCommand& c, const std::string& why);
  void check_refresh_rate(int64_t now, const model::HbmCommand* c);

  model::HbmConfig config_;
  std::array<BankHistory, model::kHbmBanks> bank_{};
  std::array<int64_t, model::kHbmBankGroups> bg_act_{}, bg_rd_{}, bg_wr_{};
  int64_t last_act_ = kNever, last_rd_ = kNever, last_wr_ = kNever, last_refpb_ = kNever,
          last_refab_ = kNever;
  int last_refpb_bank_ = -1;
  std::deque<int64_t> acts_;  // the last four ACT cycles
  int64_t last_row_cycle_ = kNever, last_col_cycle_ = kNever;
  uint64_t refreshes_ = 0, commands_ = 0;
  std::string failure_;
};

}  // namespace ncore::tb
