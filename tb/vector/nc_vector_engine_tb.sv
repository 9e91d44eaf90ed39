// Top of the vector- and scalar-engine harness for Verilator: nc_vector_engine (Scalar = 0) or
// nc_scalar_engine (Scalar = 1) with the instruction as one packed port (isa_ve_instr_t; the
// C++ driver packs it with isa::pack_instr) and the lane arrays flattened. Adds nothing.
module nc_vector_engine_tb
  import nc_isa_pkg::*;
  import nc_vector_pkg::*;
#(
  parameter int unsigned Scalar = 0,  // 1: the scalar engine
  parameter int unsigned Lanes = 128
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  isa_ve_instr_t          cmd_i,          // the ISA's instruction, one packed port
  output logic                   done_valid_o,
  output logic [7:0]             done_tag_o,
  output logic [2:0]             done_error_o,
  output logic                   rd_valid_o,
  input  logic                   rd_ready_i,
  output logic                   rd_space_o,
  output logic [AddrW-1:0]       rd_addr_o,
  output logic [2:0]             rd_bytes_o,
  input  logic                   rd_rsp_valid_i,
  input  logic [Lanes*32-1:0]    rd_rsp_data_i,
  output logic                   wr_valid_o,
  input  logic                   wr_ready_i,
  output logic                   wr_space_o,
  output logic [AddrW-1:0]       wr_addr_o,
  output logic [2:0]             wr_bytes_o,
  output logic [Lanes-1:0]       wr_mask_o,
  output logic [Lanes*32-1:0]    wr_data_o,
  output logic                   idle_o,
  output logic [2:0]             err_o,
  output logic [31:0]            cnt_busy_o,
  output logic [31:0]            cnt_rd_stall_o,
  output logic [31:0]            cnt_wr_stall_o,
  output logic [31:0]            cnt_credit_stall_o,
  output logic [31:0]            cnt_elements_o,
  output logic [31:0]            cnt_executed_o,
  output logic [31:0]            cnt_refused_o,
  // Register upset to inject (0: none), for tests/test_vector_sva.cpp; the vector engine only.
  input  logic [1:0]             upset_i
);
  isa_ve_error_e    done_error, err;
  ve_counters_t cnt;

  if (Scalar != 0) begin : g_scalar
    nc_scalar_engine #(.Lanes(Lanes)) u_se (
      .clk_i, .rst_ni,
      .cmd_valid_i, .cmd_ready_o, .cmd_i,
      .done_valid_o, .done_tag_o, .done_error_o(done_error),
      .rd_valid_o, .rd_ready_i, .rd_space_o, .rd_addr_o, .rd_bytes_o,
      .rd_rsp_valid_i, .rd_rsp_data_i(rd_rsp_data_i),
      .wr_valid_o, .wr_ready_i, .wr_space_o, .wr_addr_o, .wr_bytes_o, .wr_mask_o,
      .wr_data_o(wr_data_o),
      .idle_o, .err_o(err), .counters_o(cnt));
    logic upset_unused;  // the scalar engine has no upsets
    assign upset_unused = ^upset_i;
  end else begin : g_vector
    nc_vector_engine #(.Lanes(Lanes)) u_ve (
      .clk_i, .rst_ni, .perf_mode_en_i(1'b1),
      .cmd_valid_i, .cmd_ready_o, .cmd_i,
      .done_valid_o, .done_tag_o, .done_error_o(done_error),
      .rd_valid_o, .rd_ready_i, .rd_space_o, .rd_addr_o, .rd_bytes_o,
      .rd_rsp_valid_i, .rd_rsp_data_i(rd_rsp_data_i),
      .wr_valid_o, .wr_ready_i, .wr_space_o, .wr_addr_o, .wr_bytes_o, .wr_mask_o,
      .wr_data_o(wr_data_o),
      .idle_o, .err_o(err), .counters_o(cnt));

    // Register upsets (single-event-upset style fault injection) for the negative tests of
    // the engine's state-machine assertions, which the ports cannot break: once, at the
    // first falling edge at which the upset named by upset_i finds its target live, one
    // state register is overwritten with a value the engine's own logic never gives it.
    localparam logic [1:0] UpsetNone = 2'd0;
    localparam logic [1:0] UpsetStateIdle = 2'd1;   // idle with a write still queued:
                                                    // VeNoWriteWhenIdle
    localparam logic [1:0] UpsetProduced = 2'd2;    // more produced than the instruction
                                                    // writes: VeProducedBound
    logic upset_done_q;
    always @(negedge clk_i) begin
      if (!rst_ni) begin
        upset_done_q <= 1'b0;
      end else if (!upset_done_q) begin
        unique case (upset_i)
          UpsetStateIdle: if (u_ve.state_q == StRun && u_ve.wrf_valid) begin
            u_ve.state_q <= StIdle;
            upset_done_q <= 1'b1;
          end
          UpsetProduced: if (u_ve.state_q == StRun) begin
            u_ve.produced_q <= u_ve.n_dst_q + 32'd1;
            upset_done_q <= 1'b1;
          end
          UpsetNone, 2'd3: ;
        endcase
      end
    end
  end

  assign done_error_o = done_error;
  assign err_o = err;
  assign cnt_busy_o = cnt.busy;
  assign cnt_rd_stall_o = cnt.rd_stall;
  assign cnt_wr_stall_o = cnt.wr_stall;
  assign cnt_credit_stall_o = cnt.credit_stall;
  assign cnt_elements_o = cnt.elements;
  assign cnt_executed_o = cnt.executed;
  assign cnt_refused_o = cnt.refused;
endmodule
