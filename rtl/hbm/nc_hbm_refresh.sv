// The refresh manager of an HBM3 pseudo-channel (model/hbm/refresh.h, the same decisions).
//
// Refreshes are owed one per interval (debt_o); each REFpb/REFab issued pays one off. Up to
// max_postpone may be owed before the next is forced, up to max_pull_in issued ahead of time.
//   - per-bank (cfg_i.all_bank_ref 0): one REFpb per bank per round, one owed every tREFI/16.
//     A forced refresh holds the lowest bank not yet refreshed this round (no request command
//     goes there), closes it and refreshes it. Ahead of need, an idle bank (no queued request)
//     is refreshed, the most recently used first.
//   - all-bank: REFab every tREFI. A forced refresh holds every bank, closes them and
//     refreshes; ahead of need only while both queues are empty.
// The controller gives the row bus to forced_cmd_o first, then to the scheduler, then to
// opp_cmd_o; row_cmd_i is what it issued.
`include "nc_assert.svh"

module nc_hbm_refresh
  import nc_isa_pkg::*;
  import nc_hbm_pkg::*;
(
  input  logic                clk_i,
  input  logic                rst_ni,
  /* verilator lint_off UNUSEDSIGNAL */  // the timing fields are the controller's
  input  hbm_cfg_t            cfg_i,
  /* verilator lint_on UNUSEDSIGNAL */
  // bank state at the start of the cycle
  input  logic [Banks-1:0]    ref_ready_i,      // a REFpb may go to the bank now
  input  logic [Banks-1:0]    pre_ready_i,      // the bank is open and may close now
  input  logic                all_ref_ready_i,  // every bank closed and past tRP/tRFC, channel past tRFC
  input  logic [31:0]         last_use_i [Banks],
  input  logic [Banks-1:0]    queued_any_i,     // a queued request goes to the bank
  input  logic                requests_i,       // any request queued
  // the row command issued this cycle
  input  isa_hbm_cmd_e            row_cmd_i,
  input  logic [BankW-1:0]    row_bank_i,
  // what a forced refresh holds back, and the row commands this manager wants
  output logic                hold_bank_valid_o,
  output logic [BankW-1:0]    hold_bank_o,
  output logic                hold_all_o,
  output isa_hbm_cmd_e            forced_cmd_o,
  output logic [BankW-1:0]    forced_bank_o,
  output isa_hbm_cmd_e            opp_cmd_o,
  output logic [BankW-1:0]    opp_bank_o,
  output logic signed [5:0]   debt_o
);
  logic signed [5:0] debt_q, debt_d;
  logic [15:0]       timer_q, timer_d;
  logic [Banks-1:0]  refreshed_q, refreshed_d;  // in this round (per-bank)
  logic              forced, may_pull_in;

  assign forced = debt_q >= $signed({2'b0, cfg_i.max_postpone});
  assign may_pull_in = debt_q > -$signed({2'b0, cfg_i.max_pull_in});

  // All-bank: a PRE of the lowest open bank that may close now, or, with every bank closed and
  // ready, a REFab.
  function automatic void close_all_then_refresh(input logic [Banks-1:0] pre_ready,
                                                 input logic all_ref_ready,
                                                 output isa_hbm_cmd_e cmd, output logic [BankW-1:0] bank);
    cmd = HbmCmdNone;
    bank = '0;
    for (int b = Banks - 1; b >= 0; b--)
      if (pre_ready[b]) begin
        cmd = HbmCmdPre;
        bank = BankW'(b);
      end
    if (all_ref_ready) cmd = HbmCmdRefAb;
  endfunction

  // Forced: the bank held (per-bank) or every bank (all-bank), and the command it needs.
  always_comb begin
    hold_bank_valid_o = 1'b0;
    hold_bank_o = '0;
    hold_all_o = cfg_i.all_bank_ref && forced;
    for (int b = Banks - 1; b >= 0; b--)
      if (!cfg_i.all_bank_ref && forced && !refreshed_q[b]) begin
        hold_bank_valid_o = 1'b1;
        hold_bank_o = BankW'(b);
      end
    forced_cmd_o = HbmCmdNone;
    forced_bank_o = '0;
    if (hold_bank_valid_o) begin
      if (pre_ready_i[hold_bank_o]) begin
        forced_cmd_o = HbmCmdPre;
        forced_bank_o = hold_bank_o;
      end else if (ref_ready_i[hold_bank_o]) begin
        forced_cmd_o = HbmCmdRefPb;
        forced_bank_o = hold_bank_o;
      end
    end else if (hold_all_o) begin
      close_all_then_refresh(pre_ready_i, all_ref_ready_i, forced_cmd_o, forced_bank_o);
    end
  end

  // Ahead of need.
  always_comb begin
    logic        found;
    logic [31:0] best_use;
    opp_cmd_o = HbmCmdNone;
    opp_bank_o = '0;
    found = 1'b0;
    best_use = '0;
    if (!cfg_i.all_bank_ref && may_pull_in) begin
      // An idle bank: the most recently used (least likely wanted soon) first.
      for (int unsigned b = 0; b < Banks; b++)
        if (!refreshed_q[b] && !queued_any_i[b] && ref_ready_i[b] &&
            (!found || last_use_i[b] > best_use)) begin
          found = 1'b1;
          best_use = last_use_i[b];
          opp_cmd_o = HbmCmdRefPb;
          opp_bank_o = BankW'(b);
        end
      if (!found && debt_q > 6'sd0)
        for (int b = Banks - 1; b >= 0; b--)
          if (!refreshed_q[b] && !queued_any_i[b] && pre_ready_i[b]) begin
            opp_cmd_o = HbmCmdPre;
            opp_bank_o = BankW'(b);
          end
    end
    if (cfg_i.all_bank_ref && !forced && may_pull_in && !requests_i)
      close_all_then_refresh(pre_ready_i, all_ref_ready_i, opp_cmd_o, opp_bank_o);
  end

  // Debt: one paid off per refresh issued, one more owed every interval.
  always_comb begin
    refreshed_d = refreshed_q;
    debt_d = debt_q;
    if (row_cmd_i == HbmCmdRefPb) begin
      refreshed_d[row_bank_i] = 1'b1;
      if (&refreshed_d) refreshed_d = '0;
    end
    if (row_cmd_i == HbmCmdRefPb || row_cmd_i == HbmCmdRefAb) debt_d = debt_q - 6'sd1;
    timer_d = timer_q + 1'b1;
    if (timer_q == (cfg_i.all_bank_ref ? cfg_i.refi : (cfg_i.refi >> 4)) - 1'b1) begin
      timer_d = '0;
      debt_d = debt_d + 6'sd1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      debt_q <= '0;
      timer_q <= '0;
      refreshed_q <= '0;
    end else begin
      debt_q <= debt_d;
      timer_q <= timer_d;
      refreshed_q <= refreshed_d;
    end
  end

  assign debt_o = debt_q;

  // Refresh is never owed past the postponement limit plus the one being forced.
  `NC_ASSERT(RefreshDebtBounded, debt_q <= $signed({2'b0, cfg_i.max_postpone}) + 6'sd1)
endmodule
