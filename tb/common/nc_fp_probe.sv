// Test probe: exposes the nc_fp_pkg functions as combinational ports, so that a C++ test can
// drive millions of operand pairs through the exact logic the PEs use.
module nc_fp_probe (
  input  logic [3:0]  dtype_i,
  input  logic [31:0] bits_i,
  output logic [31:0] decoded_o,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] mul_o,
  output logic [31:0] add_o,
  output logic [31:0] div_o,
  // casts: FP32 a_i to dtype_i with the rounding controls; any type bits_i to FP32; max/min
  input  logic        stochastic_i,
  input  logic        saturate_i,
  input  logic [31:0] random_i,
  output logic [31:0] cast_o,
  output logic [31:0] any_to_fp32_o,
  output logic [31:0] max_o,
  output logic [31:0] min_o
);
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;

  assign decoded_o = decode_to_fp32(dtype_i, bits_i);
  assign mul_o = fp32_mul(unpack_fp32(a_i), unpack_fp32(b_i));
  assign add_o = fp32_add(a_i, b_i);
  assign div_o = fp32_div(unpack_fp32(a_i), unpack_fp32(b_i));
  assign cast_o = fp32_to_dtype(a_i, dtype_i, stochastic_i, saturate_i, random_i);
  assign any_to_fp32_o = any_to_fp32(dtype_i, bits_i);
  assign max_o = fp32_max_min(a_i, b_i, 1'b1);
  assign min_o = fp32_max_min(a_i, b_i, 1'b0);
endmodule
