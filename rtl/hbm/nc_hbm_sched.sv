// The request scheduler of an HBM3 pseudo-channel (model/hbm/scheduler.h, the same decisions):
// which queued request gets the column bus (RD/WR) and which the row bus (ACT/PRE) this cycle.
//   - reorder (batched FR-FCFS, cfg_i.fcfs 0): one direction at a time. Writes drain in
//     batches between the high and the low watermark; a read phase serves at least rd_batch
//     reads while reads wait. In the direction, the oldest request whose RD/WR is ready goes
//     first; the oldest whose ACT/PRE is ready gets the row bus; a row stays open while
//     requests of the direction still hit it.
//   - fcfs: the column bus serves strictly the oldest request; any request may get its ACT or
//     PRE ahead of its turn; a row stays open while any request hits it.
// Both: a blocked request (waiting for an older one to its burst) waits; the urgent request
// (the oldest, past the age cap) owns its bank and may close a row others still hit; nothing
// goes to a bank a forced refresh holds (hold_*).
`include "nc_assert.svh"

module nc_hbm_sched
  import nc_isa_pkg::*;
  import nc_hbm_pkg::*;
#(
  parameter int unsigned RdDepth = 64,
  parameter int unsigned WrDepth = 256,
  localparam int unsigned SlotW = ($clog2(RdDepth) > $clog2(WrDepth)) ? $clog2(RdDepth)
                                                                      : $clog2(WrDepth)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  /* verilator lint_off UNUSEDSIGNAL */  // the timing fields are the controller's
  input  hbm_cfg_t         cfg_i,
  /* verilator lint_on UNUSEDSIGNAL */
  // the queues at the start of the cycle
  input  hbm_slot_t        rdq_i [RdDepth],
  input  hbm_slot_t        wrq_i [WrDepth],
  input  logic [RdDepth-1:0] rd_blocked_i,
  input  logic [WrDepth-1:0] wr_blocked_i,
  input  logic [8:0]       rd_ready_count_i,   // queued reads not blocked
  input  logic [8:0]       wr_count_i,
  input  logic [8:0]       wr_ready_count_i,
  // the oldest request, and whether it is urgent
  input  logic             oldest_found_i,
  input  logic             oldest_write_i,
  input  logic [SlotW-1:0] oldest_slot_i,
  input  logic [BankW-1:0] oldest_bank_i,
  input  logic             urgent_i,
  // the banks
  input  logic [Banks-1:0] open_i,
  input  logic [RowW-1:0]  open_row_i [Banks],
  input  logic [Banks-1:0] act_ready_i,
  input  logic [Banks-1:0] pre_ready_i,
  input  logic [Banks-1:0] rd_ok_i,            // tRCD, tCCD, tWTR passed for a RD
  input  logic [Banks-1:0] wr_ok_i,            // ... tRCD, tCCD, tRTW for a WR
  // what a forced refresh holds back
  input  logic             hold_bank_valid_i,
  input  logic [BankW-1:0] hold_bank_i,
  input  logic             hold_all_i,
  // the column command: slot col_slot_o of the queue col_write_o
  output logic             col_found_o,
  output logic             col_write_o,
  output logic [SlotW-1:0] col_slot_o,
  // the row command for a request (HbmCmdAct, HbmCmdPre or HbmCmdNone)
  output isa_hbm_cmd_e         row_cmd_o,
  output logic [BankW-1:0] row_bank_o,
  output logic [RowW-1:0]  row_row_o,
  output logic             write_mode_o
);
  logic        write_mode_q, write_mode_d;
  logic [11:0] rd_served_q;  // reads issued in this read phase, saturating at rd_batch
  logic [Banks-1:0] hit_pending;

  // Whether request `slot` of a queue is the urgent one.
  function automatic logic is_urgent(input logic write, input logic [SlotW-1:0] slot,
                                     input logic urgent, input logic oldest_write,
                                     input logic [SlotW-1:0] oldest_slot);
    return urgent && oldest_write == write && oldest_slot == slot;
  endfunction

  // What a request needs on the row bus now: HbmCmdAct, HbmCmdPre or HbmCmdNone. A row is closed only
  // when no request that counts still hits it (hits), unless the request is the urgent one.
  function automatic isa_hbm_cmd_e row_need(input logic [RowW-1:0] row, input logic open,
                                        input logic [RowW-1:0] open_row, input logic pre_rdy,
                                        input logic act_rdy, input logic hits,
                                        input logic urgent_one);
    if (!open) return act_rdy ? HbmCmdAct : HbmCmdNone;
    if (open_row != row && (!hits || urgent_one) && pre_rdy) return HbmCmdPre;
    return HbmCmdNone;
  endfunction

  // Rows a request of the current direction (any request, fcfs) still hits.
  always_comb begin
    hit_pending = '0;
    for (int unsigned i = 0; i < RdDepth; i++)
      if (rdq_i[i].valid && (cfg_i.fcfs || !write_mode_q) && open_i[rdq_i[i].bank] &&
          open_row_i[rdq_i[i].bank] == rdq_i[i].row)
        hit_pending[rdq_i[i].bank] = 1'b1;
    for (int unsigned i = 0; i < WrDepth; i++)
      if (wrq_i[i].valid && (cfg_i.fcfs || write_mode_q) && open_i[wrq_i[i].bank] &&
          open_row_i[wrq_i[i].bank] == wrq_i[i].row)
        hit_pending[wrq_i[i].bank] = 1'b1;
  end

  // Column bus: the oldest candidate of the direction whose RD/WR may go now.
  always_comb begin
    logic [31:0] best_arrival;
    col_write_o = cfg_i.fcfs ? oldest_write_i : write_mode_q;
    col_found_o = 1'b0;
    col_slot_o = '0;
    best_arrival = '0;
    if (!hold_all_i && !col_write_o) begin
      for (int unsigned i = 0; i < RdDepth; i++)
        if (rdq_i[i].valid &&
            (cfg_i.fcfs ? (!oldest_write_i && oldest_slot_i == SlotW'(i)) : !rd_blocked_i[i]) &&
            !(hold_bank_valid_i && rdq_i[i].bank == hold_bank_i) &&
            !(urgent_i && rdq_i[i].bank == oldest_bank_i &&
              !is_urgent(1'b0, SlotW'(i), urgent_i, oldest_write_i, oldest_slot_i)) &&
            open_i[rdq_i[i].bank] && open_row_i[rdq_i[i].bank] == rdq_i[i].row &&
            rd_ok_i[rdq_i[i].bank] &&
            (!col_found_o || rdq_i[i].arrival < best_arrival)) begin
          col_found_o = 1'b1;
          col_slot_o = SlotW'(i);
          best_arrival = rdq_i[i].arrival;
        end
    end else if (!hold_all_i) begin
      for (int unsigned i = 0; i < WrDepth; i++)
        if (wrq_i[i].valid &&
            (cfg_i.fcfs ? (oldest_write_i && oldest_slot_i == SlotW'(i)) : !wr_blocked_i[i]) &&
            !(hold_bank_valid_i && wrq_i[i].bank == hold_bank_i) &&
            !(urgent_i && wrq_i[i].bank == oldest_bank_i &&
              !is_urgent(1'b1, SlotW'(i), urgent_i, oldest_write_i, oldest_slot_i)) &&
            open_i[wrq_i[i].bank] && open_row_i[wrq_i[i].bank] == wrq_i[i].row &&
            wr_ok_i[wrq_i[i].bank] &&
            (!col_found_o || wrq_i[i].arrival < best_arrival)) begin
          col_found_o = 1'b1;
          col_slot_o = SlotW'(i);
          best_arrival = wrq_i[i].arrival;
        end
    end
  end

  // Row bus: the oldest candidate whose ACT/PRE may go now (reads first on equal arrival).
  always_comb begin
    logic        found;
    logic [31:0] best_arrival;
    isa_hbm_cmd_e    need;
    row_cmd_o = HbmCmdNone;
    row_bank_o = '0;
    row_row_o = '0;
    found = 1'b0;
    best_arrival = '0;
    need = HbmCmdNone;
    if (!hold_all_i) begin
      for (int unsigned i = 0; i < RdDepth; i++)
        if (rdq_i[i].valid && (cfg_i.fcfs || (!write_mode_q && !rd_blocked_i[i])) &&
            !(hold_bank_valid_i && rdq_i[i].bank == hold_bank_i)) begin
          need = row_need(rdq_i[i].row, open_i[rdq_i[i].bank], open_row_i[rdq_i[i].bank],
                          pre_ready_i[rdq_i[i].bank], act_ready_i[rdq_i[i].bank],
                          hit_pending[rdq_i[i].bank],
                          is_urgent(1'b0, SlotW'(i), urgent_i, oldest_write_i, oldest_slot_i));
          if (need != HbmCmdNone && (!found || rdq_i[i].arrival < best_arrival)) begin
            found = 1'b1;
            best_arrival = rdq_i[i].arrival;
            row_cmd_o = need;
            row_bank_o = rdq_i[i].bank;
            row_row_o = (need == HbmCmdAct) ? rdq_i[i].row : '0;
          end
        end
      for (int unsigned i = 0; i < WrDepth; i++)
        if (wrq_i[i].valid && (cfg_i.fcfs || (write_mode_q && !wr_blocked_i[i])) &&
            !(hold_bank_valid_i && wrq_i[i].bank == hold_bank_i)) begin
          need = row_need(wrq_i[i].row, open_i[wrq_i[i].bank], open_row_i[wrq_i[i].bank],
                          pre_ready_i[wrq_i[i].bank], act_ready_i[wrq_i[i].bank],
                          hit_pending[wrq_i[i].bank],
                          is_urgent(1'b1, SlotW'(i), urgent_i, oldest_write_i, oldest_slot_i));
          if (need != HbmCmdNone && (!found || wrq_i[i].arrival < best_arrival)) begin
            found = 1'b1;
            best_arrival = wrq_i[i].arrival;
            row_cmd_o = need;
            row_bank_o = wrq_i[i].bank;
            row_row_o = (need == HbmCmdAct) ? wrq_i[i].row : '0;
          end
        end
    end
  end

  // Direction for the next cycle (reorder; fcfs follows the oldest request instead).
  always_comb begin
    if (urgent_i) write_mode_d = oldest_write_i;
    else if (!write_mode_q)
      write_mode_d = (wr_count_i >= cfg_i.wr_high && rd_served_q >= cfg_i.rd_batch) ||
                     (rd_ready_count_i == '0 && wr_count_i != '0);
    else
      write_mode_d = !(wr_count_i == '0 || (rd_ready_count_i != '0 &&
                       (wr_count_i <= cfg_i.wr_low || wr_ready_count_i == '0)));
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      write_mode_q <= 1'b0;
      rd_served_q <= '0;
    end else begin
      write_mode_q <= write_mode_d;
      if (write_mode_d && !write_mode_q) rd_served_q <= '0;
      else if (col_found_o && !col_write_o && rd_served_q < cfg_i.rd_batch)
        rd_served_q <= rd_served_q + 1'b1;
    end
  end

  assign write_mode_o = write_mode_q;

  // A read phase with reads still ready ends early only for an urgent request.
  `NC_ASSERT(ReadPhaseServesTheBatch,
             !cfg_i.fcfs && !write_mode_q && write_mode_d && rd_ready_count_i != '0 && !urgent_i
             |-> rd_served_q >= cfg_i.rd_batch)
  // A column command serves a queued request.
  `NC_ASSERT(ColumnCandidateExists, col_found_o |-> oldest_found_i)
endmodule
