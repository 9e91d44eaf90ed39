// Top of the tensor-engine harness for Verilator: nc_tensor_engine with its instruction as one
// packed port (isa_te_instr_t; the C++ driver packs it with isa::pack_instr), and register upsets
// for the negative tests of the engine's internal assertions. Adds nothing else.
module nc_tensor_engine_tb
  import nc_isa_pkg::*;
  import nc_tensor_pkg::*;
#(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128,
  parameter int unsigned SbufBytes = 229376,
  // 1: the array outside the engine, stepped by the harness as column slices on threads
  // (tb/tensor/array_slices.h): the arr_* ports carry its inputs and its bottom row.
  parameter int unsigned ExternalArray = 0
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  isa_te_instr_t         cmd_i,          // the ISA's instruction, one packed port
  output logic                  st_req_valid_o,
  input  logic                  st_req_ready_i,
  output logic [SbufAddrW-1:0]  st_req_addr_o,
  output logic [2:0]            st_req_bytes_o,
  output logic [2:0]            st_req_reps_o,
  output logic [SbufAddrW-1:0]  st_req_rep_step_o,
  output logic [SbufAddrW-1:0]  st_req_tag_addr_o,
  input  logic                  st_rsp_valid_i,
  input  logic [31:0]           st_rsp_data_i [MaxReps][Rows],
  input  logic [15:0]           st_rsp_tag_i [Rows],
  output logic                  mv_req_valid_o,
  input  logic                  mv_req_ready_i,
  output logic [Segs-1:0]       mv_req_segs_o,
  output logic [SbufAddrW-1:0]  mv_req_addr_o [Segs],
  output logic [2:0]            mv_req_bytes_o [Segs],
  output logic [2:0]            mv_req_reps_o,
  output logic [SbufAddrW-1:0]  mv_req_rep_step_o [Segs],
  input  logic                  mv_rsp_valid_i,
  input  logic [31:0]           mv_rsp_data_i [MaxReps][Rows],
  input  logic                  psum_rd_valid_i,
  output logic                  psum_rd_ready_o,
  input  logic [2:0]            psum_rd_bank_i,
  input  logic [8:0]            psum_rd_elem_i,
  output logic                  psum_rd_rsp_valid_o,
  output logic [31:0]           psum_rd_rsp_data_o [Cols],
  output logic                  psum_wr_valid_o [Cols],
  output logic [2:0]            psum_wr_bank_o [Cols],
  output logic [8:0]            psum_wr_elem_o [Cols],
  output logic [1:0]            psum_wr_half_o [Cols],
  output logic [31:0]           psum_wr_data_o [Cols],
  output logic [7:0]            psum_wr_tag_o [Cols],
  output logic                  mm_done_valid_o [Segs],
  output logic [7:0]            mm_done_tag_o [Segs],
  output logic                  ls_done_valid_o,
  output logic [7:0]            ls_done_tag_o,
  output logic                  rej_valid_o,
  output logic [3:0]            rej_code_o,
  output logic [7:0]            rej_tag_o,
  output logic                  err_o,
  output logic [3:0]            err_code_o,
  output logic                  idle_o,
  output logic [63:0]           cnt_busy_o,
  output logic [63:0]           cnt_macs_o,
  output logic [63:0]           cnt_stall_sbuf_mv_o,
  output logic [63:0]           cnt_stall_sbuf_st_o,
  output logic [63:0]           cnt_stall_mm_wait_ls_o,
  output logic [63:0]           cnt_stall_ls_wait_bank_o,
  output logic [63:0]           cnt_stall_psum_rd_o,
  output logic [63:0]           cnt_mm_o,
  output logic [63:0]           cnt_ls_o,
  output logic [63:0]           cnt_rejected_o,
  // Register upset to inject (UpsetNone: none), for tests/test_tensor_sva.cpp.
  input  logic [2:0]            upset_i,
  // The external array (ExternalArray; nc_tensor_engine's arr_* ports).
  output logic [LsCols-1:0]     arr_w_we_o,
  output logic                  arr_w_row_en_o [Rows],
  output logic                  arr_w_bank_o,
  output logic [$clog2(Cols)-1:0] arr_w_col_o [LsCols],
  output nc_fp_pkg::fp_unpacked_t arr_w_col_data_o [LsCols][Rows],
  output nc_fp_pkg::fp_unpacked_t arr_w_col_data1_o [LsCols][Rows],
  output logic [31:0]           arr_w_col_aux_o [LsCols][Rows],
  output te_row_meta_t          arr_in_row_o [Segs],
  output te_pe_op_e             arr_in_op_o,
  output isa_te_sparsity_e      arr_in_sparsity_o,
  output nc_fp_pkg::fp_unpacked_t arr_in_data_o [MaxReps][Rows],
  input  logic [31:0]           arr_out_sum_i [Cols]
);

  isa_te_error_e rej_code, err_code;
  assign rej_code_o = rej_code;
  assign err_code_o = err_code;

  // The external PSUM write port (the NeuronCore's vector and scalar engines) is idle here.
  logic        psum_ext_wr_ready_unused;
  logic [31:0] psum_ext_wr_data_zero [Cols];
  assign psum_ext_wr_data_zero = '{default: '0};

  // One weight column a cycle here: the further columns of a fast LoadStationary never come.
  logic [31:0] st_rsp_more_none [LsCols-1][MaxReps][Rows];
  always_comb begin
    for (int unsigned c = 0; c < LsCols - 1; c++)
      for (int unsigned r = 0; r < MaxReps; r++)
        for (int unsigned k = 0; k < Rows; k++) st_rsp_more_none[c][r][k] = '0;
  end

  nc_tensor_engine #(.Rows(Rows), .Cols(Cols), .SbufBytes(SbufBytes), .ExternalArray(ExternalArray)) u_te (
    .clk_i, .rst_ni,
    .cmd_valid_i, .cmd_ready_o, .cmd_data_i(cmd_i),
    .ls_columns_i(3'd1), .st_req_cols_o(), .st_req_col_step_o(), .st_rsp_more_i(st_rsp_more_none),
    .throttle_en_i(1'b0), .throttle_start_i('0), .throttle_step_i('0), .throttle_window_i(16'd1),
    .throttle_low_i('0),  // no fixed costs here
    .st_req_valid_o, .st_req_ready_i, .st_req_addr_o, .st_req_bytes_o, .st_req_reps_o,
    .st_req_rep_step_o, .st_req_tag_addr_o, .st_rsp_valid_i, .st_rsp_data_i, .st_rsp_tag_i,
    .mv_req_valid_o, .mv_req_ready_i, .mv_req_segs_o, .mv_req_addr_o, .mv_req_bytes_o,
    .mv_req_reps_o,
    .mv_req_rep_step_o, .mv_rsp_valid_i, .mv_rsp_data_i,
    .psum_rd_valid_i, .psum_rd_ready_o, .psum_rd_bank_i, .psum_rd_elem_i,
    .psum_rd_rsp_valid_o, .psum_rd_rsp_data_o,
    .psum_ext_wr_valid_i(1'b0), .psum_ext_wr_ready_o(psum_ext_wr_ready_unused),
    .psum_ext_wr_bank_i('0), .psum_ext_wr_elem_i('0), .psum_ext_wr_byte_en_i('0),
    .psum_ext_wr_part_mask_i('0), .psum_ext_wr_data_i(psum_ext_wr_data_zero),
    .psum_wr_valid_o, .psum_wr_bank_o, .psum_wr_elem_o, .psum_wr_half_o, .psum_wr_data_o,
    .psum_wr_tag_o, .mm_done_valid_o, .mm_done_tag_o, .ls_done_valid_o, .ls_done_tag_o,
    .rej_valid_o, .rej_code_o(rej_code), .rej_tag_o, .err_o, .err_code_o(err_code), .idle_o,
    .cnt_busy_o, .cnt_macs_o, .cnt_stall_sbuf_mv_o, .cnt_stall_sbuf_st_o,
    .cnt_stall_mm_wait_ls_o, .cnt_stall_ls_wait_bank_o, .cnt_stall_psum_rd_o,
    .cnt_mm_o, .cnt_ls_o, .cnt_rejected_o,
    .arr_w_we_o, .arr_w_row_en_o, .arr_w_bank_o, .arr_w_col_o, .arr_w_col_data_o,
    .arr_w_col_data1_o, .arr_w_col_aux_o, .arr_in_row_o, .arr_in_op_o, .arr_in_sparsity_o,
    .arr_in_data_o, .arr_out_sum_i
  );

  // Register upsets (single-event-upset style fault injection). The internal invariants
  // (queue occupancy, the PSUM bank hazard's write count, the weight banks' double buffering)
  // cannot be broken through the ports, so their assertions' negative tests overwrite one
  // register inside the engine: once, at the first falling edge (between the engine's own
  // updates) at which the upset named by upset_i finds its target live. The assertion that
  // guards the register must then stop the simulation.
  localparam logic [2:0] UpsetNone = 3'd0;
  localparam logic [2:0] UpsetCmdFifoCount = 3'd1;  // occupancy past the depth: FifoCountInRange
  localparam logic [2:0] UpsetPsumPending = 3'd2;   // bank 0's writes forgotten in flight:
                                                    // PsumWritesInFlightAreCounted
  localparam logic [2:0] UpsetLsBank = 3'd3;        // the loading LS moves onto the bank an MM
                                                    // streams with: MmNeverReadsLoadingBank
  localparam logic [2:0] UpsetLsBankMmStalled = 3'd4;  // the same, in a cycle the LS writes
                                                       // while that MM's moving request waits
                                                       // for the SBUF: LsWritesOnlyAFreeBank
  logic upset_done_q;
  always @(negedge clk_i) begin
    if (!rst_ni) begin
      upset_done_q <= 1'b0;
    end else if (!upset_done_q) begin
      unique case (upset_i)
        UpsetCmdFifoCount: if (u_te.u_cmd_fifo.count_q != '0) begin
          u_te.u_cmd_fifo.count_q <= '1;  // 2 * depth - 1
          upset_done_q <= 1'b1;
        end
        UpsetPsumPending: if (u_te.pending_q[0] != '0) begin
          u_te.pending_q[0] <= '0;
          upset_done_q <= 1'b1;
        end
        UpsetLsBank: if (u_te.ls_busy_q && u_te.mm_act_q[0].valid &&
                         u_te.mm_act_q[0].wsel != u_te.ls_bank_q) begin
          u_te.ls_bank_q <= u_te.mm_act_q[0].wsel;
          upset_done_q <= 1'b1;
        end
        // The inputs of the coming edge are already driven, so w_we and fire are final here.
        UpsetLsBankMmStalled: if (u_te.ls_busy_q && u_te.w_we && u_te.mm_act_q[0].valid &&
                                  !u_te.fire[0] && u_te.mm_act_q[0].wsel != u_te.ls_bank_q &&
                                  (u_te.mm_act_q[0].rows & u_te.ls_rows_q) != '0 &&
                                  (u_te.mm_act_q[0].cols & u_te.ls_cols_q) != '0) begin
          u_te.ls_bank_q <= u_te.mm_act_q[0].wsel;
          upset_done_q <= 1'b1;
        end
        UpsetNone: ;
        default: ;  // codes 5-7 name no upset
      endcase
    end
  end
endmodule
