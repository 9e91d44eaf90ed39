// Test probe for the fast PE build's proof (tests/test_host_fp.cpp): Lanes operand pairs per
// evaluation through the PE's synthesizable multiply and add (nc_fp_pkg's fp32_mul and fp32_add,
// never the host-FPU forms: this probe is always Verilated without NCORE_FAST_PE), with each
// operand as the array holds it (unpacked at the edge), which the host-FPU multiply takes.
module nc_pe_fp_probe #(
  parameter int unsigned Lanes = 64
) (
  input  logic [31:0]                a_i [Lanes],
  input  logic [31:0]                b_i [Lanes],
  output logic [31:0]                mul_o [Lanes],
  output logic [31:0]                add_o [Lanes],
  output nc_fp_pkg::fp_unpacked_t    a_unpacked_o [Lanes],
  output nc_fp_pkg::fp_unpacked_t    b_unpacked_o [Lanes]
);
  import nc_fp_pkg::*;

  always_comb begin
    for (int unsigned l = 0; l < Lanes; l++) begin
      a_unpacked_o[l] = unpack_fp32(a_i[l]);
      b_unpacked_o[l] = unpack_fp32(b_i[l]);
      mul_o[l] = fp32_mul(a_unpacked_o[l], b_unpacked_o[l]);
      add_o[l] = fp32_add(a_i[l], b_i[l]);
    end
  end
endmodule
