// The pipeline latency of the vector or scalar engine (issue 49; model::EngineCosts::
// static_cycles, the golden core's VeFootprint): an instruction's results land latency_i engine
// cycles after it has finished streaming: the engine is done with it and its queue's minimum
// interval (nc_core_seq, hold_i) has passed, the cycle the next instruction could issue. Until
// then:
//   - its queue has not drained (a fence's signal waits for it), and the core has not finished;
//   - the next instruction on the queue is held (hazard_o) if it reads or overwrites what a
//     landing instruction writes: its partitions meet, and a span it reads or writes meets a
//     span that one writes, in the same memory. Others issue as soon as the engine takes them.
// A span is the hull of an access pattern: [addr + negative reach, addr + positive reach +
// element size) of each partition, as model::ve_footprint computes it.
//
// The head's footprint is computed from the instruction the queue offers; the one the engine
// takes is kept until its done, then lands. Depth instructions land at once at most (ncore's
// choice: at trn2's costs, 64-cycle intervals and a 200-cycle latency, four do); a full table
// holds the queue. latency_i 0: nothing is kept, the one-clock timing.
`include "nc_assert.svh"

module nc_core_pipeline
  import nc_isa_pkg::*;
  import nc_pkg::dtype_bytes;
#(
  parameter int unsigned Depth = 8
) (
  input  logic          clk_i,        // the engine's clock
  input  logic          rst_ni,
  input  logic [15:0]   latency_i,
  input  isa_ve_instr_t head_i,       // the instruction the queue offers
  input  logic          take_i,       // the engine takes it this cycle
  input  logic          done_i,       // the engine is done with the one it took
  input  logic          hold_i,       // its queue's minimum interval holds it still
  output logic          hazard_o,     // hold the head: it needs results still landing
  output logic          landing_o     // results still to land
);
  localparam int unsigned SpanW = 40;
  typedef struct packed {
    logic                    on;
    isa_mem_space_e          space;
    logic signed [SpanW-1:0] lo, hi;  // [lo, hi) bytes of each partition
  } span_t;
  typedef struct packed {
    logic [7:0] first, last;          // partitions [first, last)
    span_t [3:0] reads;                // src0, src1, s0, s1
    span_t [1:0] writes;               // dst, the reduction
  } footprint_t;

  function automatic span_t span_of(isa_access_t a, isa_d_type_e t);
    logic signed [SpanW-1:0] lo, hi, reach, size;
    size = SpanW'(dtype_bytes(t));
    lo = '0;
    hi = '0;
    for (int d = 0; d < 4; d++) begin
      reach = a.count[d] == '0 ? '0
            : (SpanW'($signed({1'b0, a.count[d]})) - 1) * SpanW'($signed(a.stride[d])) * size;
      if (reach < 0) lo += reach;
      else hi += reach;
    end
    return '{on: 1'b1, space: a.space, lo: SpanW'(a.addr) + lo, hi: SpanW'(a.addr) + hi + size};
  endfunction
  function automatic span_t word_at(logic [31:0] addr);  // one FP32 word in SBUF
    return '{on: 1'b1, space: MemSpaceSbuf, lo: SpanW'(addr), hi: SpanW'(addr) + 4};
  endfunction
  function automatic logic meets(span_t a, span_t b);
    return a.on && b.on && a.space == b.space && a.lo < b.hi && b.lo < a.hi;
  endfunction

  function automatic footprint_t footprint(isa_ve_instr_t in);
    footprint_t f;
    logic moves;  // transpose and shuffle move data within a 32-partition quadrant
    logic [8:0] first, last;
    isa_opcode_e op;
    op = in.opcode;
    moves = op == IsaTranspose || op == IsaShuffle;
    first = 9'(in.start_partition);
    last = 9'(in.start_partition) + 9'(in.partitions);
    if (moves) begin
      first = first & ~9'd31;
      last = (last + 9'd31) & ~9'd31;
    end
    f = '0;
    f.first = 8'(first);
    f.last = 8'(last);
    if (op != IsaMemset && op != IsaIota) f.reads[0] = span_of(in.src0, in.in0);
    if (op == IsaTensorTensor || op == IsaTensorTensorScan || op == IsaScalarTensorTensor)
      f.reads[1] = span_of(in.src1, in.in1);
    if (in.s0_per_partition && (op == IsaTensorScalar || op == IsaActivation || op == IsaTensorTensorScan ||
                                op == IsaScalarTensorTensor || op == IsaTensorScalarReduce))
      f.reads[2] = word_at(in.s0);
    if (in.s1_per_partition && (op == IsaTensorScalar || op == IsaActivation)) f.reads[3] = word_at(in.s1);
    f.writes[0] = span_of(in.dst, in.out);
    if (in.acc_enable && (op == IsaActivation || op == IsaTensorScalarReduce))
      f.writes[1] = word_at(32'(in.acc_addr));
    return f;
  endfunction
  // Whether `later` must wait for `earlier`'s results.
  function automatic logic blocks(footprint_t earlier, footprint_t later);
    logic b;
    b = 1'b0;
    if (earlier.first < later.last && later.first < earlier.last)
      for (int w = 0; w < 2; w++) begin
        for (int r = 0; r < 4; r++) b |= meets(earlier.writes[w], later.reads[r]);
        for (int v = 0; v < 2; v++) b |= meets(earlier.writes[w], later.writes[v]);
      end
    return b;
  endfunction

  footprint_t head, streaming_q, table_q [Depth];
  logic [Depth-1:0][15:0] left_q;      // engine cycles until its results land (0: at this edge)
  logic [Depth-1:0] valid_q;
  logic busy_q;                        // the engine streams streaming_q
  logic done_q;                        // the engine is done with streaming_q, the interval not
  logic streamed, free_found;
  logic [$clog2(Depth):0] free_slots;
  logic [$clog2(Depth)-1:0] free;

  assign head = footprint(head_i);
  assign streamed = done_q && !hold_i;  // it lands latency_i cycles after this edge
  always_comb begin
    // The next is offered only once the engine is done with this one and its footprint is
    // known to be clear (an offer, once made, is never withdrawn).
    hazard_o = busy_q || (done_q && blocks(streaming_q, head));
    landing_o = done_q;
    free_slots = '0;
    free_found = 1'b0;
    free = '0;
    for (int e = Depth - 1; e >= 0; e--) begin
      if (valid_q[e] && left_q[e] != '0) begin
        landing_o = 1'b1;
        hazard_o |= blocks(table_q[e], head);
      end
      if (!valid_q[e] || left_q[e] == '0) begin
        free_slots += 1'b1;
        free_found = 1'b1;
        free = $clog2(Depth)'(e);
      end
    end
    // The next instruction needs a slot besides the one the last still streaming takes.
    hazard_o |= latency_i != '0 && free_slots <= ($clog2(Depth) + 1)'(done_q);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
      busy_q <= 1'b0;
      done_q <= 1'b0;
      streaming_q <= '0;
    end else begin
      for (int e = 0; e < int'(Depth); e++) begin
        if (valid_q[e] && left_q[e] == '0) valid_q[e] <= 1'b0;
        else if (valid_q[e]) left_q[e] <= left_q[e] - 1'b1;
      end
      if (take_i) streaming_q <= head;
      if (take_i && latency_i != '0) busy_q <= 1'b1;
      else if (done_i) busy_q <= 1'b0;
      if (done_i && latency_i != '0) done_q <= 1'b1;
      else if (streamed) done_q <= 1'b0;
      if (streamed && free_found) begin
        valid_q[free] <= 1'b1;
        left_q[free] <= latency_i - 1'b1;
        table_q[free] <= streaming_q;
      end
    end
  end
  // The queue is held while the table is full, so a streamed instruction always finds a slot.
  `NC_ASSERT(LandingTableHasRoom, streamed |-> free_found)
  `NC_ASSERT(DoneOnlyAfterTheLastLanded, done_i |-> !done_q)
endmodule
