// Test probe: the activation functions of nc_act_pkg as combinational ports, so that a C++ test
// can drive millions of inputs through the exact logic of a scalar-engine lane.
module nc_act_probe (
  input  logic [3:0]  func_i,
  input  logic [31:0] t_i,
  output logic [31:0] act_o
);
  import nc_isa_pkg::*;
  import nc_act_pkg::*;

  assign act_o = act_eval(func_i, t_i);
endmodule
