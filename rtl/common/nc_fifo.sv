// A synchronous FIFO with valid/ready on both sides. Depth entries of type T; no
// combinational path from input to output (a word is visible the cycle after it is written).
`include "nc_assert.svh"

module nc_fifo #(
  parameter type T = logic [7:0],
  parameter int unsigned Depth = 4
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic in_valid_i,
  output logic in_ready_o,
  input  T     in_data_i,
  output logic out_valid_o,
  input  logic out_ready_i,
  output T     out_data_o
);
  localparam int unsigned PtrW = (Depth > 1) ? $clog2(Depth) : 1;

  T                mem_q [Depth];
  logic [PtrW-1:0] rd_ptr_q, rd_ptr_d, wr_ptr_q, wr_ptr_d;
  logic [PtrW:0]   count_q, count_d;
  logic            push, pop;

  function automatic logic [PtrW-1:0] next_ptr(logic [PtrW-1:0] p);
    return (p == PtrW'(Depth - 1)) ? '0 : p + 1'b1;
  endfunction

  assign in_ready_o = count_q != (PtrW + 1)'(Depth);
  assign out_valid_o = count_q != '0;
  assign out_data_o = mem_q[rd_ptr_q];
  assign push = in_valid_i && in_ready_o;
  assign pop = out_valid_o && out_ready_i;

  always_comb begin
    rd_ptr_d = pop ? next_ptr(rd_ptr_q) : rd_ptr_q;
    wr_ptr_d = push ? next_ptr(wr_ptr_q) : wr_ptr_q;
    count_d = count_q + (PtrW + 1)'(push) - (PtrW + 1)'(pop);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_ptr_q <= '0;
      wr_ptr_q <= '0;
      count_q <= '0;
    end else begin
      rd_ptr_q <= rd_ptr_d;
      wr_ptr_q <= wr_ptr_d;
      count_q <= count_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (push) mem_q[wr_ptr_q] <= in_data_i;
  end

  `NC_ASSERT(FifoNoOverflow, !(in_valid_i && !in_ready_o && count_q < (PtrW + 1)'(Depth)))
  `NC_ASSERT(FifoCountInRange, count_q <= (PtrW + 1)'(Depth))
  `NC_ASSERT_HANDSHAKE(FifoOutStable, out_valid_o, out_ready_i, out_data_o)
endmodule
