// HBM3 pseudo-channel controller with request reordering (rtl/hbm/README.md).
//
// Two request ports (read, write) feed a read queue and a write queue. Each cycle the scheduler
// picks at most one column command (RD/WR) and one row command (ACT/PRE/REFpb/REFab) from the
// queues and the bank state, under HBM3 timing kept as countdowns. The policy is the reference
// scheduler's (model/hbm.cpp, HbmChannel::step), decision for decision, so both emit the same
// command trace cycle for cycle:
//   - reorder: one direction at a time (writes drain between a high and a low watermark); the
//     oldest request whose column command is ready goes first; the oldest whose ACT/PRE is ready
//     gets the row bus; a row with pending hits of the current direction stays open.
//   - fcfs: column commands strictly in arrival order; row commands for any request.
//   - age cap: the oldest request, once older than age_cap, takes over direction and bank.
//   - same-address order: a request waits for older conflicting requests to its burst.
//   - refresh: per-bank in a flexible order (idle, most recently used banks first, forced past
//     the postponement limit) or all-bank.
// Read data comes back from the DRAM (dram_rd_*) CL + BL cycles after the RD; it leaves on the
// response port in the same cycle, tagged with the request's id.
`include "nc_assert.svh"

module nc_hbm_ctrl
  import nc_hbm_pkg::*;
#(
  parameter int unsigned RdDepth = 64,
  parameter int unsigned WrDepth = 256,
  parameter int unsigned IdW = 32,
  parameter int unsigned InFlight = 32   // reads between RD and data: >= (CL + BL) / tCCD_S + 1
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  hbm_cfg_t             cfg_i,
  // read requests
  input  logic                 rd_req_valid_i,
  output logic                 rd_req_ready_o,
  input  logic [AddrW-1:0]     rd_req_addr_i,
  input  logic [IdW-1:0]       rd_req_id_i,
  // write requests with their data
  input  logic                 wr_req_valid_i,
  output logic                 wr_req_ready_o,
  input  logic [AddrW-1:0]     wr_req_addr_i,
  input  logic [IdW-1:0]       wr_req_id_i,
  input  logic [DataW-1:0]     wr_req_data_i,
  // read responses (no back-pressure: the client takes one a cycle at most)
  output logic                 rsp_valid_o,
  output logic [IdW-1:0]       rsp_id_o,
  output logic [DataW-1:0]     rsp_data_o,
  // DRAM command buses
  output hbm_cmd_e             row_cmd_o,
  output logic [BankW-1:0]     row_bank_o,
  output logic [RowW-1:0]      row_row_o,
  output hbm_cmd_e             col_cmd_o,
  output logic [BankW-1:0]     col_bank_o,
  output logic [RowW-1:0]      col_row_o,
  output logic [ColW-1:0]      col_col_o,
  output logic [IdW-1:0]       col_id_o,
  output logic [DataW-1:0]     col_wdata_o,
  // DRAM read data, CL + BL cycles after its RD
  input  logic                 dram_rd_valid_i,
  input  logic [DataW-1:0]     dram_rd_data_i,
  // status
  output logic                 err_o,         // a request was refused (sticky)
  output hbm_err_e             err_code_o,
  output logic                 idle_o,
  output logic                 write_mode_o,
  output logic signed [5:0]    ref_debt_o,
  output logic [8:0]           rd_count_o,
  output logic [8:0]           wr_count_o,
  output logic [31:0]          cnt_act_o,
  output logic [31:0]          cnt_rd_o,
  output logic [31:0]          cnt_wr_o,
  output logic [31:0]          cnt_ref_o
);
  localparam int unsigned RdW = $clog2(RdDepth);
  localparam int unsigned WrW = $clog2(WrDepth);
  localparam int unsigned BgW = 2;
  localparam int unsigned SlotW = (RdW > WrW) ? RdW : WrW;

  // ------------------------------------------------------------------------------------------
  // State

  typedef struct packed {
    logic               valid;
    logic [BankW-1:0]   bank;
    logic [RowW-1:0]    row;
    logic [ColW-1:0]    col;
    logic [IdW-1:0]     id;
    logic [31:0]        arrival;
  } entry_t;

  typedef struct packed {
    logic               open;
    logic [RowW-1:0]    row;
    logic [TimeW-1:0]   act_rem, pre_rem, rd_rem, wr_rem;  // cycles until the command may go
    logic [31:0]        last_use;
    logic               refreshed;                         // in this refresh round
  } bank_t;

  entry_t             rdq_q [RdDepth], rdq_d [RdDepth];
  entry_t             wrq_q [WrDepth], wrq_d [WrDepth];
  logic [WrDepth-1:0] rd_dep_wr_q [RdDepth], rd_dep_wr_d [RdDepth];  // read waits for writes
  logic [RdDepth-1:0] wr_dep_rd_q [WrDepth], wr_dep_rd_d [WrDepth];  // write waits for reads
  logic [WrDepth-1:0] wr_dep_wr_q [WrDepth], wr_dep_wr_d [WrDepth];  // ... and for writes
  logic [DataW-1:0]   wr_data_q [WrDepth];
  bank_t              bank_q [Banks], bank_d [Banks];
  logic [TimeW-1:0]   bg_act_rem_q [BankGroups], bg_act_rem_d [BankGroups];
  logic [TimeW-1:0]   bg_rd_rem_q [BankGroups], bg_rd_rem_d [BankGroups];
  logic [TimeW-1:0]   bg_wr_rem_q [BankGroups], bg_wr_rem_d [BankGroups];
  logic [TimeW-1:0]   ch_act_rem_q, ch_act_rem_d, ch_rd_rem_q, ch_rd_rem_d;
  logic [TimeW-1:0]   ch_wr_rem_q, ch_wr_rem_d, ch_ref_rem_q, ch_ref_rem_d;
  logic [TimeW-1:0]   faw_rem_q [4], faw_rem_d [4];
  logic [1:0]         faw_ptr_q, faw_ptr_d;
  logic               write_mode_q, write_mode_d;
  logic [11:0]        rd_served_q;   // reads issued in this read phase, saturating at rd_batch
  logic signed [5:0]  ref_debt_q, ref_debt_d;
  logic [15:0]        ref_timer_q, ref_timer_d;
  logic [31:0]        now_q;
  logic               err_q, err_d;
  hbm_err_e           err_code_q, err_code_d;
  logic [31:0]        cnt_act_q, cnt_rd_q, cnt_wr_q, cnt_ref_q;

  // ------------------------------------------------------------------------------------------
  // Helpers

  function automatic logic [TimeW-1:0] dec(logic [TimeW-1:0] r);
    return (r == '0) ? '0 : r - 1'b1;
  endfunction
  // The countdown after a command needing `gap` cycles to the next one: max with what is left.
  function automatic logic [TimeW-1:0] after(logic [TimeW-1:0] r, logic [TimeW-1:0] gap);
    logic [TimeW-1:0] g;
    g = gap - 1'b1;
    return (dec(r) > g) ? dec(r) : g;
  endfunction
  // The bank group of a bank id: its low bits (consecutive KiB rotate bank groups).
  function automatic logic [BgW-1:0] bg_of(logic [BankW-1:0] b);
    return BgW'(b % BankW'(BankGroups));
  endfunction
  function automatic logic [TimeW-1:0] t16(logic [11:0] v);
    return TimeW'(v);
  endfunction

  // Address map: burst = addr / 32; column, bank id, channel (ch_bits), row, low to high.
  logic [BankW-1:0] rd_new_bank, wr_new_bank;
  logic [RowW-1:0]  rd_new_row, wr_new_row;
  logic [ColW-1:0]  rd_new_col, wr_new_col;
  logic             rd_new_bad, wr_new_bad;
  hbm_err_e         rd_new_err, wr_new_err;

  function automatic void decode(input logic [AddrW-1:0] addr, input logic [2:0] ch_bits,
                                 input logic xor_hash,
                                 output logic [BankW-1:0] bank, output logic [RowW-1:0] row,
                                 output logic [ColW-1:0] col, output hbm_err_e err);
    logic [AddrW-1:0] burst, upper;
    burst = addr >> 5;
    col = burst[ColW-1:0];
    upper = burst >> (ColW + BankW + 32'(ch_bits));
    row = upper[RowW-1:0];
    bank = burst[ColW+BankW-1:ColW] ^ (xor_hash ? fold4(row) : '0);
    if (addr[4:0] != '0) err = ErrAlign;
    else if ((upper >> RowW) != '0) err = ErrRange;
    else err = ErrNone;
  endfunction

  always_comb begin
    decode(rd_req_addr_i, cfg_i.ch_bits, cfg_i.xor_hash, rd_new_bank, rd_new_row, rd_new_col, rd_new_err);
    decode(wr_req_addr_i, cfg_i.ch_bits, cfg_i.xor_hash, wr_new_bank, wr_new_row, wr_new_col, wr_new_err);
    rd_new_bad = rd_new_err != ErrNone;
    wr_new_bad = wr_new_err != ErrNone;
  end

  // ------------------------------------------------------------------------------------------
  // Queue occupancy, blocking, and the oldest request

  logic [RdDepth-1:0] rd_valid;
  logic [WrDepth-1:0] wr_valid;
  logic [RdDepth-1:0] rd_blocked;
  logic [WrDepth-1:0] wr_blocked;
  logic [8:0]         rd_count, wr_count, rd_ready_count, wr_ready_count;

  always_comb begin
    rd_count = '0;
    wr_count = '0;
    rd_ready_count = '0;
    wr_ready_count = '0;
    for (int unsigned i = 0; i < RdDepth; i++) rd_valid[i] = rdq_q[i].valid;
    for (int unsigned i = 0; i < WrDepth; i++) wr_valid[i] = wrq_q[i].valid;
    for (int unsigned i = 0; i < RdDepth; i++) begin
      rd_blocked[i] = (rd_dep_wr_q[i] & wr_valid) != '0;
      rd_count += 9'(rd_valid[i]);
      rd_ready_count += 9'(rd_valid[i] && !rd_blocked[i]);
    end
    for (int unsigned i = 0; i < WrDepth; i++) begin
      wr_blocked[i] = ((wr_dep_rd_q[i] & rd_valid) != '0) || ((wr_dep_wr_q[i] & wr_valid) != '0);
      wr_count += 9'(wr_valid[i]);
      wr_ready_count += 9'(wr_valid[i] && !wr_blocked[i]);
    end
  end

  logic             oldest_found, oldest_write, urgent;
  logic [SlotW-1:0] oldest_slot;
  logic [31:0]      oldest_arrival;
  logic [BankW-1:0] oldest_bank;

  always_comb begin
    oldest_found = 1'b0;
    oldest_write = 1'b0;
    oldest_slot = '0;
    oldest_arrival = '0;
    oldest_bank = '0;
    // Reads first: on equal arrival (a read and a write accepted together) the read is older.
    for (int unsigned i = 0; i < RdDepth; i++)
      if (rdq_q[i].valid && (!oldest_found || rdq_q[i].arrival < oldest_arrival)) begin
        oldest_found = 1'b1;
        oldest_slot = SlotW'(i);
        oldest_arrival = rdq_q[i].arrival;
        oldest_bank = rdq_q[i].bank;
      end
    for (int unsigned i = 0; i < WrDepth; i++)
      if (wrq_q[i].valid && (!oldest_found || wrq_q[i].arrival < oldest_arrival)) begin
        oldest_found = 1'b1;
        oldest_write = 1'b1;
        oldest_slot = SlotW'(i);
        oldest_arrival = wrq_q[i].arrival;
        oldest_bank = wrq_q[i].bank;
      end
    urgent = oldest_found && (now_q - oldest_arrival >= 32'(cfg_i.age_cap));
  end

  // ------------------------------------------------------------------------------------------
  // Bank readiness and refresh state

  logic [Banks-1:0] act_ready, ref_ready, pre_ready, hit_pending, queued_any;
  logic             forced, forced_all, target_valid, all_closed, all_act_ok;
  logic [BankW-1:0] target;
  logic             dir;  // the direction of column commands this cycle: 1 write

  always_comb begin
    dir = cfg_i.fcfs ? oldest_write : write_mode_q;
    forced = ref_debt_q >= $signed({2'b0, cfg_i.max_postpone});
    forced_all = cfg_i.all_bank_ref && forced;
    target_valid = 1'b0;
    target = '0;
    all_closed = 1'b1;
    all_act_ok = 1'b1;
    for (int b = Banks - 1; b >= 0; b--)
      if (!cfg_i.all_bank_ref && forced && !bank_q[b].refreshed) begin
        target_valid = 1'b1;
        target = BankW'(b);
      end
    for (int unsigned b = 0; b < Banks; b++) begin
      act_ready[b] = !bank_q[b].open && bank_q[b].act_rem == '0 &&
                     bg_act_rem_q[bg_of(BankW'(b))] == '0 && ch_act_rem_q == '0 &&
                     faw_rem_q[faw_ptr_q] == '0;
      ref_ready[b] = !bank_q[b].open && bank_q[b].act_rem == '0 &&
                     bg_act_rem_q[bg_of(BankW'(b))] == '0 && ch_act_rem_q == '0 &&
                     ch_ref_rem_q == '0;
      pre_ready[b] = bank_q[b].open && bank_q[b].pre_rem == '0;
      all_closed &= !bank_q[b].open;
      all_act_ok &= bank_q[b].act_rem == '0;
    end
    hit_pending = '0;
    queued_any = '0;
    for (int unsigned i = 0; i < RdDepth; i++)
      if (rdq_q[i].valid) begin
        queued_any[rdq_q[i].bank] = 1'b1;
        if ((cfg_i.fcfs || !write_mode_q) && bank_q[rdq_q[i].bank].open &&
            bank_q[rdq_q[i].bank].row == rdq_q[i].row)
          hit_pending[rdq_q[i].bank] = 1'b1;
      end
    for (int unsigned i = 0; i < WrDepth; i++)
      if (wrq_q[i].valid) begin
        queued_any[wrq_q[i].bank] = 1'b1;
        if ((cfg_i.fcfs || write_mode_q) && bank_q[wrq_q[i].bank].open &&
            bank_q[wrq_q[i].bank].row == wrq_q[i].row)
          hit_pending[wrq_q[i].bank] = 1'b1;
      end
  end

  // ------------------------------------------------------------------------------------------
  // Column bus: the oldest candidate of the current direction whose RD/WR may go now

  logic        col_found;
  logic [SlotW-1:0] col_slot;
  logic [31:0] col_arrival;

  // Whether a RD (WR) to `row` of a bank may go now: the row is open and tRCD, tCCD, tWTR and
  // tRTW have passed (bank_rem: the bank's countdown; bg_rem, ch_rem: its group's, the channel's).
  function automatic logic col_ok(input logic [RowW-1:0] row, input logic open,
                                  input logic [RowW-1:0] open_row, input logic [TimeW-1:0] bank_rem,
                                  input logic [TimeW-1:0] bg_rem, input logic [TimeW-1:0] ch_rem);
    return open && open_row == row && bank_rem == '0 && bg_rem == '0 && ch_rem == '0;
  endfunction

  always_comb begin
    col_found = 1'b0;
    col_slot = '0;
    col_arrival = '0;
    if (!forced_all && !dir) begin
      for (int unsigned i = 0; i < RdDepth; i++)
        if (rdq_q[i].valid &&
            (cfg_i.fcfs ? (!oldest_write && oldest_slot == SlotW'(i)) : !rd_blocked[i]) &&
            !(target_valid && rdq_q[i].bank == target) &&
            !(urgent && rdq_q[i].bank == oldest_bank && !(!oldest_write && oldest_slot == SlotW'(i))) &&
            col_ok(rdq_q[i].row, bank_q[rdq_q[i].bank].open, bank_q[rdq_q[i].bank].row,
                   bank_q[rdq_q[i].bank].rd_rem, bg_rd_rem_q[bg_of(rdq_q[i].bank)], ch_rd_rem_q) &&
            (!col_found || rdq_q[i].arrival < col_arrival)) begin
          col_found = 1'b1;
          col_slot = SlotW'(i);
          col_arrival = rdq_q[i].arrival;
        end
    end else if (!forced_all) begin
      for (int unsigned i = 0; i < WrDepth; i++)
        if (wrq_q[i].valid &&
            (cfg_i.fcfs ? (oldest_write && oldest_slot == SlotW'(i)) : !wr_blocked[i]) &&
            !(target_valid && wrq_q[i].bank == target) &&
            !(urgent && wrq_q[i].bank == oldest_bank && !(oldest_write && oldest_slot == SlotW'(i))) &&
            col_ok(wrq_q[i].row, bank_q[wrq_q[i].bank].open, bank_q[wrq_q[i].bank].row,
                   bank_q[wrq_q[i].bank].wr_rem, bg_wr_rem_q[bg_of(wrq_q[i].bank)], ch_wr_rem_q) &&
            (!col_found || wrq_q[i].arrival < col_arrival)) begin
          col_found = 1'b1;
          col_slot = SlotW'(i);
          col_arrival = wrq_q[i].arrival;
        end
    end
  end

  // ------------------------------------------------------------------------------------------
  // Row bus: forced refresh, then the oldest request whose ACT/PRE may go, then opportunistic
  // refresh of idle banks

  hbm_cmd_e         row_cmd;
  logic [BankW-1:0] row_bank;
  logic [RowW-1:0]  row_row;

  // What a request needs on the row bus now: CmdAct, CmdPre or CmdNone.
  // A row is closed only when no request of the current direction still hits it (hits), unless
  // the request is the urgent one.
  function automatic hbm_cmd_e row_need(input logic [RowW-1:0] row, input logic open,
                                        input logic [RowW-1:0] open_row, input logic pre_rdy,
                                        input logic act_rdy, input logic hits,
                                        input logic is_urgent);
    if (!open) return act_rdy ? CmdAct : CmdNone;
    if (open_row != row && (!hits || is_urgent) && pre_rdy) return CmdPre;
    return CmdNone;
  endfunction

  always_comb begin
    logic        found;
    logic [31:0] best_arrival;
    hbm_cmd_e    need;
    logic [31:0] best_use;
    logic        any_open;
    row_cmd = CmdNone;
    row_bank = '0;
    row_row = '0;
    need = CmdNone;
    found = 1'b0;
    best_arrival = '0;
    best_use = '0;
    any_open = 1'b0;
    if (target_valid) begin
      if (pre_ready[target]) begin
        row_cmd = CmdPre;
        row_bank = target;
      end else if (ref_ready[target]) begin
        row_cmd = CmdRefPb;
        row_bank = target;
      end
    end else if (forced_all) begin
      for (int b = Banks - 1; b >= 0; b--)
        if (pre_ready[b]) begin
          row_cmd = CmdPre;
          row_bank = BankW'(b);
        end
      if (all_closed && all_act_ok && ch_ref_rem_q == '0) begin
        row_cmd = CmdRefAb;
      end
    end
    if (row_cmd == CmdNone && !forced_all) begin
      for (int unsigned i = 0; i < RdDepth; i++)
        if (rdq_q[i].valid && (cfg_i.fcfs || (!write_mode_q && !rd_blocked[i])) &&
            !(target_valid && rdq_q[i].bank == target)) begin
          need = row_need(rdq_q[i].row, bank_q[rdq_q[i].bank].open, bank_q[rdq_q[i].bank].row,
                          pre_ready[rdq_q[i].bank], act_ready[rdq_q[i].bank],
                          hit_pending[rdq_q[i].bank],
                          urgent && !oldest_write && oldest_slot == SlotW'(i));
          if (need != CmdNone && (!found || rdq_q[i].arrival < best_arrival)) begin
            found = 1'b1;
            best_arrival = rdq_q[i].arrival;
            row_cmd = need;
            row_bank = rdq_q[i].bank;
            row_row = (need == CmdAct) ? rdq_q[i].row : '0;
          end
        end
      for (int unsigned i = 0; i < WrDepth; i++)
        if (wrq_q[i].valid && (cfg_i.fcfs || (write_mode_q && !wr_blocked[i])) &&
            !(target_valid && wrq_q[i].bank == target)) begin
          need = row_need(wrq_q[i].row, bank_q[wrq_q[i].bank].open, bank_q[wrq_q[i].bank].row,
                          pre_ready[wrq_q[i].bank], act_ready[wrq_q[i].bank],
                          hit_pending[wrq_q[i].bank],
                          urgent && oldest_write && oldest_slot == SlotW'(i));
          if (need != CmdNone && (!found || wrq_q[i].arrival < best_arrival)) begin
            found = 1'b1;
            best_arrival = wrq_q[i].arrival;
            row_cmd = need;
            row_bank = wrq_q[i].bank;
            row_row = (need == CmdAct) ? wrq_q[i].row : '0;
          end
        end
    end
    if (row_cmd == CmdNone && !cfg_i.all_bank_ref &&
        ref_debt_q > -$signed({2'b0, cfg_i.max_pull_in})) begin
      // An idle bank ahead of need: the most recently used (least likely wanted soon) first.
      found = 1'b0;
      for (int unsigned b = 0; b < Banks; b++)
        if (!bank_q[b].refreshed && !queued_any[b] && ref_ready[b] &&
            (!found || bank_q[b].last_use > best_use)) begin
          found = 1'b1;
          best_use = bank_q[b].last_use;
          row_cmd = CmdRefPb;
          row_bank = BankW'(b);
        end
      if (!found && ref_debt_q > 6'sd0)
        for (int b = Banks - 1; b >= 0; b--)
          if (!bank_q[b].refreshed && !queued_any[b] && pre_ready[b]) begin
            row_cmd = CmdPre;
            row_bank = BankW'(b);
          end
    end
    if (row_cmd == CmdNone && cfg_i.all_bank_ref && !forced_all &&
        ref_debt_q > -$signed({2'b0, cfg_i.max_pull_in}) && !oldest_found) begin
      for (int b = Banks - 1; b >= 0; b--) begin
        any_open |= bank_q[b].open;
        if (pre_ready[b]) begin
          row_cmd = CmdPre;
          row_bank = BankW'(b);
        end
      end
      if (!any_open && all_act_ok && ch_ref_rem_q == '0) row_cmd = CmdRefAb;
    end
  end

  // ------------------------------------------------------------------------------------------
  // Next state

  logic             write_mode_next;
  logic             rd_accept, wr_accept;
  logic [RdW-1:0]   rd_ins;
  logic [WrW-1:0]   wr_ins;
  logic             col_is_rd, col_is_wr;
  logic [BankW-1:0] col_bank;
  logic [RowW-1:0]  col_row;
  logic [ColW-1:0]  col_col;
  logic [IdW-1:0]   col_id;

  assign rd_req_ready_o = rd_count < 9'(RdDepth);
  assign wr_req_ready_o = wr_count < 9'(WrDepth);
  assign rd_accept = rd_req_valid_i && rd_req_ready_o;
  assign wr_accept = wr_req_valid_i && wr_req_ready_o;
  assign col_is_rd = col_found && !dir;
  assign col_is_wr = col_found && dir;
  assign col_bank = dir ? wrq_q[col_slot[WrW-1:0]].bank : rdq_q[col_slot[RdW-1:0]].bank;
  assign col_row = dir ? wrq_q[col_slot[WrW-1:0]].row : rdq_q[col_slot[RdW-1:0]].row;
  assign col_col = dir ? wrq_q[col_slot[WrW-1:0]].col : rdq_q[col_slot[RdW-1:0]].col;
  assign col_id = dir ? wrq_q[col_slot[WrW-1:0]].id : rdq_q[col_slot[RdW-1:0]].id;

  always_comb begin
    // Direction for the next cycle.
    if (urgent) write_mode_next = oldest_write;
    else if (!write_mode_q)
      write_mode_next = (wr_count >= cfg_i.wr_high && rd_served_q >= cfg_i.rd_batch) ||
                        (rd_ready_count == '0 && wr_count != '0);
    else
      write_mode_next = !(wr_count == '0 || (rd_ready_count != '0 &&
                          (wr_count <= cfg_i.wr_low || wr_ready_count == '0)));
    // The lowest free slots at the start of the cycle.
    rd_ins = '0;
    wr_ins = '0;
    for (int i = RdDepth - 1; i >= 0; i--) if (!rdq_q[i].valid) rd_ins = RdW'(i);
    for (int i = WrDepth - 1; i >= 0; i--) if (!wrq_q[i].valid) wr_ins = WrW'(i);
  end

  always_comb begin
    logic [TimeW-1:0] gap_wr_pre, gap_wr_rd_s, gap_wr_rd_l;
    logic             all_refreshed;
    all_refreshed = 1'b0;
    gap_wr_pre = t16(cfg_i.cwl) + t16(cfg_i.bl) + t16(cfg_i.wr);
    gap_wr_rd_s = t16(cfg_i.cwl) + t16(cfg_i.bl) + t16(cfg_i.wtr_s);
    gap_wr_rd_l = t16(cfg_i.cwl) + t16(cfg_i.bl) + t16(cfg_i.wtr_l);

    // Timing countdowns run down by one each cycle.
    for (int unsigned b = 0; b < Banks; b++) begin
      bank_d[b] = bank_q[b];
      bank_d[b].act_rem = dec(bank_q[b].act_rem);
      bank_d[b].pre_rem = dec(bank_q[b].pre_rem);
      bank_d[b].rd_rem = dec(bank_q[b].rd_rem);
      bank_d[b].wr_rem = dec(bank_q[b].wr_rem);
    end
    for (int unsigned g = 0; g < BankGroups; g++) begin
      bg_act_rem_d[g] = dec(bg_act_rem_q[g]);
      bg_rd_rem_d[g] = dec(bg_rd_rem_q[g]);
      bg_wr_rem_d[g] = dec(bg_wr_rem_q[g]);
    end
    ch_act_rem_d = dec(ch_act_rem_q);
    ch_rd_rem_d = dec(ch_rd_rem_q);
    ch_wr_rem_d = dec(ch_wr_rem_q);
    ch_ref_rem_d = dec(ch_ref_rem_q);
    for (int unsigned k = 0; k < 4; k++) faw_rem_d[k] = dec(faw_rem_q[k]);
    faw_ptr_d = faw_ptr_q;
    ref_debt_d = ref_debt_q;

    // Row command.
    unique case (row_cmd)
      CmdAct: begin
        bank_d[row_bank].open = 1'b1;
        bank_d[row_bank].row = row_row;
        bank_d[row_bank].rd_rem = t16(cfg_i.rcd_rd) - 1'b1;
        bank_d[row_bank].wr_rem = t16(cfg_i.rcd_wr) - 1'b1;
        bank_d[row_bank].pre_rem = after(bank_q[row_bank].pre_rem, t16(cfg_i.ras));
        bank_d[row_bank].act_rem = after(bank_q[row_bank].act_rem, t16(cfg_i.rc));
        bg_act_rem_d[bg_of(row_bank)] = after(bg_act_rem_q[bg_of(row_bank)], t16(cfg_i.rrd_l));
        ch_act_rem_d = after(ch_act_rem_q, t16(cfg_i.rrd_s));
        faw_rem_d[faw_ptr_q] = t16(cfg_i.faw) - 1'b1;
        faw_ptr_d = faw_ptr_q + 1'b1;
      end
      CmdPre: begin
        bank_d[row_bank].open = 1'b0;
        bank_d[row_bank].act_rem = after(bank_q[row_bank].act_rem, t16(cfg_i.rp));
        bank_d[row_bank].last_use = now_q;
      end
      CmdRefPb: begin
        bank_d[row_bank].act_rem = after(bank_q[row_bank].act_rem, t16(cfg_i.rfcpb));
        bank_d[row_bank].refreshed = 1'b1;
        ch_ref_rem_d = after(ch_ref_rem_q, t16(cfg_i.rrefd));
        ch_act_rem_d = after(ch_act_rem_q, t16(cfg_i.rrefd));
        all_refreshed = 1'b1;
        for (int unsigned b = 0; b < Banks; b++) all_refreshed &= bank_d[b].refreshed;
        if (all_refreshed)
          for (int unsigned b = 0; b < Banks; b++) bank_d[b].refreshed = 1'b0;
        ref_debt_d = ref_debt_q - 6'sd1;
      end
      CmdRefAb: begin
        for (int unsigned b = 0; b < Banks; b++)
          bank_d[b].act_rem = after(bank_q[b].act_rem, t16(cfg_i.rfc));
        ch_ref_rem_d = after(ch_ref_rem_q, t16(cfg_i.rfc));
        ref_debt_d = ref_debt_q - 6'sd1;
      end
      default: ;
    endcase

    // Column command.
    if (col_found) begin
      bank_d[col_bank].last_use = now_q;
      if (!dir) begin
        bank_d[col_bank].pre_rem = after(bank_q[col_bank].pre_rem, t16(cfg_i.rtp));
        bg_rd_rem_d[bg_of(col_bank)] =
            after(bg_rd_rem_q[bg_of(col_bank)], t16(cfg_i.ccd_l));
        ch_rd_rem_d = after(ch_rd_rem_q, t16(cfg_i.ccd_s));
        ch_wr_rem_d = after(ch_wr_rem_q, t16(cfg_i.rtw));
      end else begin
        bank_d[col_bank].pre_rem = after(bank_q[col_bank].pre_rem, gap_wr_pre);
        bg_wr_rem_d[bg_of(col_bank)] =
            after(bg_wr_rem_q[bg_of(col_bank)], t16(cfg_i.ccd_l));
        ch_wr_rem_d = after(ch_wr_rem_q, t16(cfg_i.ccd_s));
        ch_rd_rem_d = after(ch_rd_rem_q, gap_wr_rd_s);
        bg_rd_rem_d[bg_of(col_bank)] =
            after(bg_rd_rem_q[bg_of(col_bank)], gap_wr_rd_l);
      end
    end

    // Refresh owed: one every tREFI / banks (per-bank) or tREFI (all-bank).
    ref_timer_d = ref_timer_q + 1'b1;
    if (ref_timer_q == (cfg_i.all_bank_ref ? cfg_i.refi : (cfg_i.refi >> 4)) - 1'b1) begin
      ref_timer_d = '0;
      ref_debt_d = ref_debt_d + 6'sd1;
    end

  end

  // Queues: retire the served request, drop it from everyone's wait list, insert new ones.
  logic rd_new_valid, wr_new_valid;
  assign rd_new_valid = rd_accept && !rd_new_bad;
  assign wr_new_valid = wr_accept && !wr_new_bad;

  always_comb begin
    for (int unsigned i = 0; i < RdDepth; i++) begin
      rdq_d[i] = rdq_q[i];
      rd_dep_wr_d[i] = rd_dep_wr_q[i];
    end
    for (int unsigned i = 0; i < WrDepth; i++) begin
      wrq_d[i] = wrq_q[i];
      wr_dep_rd_d[i] = wr_dep_rd_q[i];
      wr_dep_wr_d[i] = wr_dep_wr_q[i];
    end
    if (col_is_rd) begin
      rdq_d[col_slot[RdW-1:0]].valid = 1'b0;
      for (int unsigned i = 0; i < WrDepth; i++) wr_dep_rd_d[i][col_slot[RdW-1:0]] = 1'b0;
    end
    if (col_is_wr) begin
      wrq_d[col_slot[WrW-1:0]].valid = 1'b0;
      for (int unsigned i = 0; i < RdDepth; i++) rd_dep_wr_d[i][col_slot[WrW-1:0]] = 1'b0;
      for (int unsigned i = 0; i < WrDepth; i++) wr_dep_wr_d[i][col_slot[WrW-1:0]] = 1'b0;
    end
    if (rd_new_valid) begin
      rdq_d[rd_ins] = '{valid: 1'b1, bank: rd_new_bank, row: rd_new_row, col: rd_new_col,
                        id: rd_req_id_i, arrival: now_q};
      for (int unsigned i = 0; i < WrDepth; i++)
        rd_dep_wr_d[rd_ins][i] = wrq_d[i].valid && wrq_q[i].bank == rd_new_bank &&
                                 wrq_q[i].row == rd_new_row && wrq_q[i].col == rd_new_col;
    end
    if (wr_new_valid) begin
      wrq_d[wr_ins] = '{valid: 1'b1, bank: wr_new_bank, row: wr_new_row, col: wr_new_col,
                        id: wr_req_id_i, arrival: now_q};
      for (int unsigned i = 0; i < RdDepth; i++)
        wr_dep_rd_d[wr_ins][i] = rdq_d[i].valid && rdq_d[i].bank == wr_new_bank &&
                                 rdq_d[i].row == wr_new_row && rdq_d[i].col == wr_new_col;
      for (int unsigned i = 0; i < WrDepth; i++)
        wr_dep_wr_d[wr_ins][i] = wrq_d[i].valid && 32'(i) != 32'(wr_ins) &&
                                 wrq_q[i].bank == wr_new_bank && wrq_q[i].row == wr_new_row &&
                                 wrq_q[i].col == wr_new_col;
    end

  end

  // The first refused request sets the error status.
  always_comb begin
    err_d = err_q;
    err_code_d = err_code_q;
    if (!err_q && rd_accept && rd_new_bad) begin
      err_d = 1'b1;
      err_code_d = rd_new_err;
    end else if (!err_q && wr_accept && wr_new_bad) begin
      err_d = 1'b1;
      err_code_d = wr_new_err;
    end
  end

  // ------------------------------------------------------------------------------------------
  // Read data return: the ids of reads in flight, oldest first

  logic [IdW-1:0] inflight_id;
  logic           inflight_valid, inflight_ready;

  nc_fifo #(.T(logic [IdW-1:0]), .Depth(InFlight)) u_inflight (
    .clk_i, .rst_ni,
    .in_valid_i (col_is_rd),
    .in_ready_o (inflight_ready),
    .in_data_i  (col_id),
    .out_valid_o(inflight_valid),
    .out_ready_i(dram_rd_valid_i),
    .out_data_o (inflight_id)
  );

  assign rsp_valid_o = dram_rd_valid_i;
  assign rsp_id_o = inflight_id;
  assign rsp_data_o = dram_rd_data_i;

  // ------------------------------------------------------------------------------------------
  // Outputs and registers

  assign row_cmd_o = row_cmd;
  assign row_bank_o = row_bank;
  assign row_row_o = row_row;
  assign col_cmd_o = !col_found ? CmdNone : (dir ? CmdWr : CmdRd);
  assign col_bank_o = col_bank;
  assign col_row_o = col_row;
  assign col_col_o = col_col;
  assign col_id_o = col_id;
  assign col_wdata_o = wr_data_q[col_slot[WrW-1:0]];
  assign err_o = err_q;
  assign err_code_o = err_code_q;
  assign idle_o = rd_count == '0 && wr_count == '0 && !inflight_valid;
  assign write_mode_o = write_mode_q;
  assign ref_debt_o = ref_debt_q;
  assign rd_count_o = rd_count;
  assign wr_count_o = wr_count;
  assign cnt_act_o = cnt_act_q;
  assign cnt_rd_o = cnt_rd_q;
  assign cnt_wr_o = cnt_wr_q;
  assign cnt_ref_o = cnt_ref_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rdq_q <= '{default: '0};
      rd_dep_wr_q <= '{default: '0};
      wrq_q <= '{default: '0};
      wr_dep_rd_q <= '{default: '0};
      wr_dep_wr_q <= '{default: '0};
      bank_q <= '{default: '0};
      bg_act_rem_q <= '{default: '0};
      bg_rd_rem_q <= '{default: '0};
      bg_wr_rem_q <= '{default: '0};
      faw_rem_q <= '{default: '0};
      ch_act_rem_q <= '0;
      ch_rd_rem_q <= '0;
      ch_wr_rem_q <= '0;
      ch_ref_rem_q <= '0;
      faw_ptr_q <= '0;
      write_mode_q <= 1'b0;
      rd_served_q <= '0;
      ref_debt_q <= '0;
      ref_timer_q <= '0;
      now_q <= '0;
      err_q <= 1'b0;
      err_code_q <= ErrNone;
      cnt_act_q <= '0;
      cnt_rd_q <= '0;
      cnt_wr_q <= '0;
      cnt_ref_q <= '0;
    end else begin
      rdq_q <= rdq_d;
      wrq_q <= wrq_d;
      rd_dep_wr_q <= rd_dep_wr_d;
      wr_dep_rd_q <= wr_dep_rd_d;
      wr_dep_wr_q <= wr_dep_wr_d;
      bank_q <= bank_d;
      bg_act_rem_q <= bg_act_rem_d;
      bg_rd_rem_q <= bg_rd_rem_d;
      bg_wr_rem_q <= bg_wr_rem_d;
      faw_rem_q <= faw_rem_d;
      ch_act_rem_q <= ch_act_rem_d;
      ch_rd_rem_q <= ch_rd_rem_d;
      ch_wr_rem_q <= ch_wr_rem_d;
      ch_ref_rem_q <= ch_ref_rem_d;
      faw_ptr_q <= faw_ptr_d;
      write_mode_q <= write_mode_d;
      if (write_mode_d && !write_mode_q) rd_served_q <= '0;
      else if (col_is_rd && rd_served_q < cfg_i.rd_batch) rd_served_q <= rd_served_q + 1'b1;
      ref_debt_q <= ref_debt_d;
      ref_timer_q <= ref_timer_d;
      now_q <= now_q + 1'b1;
      err_q <= err_d;
      err_code_q <= err_code_d;
      cnt_act_q <= cnt_act_q + 32'(row_cmd == CmdAct);
      cnt_rd_q <= cnt_rd_q + 32'(col_is_rd);
      cnt_wr_q <= cnt_wr_q + 32'(col_is_wr);
      cnt_ref_q <= cnt_ref_q + 32'(row_cmd == CmdRefPb || row_cmd == CmdRefAb);
    end
  end
  assign write_mode_d = write_mode_next;

  // Write data: written at acceptance, read when the WR goes out. No reset: a slot's data is
  // only read after a write filled it.
  always_ff @(posedge clk_i) begin
    if (wr_accept && !wr_new_bad) wr_data_q[wr_ins] <= wr_req_data_i;
  end

  // ------------------------------------------------------------------------------------------
  // Assertions

  `NC_ASSERT_HANDSHAKE(RdReqStable, rd_req_valid_i, rd_req_ready_o, {rd_req_addr_i, rd_req_id_i})
  `NC_ASSERT_HANDSHAKE(WrReqStable, wr_req_valid_i, wr_req_ready_o,
                       {wr_req_addr_i, wr_req_id_i, wr_req_data_i})
  // DRAM read data only for a read in flight, and never more reads in flight than tracked.
  `NC_ASSERT(DramDataOnlyWhenExpected, dram_rd_valid_i |-> inflight_valid)
  `NC_ASSERT(InFlightNeverOverflows, col_is_rd |-> inflight_ready)
  // A column command goes to the open row of an open bank; a row command respects the bank state.
  logic col_bank_open, col_row_match, row_bank_open;
  assign col_bank_open = bank_q[col_bank_o].open;
  assign col_row_match = bank_q[col_bank_o].row == col_row_o;
  assign row_bank_open = bank_q[row_bank].open;
  `NC_ASSERT(ColumnHitsOpenRow, col_found |-> col_bank_open && col_row_match)
  `NC_ASSERT(ActOnClosedBank, row_cmd == CmdAct |-> !row_bank_open)
  `NC_ASSERT(RefreshOnClosedBank, row_cmd == CmdRefPb |-> !row_bank_open)
  `NC_ASSERT(NoPreOfBankBeingRead, row_cmd == CmdPre && col_found |-> row_bank != col_bank_o)
  // Refresh is never owed past the postponement limit plus the one being forced.
  `NC_ASSERT(RefreshDebtBounded, ref_debt_q <= $signed({2'b0, cfg_i.max_postpone}) + 6'sd1)
  // The configuration keeps write data clear of read data on the bus (the only use of CL here).
  `NC_ASSERT(ConfigTurnaroundCoversReadData,
             32'(cfg_i.rtw) + 32'(cfg_i.cwl) >= 32'(cfg_i.cl) + 32'(cfg_i.bl))
  `NC_ASSERT(QueueCountsInRange, rd_count <= 9'(RdDepth) && wr_count <= 9'(WrDepth))
  // A read phase with reads still ready ends early only for an urgent request.
  `NC_ASSERT(ReadPhaseServesTheBatch,
             !cfg_i.fcfs && !write_mode_q && write_mode_d && rd_ready_count != '0 && !urgent
             |-> rd_served_q >= cfg_i.rd_batch)
endmodule
