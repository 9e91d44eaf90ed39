// Top of the HBM controller harness for Verilator: nc_hbm_ctrl with its configuration struct
// spread over flat ports, so that C++ sets fields by name, and register upsets for the
// negative tests of its internal assertions (tests/test_hbm_sva.cpp).
module nc_hbm_ctrl_tb
  import nc_isa_pkg::*;
  import nc_hbm_pkg::*;
#(
  parameter int unsigned RdDepth = 64,
  parameter int unsigned WrDepth = 256,
  parameter int unsigned InFlight = 32
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [11:0]       cfg_bl_i, cfg_cl_i, cfg_cwl_i, cfg_rcd_rd_i, cfg_rcd_wr_i, cfg_rp_i,
  input  logic [11:0]       cfg_ras_i, cfg_rc_i, cfg_ccd_s_i, cfg_ccd_l_i, cfg_rrd_s_i,
  input  logic [11:0]       cfg_rrd_l_i, cfg_faw_i, cfg_wr_i, cfg_rtp_i, cfg_wtr_s_i, cfg_wtr_l_i,
  input  logic [11:0]       cfg_rtw_i, cfg_rfc_i, cfg_rfcpb_i, cfg_rrefd_i,
  input  logic [15:0]       cfg_refi_i,
  input  logic              cfg_fcfs_i, cfg_all_bank_ref_i, cfg_xor_hash_i,
  input  logic [2:0]        cfg_ch_bits_i,
  input  logic [8:0]        cfg_wr_high_i, cfg_wr_low_i,
  input  logic [11:0]       cfg_rd_batch_i,
  input  logic [15:0]       cfg_age_cap_i,
  input  logic [3:0]        cfg_max_postpone_i, cfg_max_pull_in_i,
  input  logic              rd_req_valid_i,
  output logic              rd_req_ready_o,
  input  logic [AddrW-1:0]  rd_req_addr_i,
  input  logic [31:0]       rd_req_id_i,
  input  logic              wr_req_valid_i,
  output logic              wr_req_ready_o,
  input  logic [AddrW-1:0]  wr_req_addr_i,
  input  logic [31:0]       wr_req_id_i,
  input  logic [DataW-1:0]  wr_req_data_i,
  output logic              rsp_valid_o,
  output logic [31:0]       rsp_id_o,
  output logic [DataW-1:0]  rsp_data_o,
  output logic [2:0]        row_cmd_o,
  output logic [BankW-1:0]  row_bank_o,
  output logic [RowW-1:0]   row_row_o,
  output logic [2:0]        col_cmd_o,
  output logic [BankW-1:0]  col_bank_o,
  output logic [RowW-1:0]   col_row_o,
  output logic [ColW-1:0]   col_col_o,
  output logic [31:0]       col_id_o,
  output logic [DataW-1:0]  col_wdata_o,
  input  logic              dram_rd_valid_i,
  input  logic [DataW-1:0]  dram_rd_data_i,
  output logic              err_o,
  output logic [1:0]        err_code_o,
  output logic              idle_o,
  output logic              write_mode_o,
  output logic signed [5:0] ref_debt_o,
  output logic [8:0]        rd_count_o,
  output logic [8:0]        wr_count_o,
  output logic [31:0]       cnt_act_o,
  output logic [31:0]       cnt_rd_o,
  output logic [31:0]       cnt_wr_o,
  output logic [31:0]       cnt_ref_o,
  // Register upset to inject (UpsetNone: none).
  input  logic [1:0]        upset_i
);
  hbm_cfg_t cfg;
  isa_hbm_cmd_e row_cmd, col_cmd;
  isa_hbm_error_e err_code;

  always_comb begin
    cfg = '{bl: cfg_bl_i, cl: cfg_cl_i, cwl: cfg_cwl_i, rcd_rd: cfg_rcd_rd_i,
            rcd_wr: cfg_rcd_wr_i, rp: cfg_rp_i, ras: cfg_ras_i, rc: cfg_rc_i,
            ccd_s: cfg_ccd_s_i, ccd_l: cfg_ccd_l_i, rrd_s: cfg_rrd_s_i, rrd_l: cfg_rrd_l_i,
            faw: cfg_faw_i, wr: cfg_wr_i, rtp: cfg_rtp_i, wtr_s: cfg_wtr_s_i,
            wtr_l: cfg_wtr_l_i, rtw: cfg_rtw_i, rfc: cfg_rfc_i, rfcpb: cfg_rfcpb_i,
            rrefd: cfg_rrefd_i, refi: cfg_refi_i, fcfs: cfg_fcfs_i,
            all_bank_ref: cfg_all_bank_ref_i, xor_hash: cfg_xor_hash_i,
            ch_bits: cfg_ch_bits_i, wr_high: cfg_wr_high_i, wr_low: cfg_wr_low_i,
            rd_batch: cfg_rd_batch_i,
            age_cap: cfg_age_cap_i, max_postpone: cfg_max_postpone_i,
            max_pull_in: cfg_max_pull_in_i};
  end

  nc_hbm_ctrl #(.RdDepth(RdDepth), .WrDepth(WrDepth), .IdW(32), .InFlight(InFlight)) u_ctrl (
    .clk_i, .rst_ni,
    .cfg_i(cfg),
    .rd_req_valid_i, .rd_req_ready_o, .rd_req_addr_i, .rd_req_id_i,
    .wr_req_valid_i, .wr_req_ready_o, .wr_req_addr_i, .wr_req_id_i, .wr_req_data_i,
    .rsp_valid_o, .rsp_id_o, .rsp_data_o,
    .row_cmd_o(row_cmd), .row_bank_o, .row_row_o,
    .col_cmd_o(col_cmd), .col_bank_o, .col_row_o, .col_col_o, .col_id_o, .col_wdata_o,
    .dram_rd_valid_i, .dram_rd_data_i,
    .err_o, .err_code_o(err_code), .idle_o, .write_mode_o, .ref_debt_o, .rd_count_o,
    .wr_count_o, .cnt_act_o, .cnt_rd_o, .cnt_wr_o, .cnt_ref_o
  );

  assign row_cmd_o = row_cmd;
  assign col_cmd_o = col_cmd;
  assign err_code_o = err_code;

  // Register upsets (single-event-upset style fault injection): invariants that no legal port
  // activity can break are made to fire by overwriting one register inside the controller,
  // once, at the first falling edge (between its own updates, after the C++ driver has set
  // the inputs of the coming edge) at which the upset finds its target live.
  localparam logic [1:0] UpsetNone = 2'd0;
  localparam logic [1:0] UpsetInFlightFull = 2'd1;  // the read-return FIFO shown full as a RD
                                                    // goes out: InFlightNeverOverflows
  localparam logic [1:0] UpsetRefreshDebt = 2'd2;   // two refreshes owed past the limit:
                                                    // RefreshDebtBounded
  logic upset_done_q;
  always @(negedge clk_i) begin
    if (!rst_ni) begin
      upset_done_q <= 1'b0;
    end else if (!upset_done_q) begin
      unique case (upset_i)
        UpsetInFlightFull: if (u_ctrl.col_is_rd) begin
          u_ctrl.u_inflight.count_q <= $bits(u_ctrl.u_inflight.count_q)'(InFlight);
          upset_done_q <= 1'b1;
        end
        UpsetRefreshDebt: begin
          u_ctrl.u_refresh.debt_q <= $signed({2'b0, cfg_max_postpone_i}) + 6'sd2;
          upset_done_q <= 1'b1;
        end
        UpsetNone: ;
        default: ;  // code 3 names no upset
      endcase
    end
  end
endmodule
