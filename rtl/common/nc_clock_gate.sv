// A clock gate (ICG): clk_o pulses with clk_i in the cycles en_i is high. en_i is sampled by a
// latch that is open while clk_i is low, so a change of en_i at the rising edge cannot cut or
// stretch a pulse. Synthesis maps this to the library's integrated clock-gating cell.
module nc_clock_gate (
  input  logic clk_i,
  input  logic en_i,    // high in a cycle: clk_o rises at its end
  output logic clk_o
);
  logic en_latched;
  always_latch begin
    if (!clk_i) en_latched = en_i;
  end
  assign clk_o = clk_i && en_latched;
endmodule
