// The core's clock domains (issue 49; model::CoreClocks is the golden model): one base clock,
// and per domain an integer divider and a clock gate. A domain's clock rises on every
// divide_i-th base edge, counted from the start edge (edge 0 of every domain, as in the golden
// core). While the core is not running (before start, after it finishes) every domain runs at
// the base clock, so loading and the debug ports work as on one clock.
//
// en_o[d] is high in the base cycle that ends with an edge of domain d: a base-clock register
// that only changes when en_o[d] is high is a register of domain d. The core uses that for
// what several domains write (the semaphores, the status) and for the SBUF's ports.
module nc_core_clocks #(
  parameter int unsigned Domains = 4,
  parameter int unsigned DivideW = 7   // dividers 1 .. 2**DivideW - 1
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               start_i,     // the start edge: every divider restarts
  input  logic               running_i,   // the core runs: the dividers count
  input  logic [DivideW-1:0] divide_i [Domains],
  output logic [Domains-1:0] en_o,
  output logic [Domains-1:0] clk_o,
  output logic [DivideW-1:0] left_o [Domains]   // base cycles to the domain's next edge, less one
);
  for (genvar d = 0; d < Domains; d++) begin : g_domain
    // Base cycles until the domain's next edge, less one (0: this cycle ends with one).
    logic [DivideW-1:0] left_q;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) left_q <= '0;
      else if (start_i || (running_i && left_q == '0)) left_q <= divide_i[d] - 1'b1;
      else if (running_i) left_q <= left_q - 1'b1;
      else left_q <= '0;
    end
    assign en_o[d] = !running_i || left_q == '0;
    assign left_o[d] = left_q;
    nc_clock_gate u_gate (.clk_i, .en_i(en_o[d]), .clk_o(clk_o[d]));
  end
endmodule
