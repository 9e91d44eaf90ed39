// Assertion macros of ncore (in the spirit of OpenTitan's prim_assert). Assertions are
// compiled in by Verilator's --assert, which every test build uses; a failure stops the
// simulation with the assertion's name.
`ifndef NC_ASSERT_SVH
`define NC_ASSERT_SVH

// A property that must hold on every clock edge out of reset.
`define NC_ASSERT(name, prop) \
  name: assert property (@(posedge clk_i) disable iff (!rst_ni) (prop)) \
    else $error("%m: assertion %s failed", `"name`");

// valid/ready handshake: once valid, the sender holds valid and its payload until ready.
`define NC_ASSERT_HANDSHAKE(name, valid, ready, payload) \
  `NC_ASSERT(name, (valid) && !(ready) |=> (valid) && $stable(payload))

`endif
