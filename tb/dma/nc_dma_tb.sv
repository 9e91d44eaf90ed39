// Top of the DMA harness for Verilator: nc_dma with its descriptor as one packed port
// (isa_dma_t; the C++ driver packs it with isa::pack_payload), and a register upset for the
// negative test of its staging FIFO's assertion (tests/test_dma_rtl.cpp).
module nc_dma_tb
  import nc_isa_pkg::*;
  import nc_dma_pkg::*;
#(
  parameter int unsigned StageDepth = 4
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic [5:0]           hbm_bytes_log2_i,
  input  logic                 desc_valid_i,
  output logic                 desc_ready_o,
  input  logic [3:0]           desc_engine_i,
  input  isa_dma_t             desc_i,        // the ISA's descriptor, one packed port
  output logic                 done_valid_o,
  output logic [3:0]           done_engine_o,
  output logic                 done_error_o,
  output logic                 hbm_rd_valid_o,
  input  logic                 hbm_rd_ready_i,
  output logic [HbmAddrW-1:0]  hbm_rd_addr_o,
  output logic [31:0]          hbm_rd_id_o,
  output logic                 hbm_wr_valid_o,
  input  logic                 hbm_wr_ready_i,
  output logic [HbmAddrW-1:0]  hbm_wr_addr_o,
  output logic [31:0]          hbm_wr_id_o,
  output logic [255:0]         hbm_wr_data_o,
  input  logic                 hbm_rsp_valid_i,
  input  logic [31:0]          hbm_rsp_id_i,
  input  logic [255:0]         hbm_rsp_data_i,
  output logic                 sbuf_wr_valid_o,
  output logic [SbufAddrW-1:0] sbuf_wr_addr_o,
  output logic [255:0]         sbuf_wr_data_o,
  output logic [3:0]           sbuf_wr_engine_o,
  output logic                 sbuf_rd_valid_o,
  output logic [SbufAddrW-1:0] sbuf_rd_addr_o,
  input  logic [255:0]         sbuf_rd_data_i,
  output logic                 err_o,
  output logic [3:0]           err_code_o,
  output logic                 idle_o,
  output logic [31:0]          cnt_bursts_o,
  // Register upset to inject: the staging FIFO shown full as SBUF read data arrives for it.
  input  logic                 upset_stage_full_i
);
  isa_dma_error_e err_code;
  /* verilator lint_off UNUSEDSIGNAL */  // the NeuronCore's concerns: room per engine, the code
  logic [15:0] desc_room_unused;
  isa_dma_error_e done_code_unused;
  /* verilator lint_on UNUSEDSIGNAL */

  nc_dma #(.Engines(16), .StageDepth(StageDepth)) u_dma (
    .clk_i, .rst_ni, .hbm_bytes_log2_i, .image_base_i('0), .image_bytes_i('0),
    .desc_valid_i, .desc_ready_o, .desc_engine_i, .desc_i, .desc_malformed_i(1'b0),
    .desc_not_before_i('0), .now_i('0), .row_cost_i('0), .byte_cost_i('0),  // no fixed costs
    .desc_room_o(desc_room_unused),
    .done_valid_o, .done_engine_o, .done_error_o, .done_code_o(done_code_unused),
    .hbm_rd_valid_o, .hbm_rd_ready_i, .hbm_rd_addr_o, .hbm_rd_id_o,
    .hbm_wr_valid_o, .hbm_wr_ready_i, .hbm_wr_addr_o, .hbm_wr_id_o, .hbm_wr_data_o,
    .hbm_rsp_valid_i, .hbm_rsp_id_i, .hbm_rsp_data_i,
    .sbuf_wr_valid_o, .sbuf_wr_addr_o, .sbuf_wr_data_o, .sbuf_wr_engine_o,
    .sbuf_rd_valid_o, .sbuf_rd_addr_o, .sbuf_rd_data_i,
    .err_o, .err_code_o(err_code), .idle_o, .cnt_bursts_o
  );
  assign err_code_o = err_code;

  // Register upset (single-event-upset style fault injection): the engine sizes its SBUF reads
  // by its own count of staged words, so no port activity can overfill the staging FIFO. Once,
  // at the first falling edge (after the C++ driver has set the inputs of the coming edge) at
  // which SBUF read data is due into the FIFO, its occupancy is overwritten with "full":
  // StageNeverOverflows must stop the run.
  logic upset_done_q;
  always @(negedge clk_i) begin
    if (!rst_ni) begin
      upset_done_q <= 1'b0;
    end else if (upset_stage_full_i && !upset_done_q && u_dma.srd_valid_q) begin
      u_dma.u_stage.count_q <= $bits(u_dma.u_stage.count_q)'(StageDepth);
      upset_done_q <= 1'b1;
    end
  end
endmodule
