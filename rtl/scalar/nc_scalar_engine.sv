// The scalar engine (ACT): Lanes lanes computing out = func(in * scale + bias) with an optional
// FP32 sum along the free axis (activation_reduce). It is the vector engine's streaming shell
// (instruction check, access-pattern walkers, read and write sequencing, casts, refusal codes;
// rtl/vector/README.md) with activation lanes (nc_act_pkg) in place of the ALU lanes, and it
// takes the activation instruction only. Theory of operation and each function's
// approximation: rtl/scalar/README.md.
module nc_scalar_engine
  import nc_isa_pkg::*;
  import nc_vector_pkg::*;
#(
  parameter int unsigned Lanes = 128,
  parameter int unsigned SbufBytes = 229376,
  parameter int unsigned PsumBytes = 16384,
  parameter int unsigned RspDepth = 4
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  isa_ve_instr_t              cmd_i,
  output logic                   done_valid_o,
  output logic [7:0]             done_tag_o,
  output isa_ve_error_e              done_error_o,
  output logic                   rd_valid_o,
  input  logic                   rd_ready_i,
  output logic                   rd_space_o,
  output logic [AddrW-1:0]       rd_addr_o,
  output logic [2:0]             rd_bytes_o,
  input  logic                   rd_rsp_valid_i,
  input  logic [Lanes-1:0][31:0] rd_rsp_data_i,
  output logic                   wr_valid_o,
  input  logic                   wr_ready_i,
  output logic                   wr_space_o,
  output logic [AddrW-1:0]       wr_addr_o,
  output logic [2:0]             wr_bytes_o,
  output logic [Lanes-1:0]       wr_mask_o,
  output logic [Lanes-1:0][31:0] wr_data_o,
  output logic                   idle_o,
  output isa_ve_error_e              err_o,
  output ve_counters_t           counters_o
);
  logic perf_mode_en_i;  // no instruction of the scalar engine's has a performance mode
  assign perf_mode_en_i = 1'b0;
  nc_vector_engine #(
    .Scalar(1'b1), .Lanes(Lanes), .SbufBytes(SbufBytes), .PsumBytes(PsumBytes),
    .RspDepth(RspDepth)
  ) u_shell (.*);
endmodule
