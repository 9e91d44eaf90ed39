// HBM3 pseudo-channel controller with request reordering (rtl/hbm/README.md).
//
// Two request ports (read, write) feed a read queue and a write queue. Each cycle at most one
// column command (RD/WR) and one row command (ACT/PRE/REFpb/REFab) go out, under HBM3 timing
// kept as countdowns. The controller owns the mechanism: the queues, the same-address order
// (a request waits for older conflicting requests to its burst), the age cap (the oldest
// request, once older than age_cap, is urgent), the banks and the timing. Its two policies are
// blocks of their own, each the hardware of a model interface (model/hbm/channel.h, the same
// command trace cycle for cycle):
//   - nc_hbm_sched: which request's RD/WR and ACT/PRE go (batched FR-FCFS or FCFS);
//   - nc_hbm_refresh: when refreshes are owed and which refresh goes (per-bank or all-bank).
// The row bus goes to a forced refresh first, then to the scheduler, then to a refresh ahead
// of need. Read data comes back from the DRAM (dram_rd_*) CL + BL cycles after the RD; it
// leaves on the response port in the same cycle, tagged with the request's id.
`include "nc_assert.svh"

module nc_hbm_ctrl
  import nc_isa_pkg::*;
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
  output isa_hbm_cmd_e             row_cmd_o,
  output logic [BankW-1:0]     row_bank_o,
  output logic [RowW-1:0]      row_row_o,
  output isa_hbm_cmd_e             col_cmd_o,
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
  output isa_hbm_error_e             err_code_o,
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
    logic               open;
    logic [RowW-1:0]    row;
    logic [TimeW-1:0]   act_rem, pre_rem, rd_rem, wr_rem;  // cycles until the command may go
    logic [31:0]        last_use;
  } bank_t;

  hbm_slot_t          rdq_q [RdDepth], rdq_d [RdDepth];
  hbm_slot_t          wrq_q [WrDepth], wrq_d [WrDepth];
  logic [IdW-1:0]     rd_id_q [RdDepth], wr_id_q [WrDepth];       // the requests' ids
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
  logic [31:0]        now_q;
  logic               err_q, err_d;
  isa_hbm_error_e           err_code_q, err_code_d;
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
  isa_hbm_error_e         rd_new_err, wr_new_err;

  function automatic void decode(input logic [AddrW-1:0] addr, input logic [2:0] ch_bits,
                                 input logic xor_hash,
                                 output logic [BankW-1:0] bank, output logic [RowW-1:0] row,
                                 output logic [ColW-1:0] col, output isa_hbm_error_e err);
    logic [AddrW-1:0] burst, upper;
    burst = addr >> 5;
    col = burst[ColW-1:0];
    upper = burst >> (ColW + BankW + 32'(ch_bits));
    row = upper[RowW-1:0];
    bank = burst[ColW+BankW-1:ColW] ^ (xor_hash ? fold4(row) : '0);
    if (addr[4:0] != '0) err = HbmErrorAlign;
    else if ((upper >> RowW) != '0) err = HbmErrorRange;
    else err = HbmErrorNone;
  endfunction

  always_comb begin
    decode(rd_req_addr_i, cfg_i.ch_bits, cfg_i.xor_hash, rd_new_bank, rd_new_row, rd_new_col, rd_new_err);
    decode(wr_req_addr_i, cfg_i.ch_bits, cfg_i.xor_hash, wr_new_bank, wr_new_row, wr_new_col, wr_new_err);
    rd_new_bad = rd_new_err != HbmErrorNone;
    wr_new_bad = wr_new_err != HbmErrorNone;
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
  // Bank readiness

  logic [Banks-1:0] act_ready, ref_ready, pre_ready, rd_ok, wr_ok, open, queued_any;
  logic             all_ref_ready;
  logic [RowW-1:0]  open_row [Banks];
  logic [31:0]      last_use [Banks];

  always_comb begin
    all_ref_ready = ch_ref_rem_q == '0;
    for (int unsigned b = 0; b < Banks; b++) begin
      open[b] = bank_q[b].open;
      open_row[b] = bank_q[b].row;
      last_use[b] = bank_q[b].last_use;
      act_ready[b] = !bank_q[b].open && bank_q[b].act_rem == '0 &&
                     bg_act_rem_q[bg_of(BankW'(b))] == '0 && ch_act_rem_q == '0 &&
                     faw_rem_q[faw_ptr_q] == '0;
      ref_ready[b] = !bank_q[b].open && bank_q[b].act_rem == '0 &&
                     bg_act_rem_q[bg_of(BankW'(b))] == '0 && ch_act_rem_q == '0 &&
                     ch_ref_rem_q == '0;
      pre_ready[b] = bank_q[b].open && bank_q[b].pre_rem == '0;
      rd_ok[b] = bank_q[b].rd_rem == '0 && bg_rd_rem_q[bg_of(BankW'(b))] == '0 && ch_rd_rem_q == '0;
      wr_ok[b] = bank_q[b].wr_rem == '0 && bg_wr_rem_q[bg_of(BankW'(b))] == '0 && ch_wr_rem_q == '0;
      all_ref_ready &= !bank_q[b].open && bank_q[b].act_rem == '0;
    end
    queued_any = '0;
    for (int unsigned i = 0; i < RdDepth; i++) if (rdq_q[i].valid) queued_any[rdq_q[i].bank] = 1'b1;
    for (int unsigned i = 0; i < WrDepth; i++) if (wrq_q[i].valid) queued_any[wrq_q[i].bank] = 1'b1;
  end

  // ------------------------------------------------------------------------------------------
  // The policies: refresh, then the scheduler (which keeps out of what a refresh holds)

  logic             hold_bank_valid, hold_all;
  logic [BankW-1:0] hold_bank;
  isa_hbm_cmd_e         forced_cmd, opp_cmd, sched_row_cmd;
  logic [BankW-1:0] forced_bank, opp_bank, sched_row_bank;
  logic [RowW-1:0]  sched_row_row;
  logic             col_found, dir;  // dir: the column command's queue (1: writes)
  logic [SlotW-1:0] col_slot;
  isa_hbm_cmd_e         row_cmd;
  logic [BankW-1:0] row_bank;
  logic [RowW-1:0]  row_row;

  nc_hbm_refresh u_refresh (
    .clk_i, .rst_ni, .cfg_i,
    .ref_ready_i      (ref_ready),
    .pre_ready_i      (pre_ready),
    .all_ref_ready_i  (all_ref_ready),
    .last_use_i       (last_use),
    .queued_any_i     (queued_any),
    .requests_i       (oldest_found),
    .row_cmd_i        (row_cmd),
    .row_bank_i       (row_bank),
    .hold_bank_valid_o(hold_bank_valid),
    .hold_bank_o      (hold_bank),
    .hold_all_o       (hold_all),
    .forced_cmd_o     (forced_cmd),
    .forced_bank_o    (forced_bank),
    .opp_cmd_o        (opp_cmd),
    .opp_bank_o       (opp_bank),
    .debt_o           (ref_debt_o)
  );

  nc_hbm_sched #(.RdDepth(RdDepth), .WrDepth(WrDepth)) u_sched (
    .clk_i, .rst_ni, .cfg_i,
    .rdq_i            (rdq_q),
    .wrq_i            (wrq_q),
    .rd_blocked_i     (rd_blocked),
    .wr_blocked_i     (wr_blocked),
    .rd_ready_count_i (rd_ready_count),
    .wr_count_i       (wr_count),
    .wr_ready_count_i (wr_ready_count),
    .oldest_found_i   (oldest_found),
    .oldest_write_i   (oldest_write),
    .oldest_slot_i    (oldest_slot),
    .oldest_bank_i    (oldest_bank),
    .urgent_i         (urgent),
    .open_i           (open),
    .open_row_i       (open_row),
    .act_ready_i      (act_ready),
    .pre_ready_i      (pre_ready),
    .rd_ok_i          (rd_ok),
    .wr_ok_i          (wr_ok),
    .hold_bank_valid_i(hold_bank_valid),
    .hold_bank_i      (hold_bank),
    .hold_all_i       (hold_all),
    .col_found_o      (col_found),
    .col_write_o      (dir),
    .col_slot_o       (col_slot),
    .row_cmd_o        (sched_row_cmd),
    .row_bank_o       (sched_row_bank),
    .row_row_o        (sched_row_row),
    .write_mode_o
  );

  // The row bus: a forced refresh, else the scheduler's ACT/PRE, else a refresh ahead of need.
  always_comb begin
    row_cmd = forced_cmd;
    row_bank = forced_bank;
    row_row = '0;
    if (forced_cmd == HbmCmdNone && !hold_all && sched_row_cmd != HbmCmdNone) begin
      row_cmd = sched_row_cmd;
      row_bank = sched_row_bank;
      row_row = sched_row_row;
    end else if (forced_cmd == HbmCmdNone) begin
      row_cmd = opp_cmd;
      row_bank = opp_bank;
    end
  end

  // ------------------------------------------------------------------------------------------
  // Next state

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
  assign col_id = dir ? wr_id_q[col_slot[WrW-1:0]] : rd_id_q[col_slot[RdW-1:0]];

  // The lowest free slots at the start of the cycle.
  always_comb begin
    rd_ins = '0;
    wr_ins = '0;
    for (int i = RdDepth - 1; i >= 0; i--) if (!rdq_q[i].valid) rd_ins = RdW'(i);
    for (int i = WrDepth - 1; i >= 0; i--) if (!wrq_q[i].valid) wr_ins = WrW'(i);
  end

  always_comb begin
    logic [TimeW-1:0] gap_wr_pre, gap_wr_rd_s, gap_wr_rd_l;
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

    // Row command.
    unique case (row_cmd)
      HbmCmdAct: begin
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
      HbmCmdPre: begin
        bank_d[row_bank].open = 1'b0;
        bank_d[row_bank].act_rem = after(bank_q[row_bank].act_rem, t16(cfg_i.rp));
        bank_d[row_bank].last_use = now_q;
      end
      HbmCmdRefPb: begin
        bank_d[row_bank].act_rem = after(bank_q[row_bank].act_rem, t16(cfg_i.rfcpb));
        ch_ref_rem_d = after(ch_ref_rem_q, t16(cfg_i.rrefd));
        ch_act_rem_d = after(ch_act_rem_q, t16(cfg_i.rrefd));
      end
      HbmCmdRefAb: begin
        for (int unsigned b = 0; b < Banks; b++)
          bank_d[b].act_rem = after(bank_q[b].act_rem, t16(cfg_i.rfc));
        ch_ref_rem_d = after(ch_ref_rem_q, t16(cfg_i.rfc));
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
                        arrival: now_q};
      for (int unsigned i = 0; i < WrDepth; i++)
        rd_dep_wr_d[rd_ins][i] = wrq_d[i].valid && wrq_q[i].bank == rd_new_bank &&
                                 wrq_q[i].row == rd_new_row && wrq_q[i].col == rd_new_col;
    end
    if (wr_new_valid) begin
      wrq_d[wr_ins] = '{valid: 1'b1, bank: wr_new_bank, row: wr_new_row, col: wr_new_col,
                        arrival: now_q};
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
  assign col_cmd_o = !col_found ? HbmCmdNone : (dir ? HbmCmdWr : HbmCmdRd);
  assign col_bank_o = col_bank;
  assign col_row_o = col_row;
  assign col_col_o = col_col;
  assign col_id_o = col_id;
  assign col_wdata_o = wr_data_q[col_slot[WrW-1:0]];
  assign err_o = err_q;
  assign err_code_o = err_code_q;
  assign idle_o = rd_count == '0 && wr_count == '0 && !inflight_valid;
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
      now_q <= '0;
      err_q <= 1'b0;
      err_code_q <= HbmErrorNone;
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
      now_q <= now_q + 1'b1;
      err_q <= err_d;
      err_code_q <= err_code_d;
      cnt_act_q <= cnt_act_q + 32'(row_cmd == HbmCmdAct);
      cnt_rd_q <= cnt_rd_q + 32'(col_is_rd);
      cnt_wr_q <= cnt_wr_q + 32'(col_is_wr);
      cnt_ref_q <= cnt_ref_q + 32'(row_cmd == HbmCmdRefPb || row_cmd == HbmCmdRefAb);
    end
  end

  // Ids and write data: written at acceptance, read when the RD/WR goes out. No reset: a slot's
  // are only read after a request filled it.
  always_ff @(posedge clk_i) begin
    if (rd_accept && !rd_new_bad) rd_id_q[rd_ins] <= rd_req_id_i;
    if (wr_accept && !wr_new_bad) begin
      wr_id_q[wr_ins] <= wr_req_id_i;
      wr_data_q[wr_ins] <= wr_req_data_i;
    end
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
  `NC_ASSERT(ActOnClosedBank, row_cmd == HbmCmdAct |-> !row_bank_open)
  `NC_ASSERT(RefreshOnClosedBank, row_cmd == HbmCmdRefPb |-> !row_bank_open)
  `NC_ASSERT(NoPreOfBankBeingRead, row_cmd == HbmCmdPre && col_found |-> row_bank != col_bank_o)
  // The configuration keeps write data clear of read data on the bus (the only use of CL here).
  `NC_ASSERT(ConfigTurnaroundCoversReadData,
             32'(cfg_i.rtw) + 32'(cfg_i.cwl) >= 32'(cfg_i.cl) + 32'(cfg_i.bl))
  `NC_ASSERT(QueueCountsInRange, rd_count <= 9'(RdDepth) && wr_count <= 9'(WrDepth))
endmodule
