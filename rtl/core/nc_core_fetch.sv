// The NeuronCore's fetch unit: refills each queue's instruction buffer (in its sequencer,
// nc_core_seq) from the program image in HBM, through an HBM read port of its own. The same
// unit, instanced with one "queue" per DMA engine and one 32-byte beat per item, fetches the
// entries of descriptor lists (nc_core_lists): "instruction" below reads "item".
//
// Policy (rtl/core/README.md, "Instruction fetch"; model::CoreModel does the same):
//   - A queue's instructions [pc, requested) hold slots of its Depth-entry buffer. A request for
//     the queue's next n instructions is made as soon as they fit (requested + n - pc <= Depth)
//     and one of the queue's Streams request slots is free: at most one new request per queue
//     and cycle. n runs to the stream's next Chunk boundary (Chunk instructions once aligned),
//     and to its end; the first request reads instruction 0 alone (FirstAlone), so that it
//     arrives first.
//   - The read port sends one 32-byte burst a cycle, round-robin over the requests that still
//     have bursts to send (queue by queue, stream by stream).
//   - Responses come back in any order (by id: queue, stream, burst) and are written straight
//     into the buffer. A chunk is complete when every burst has arrived; complete chunks are
//     handed to the sequencer in request order (arrived_o), one per queue and cycle.
// A queue starts when it is loaded (load_i: its base, length; its pc restarts at 0); a list
// engine is loaded again only once its previous list has been handed over. The unit issues
// nothing while halted; it never back-pressures a response.
`include "nc_assert.svh"

module nc_core_fetch
  import nc_isa_pkg::*;
#(
  parameter int unsigned Queues = NumQueues,
  parameter int unsigned Beats = InstrW / 256,  // 32-byte bursts per instruction
  parameter int unsigned Depth = 32,    // instructions per queue buffer (a power of two)
  parameter int unsigned Chunk = 8,     // instructions per request once aligned (a power of two)
  parameter int unsigned Streams = 4,   // requests in flight per queue
  parameter bit          FirstAlone = 1'b1,
  parameter bit          IdTag = 1'b0,  // bit 16 of its read ids (two units share one port)
  parameter int unsigned PcW = 32,
  parameter int unsigned AddrW = 40,
  localparam int unsigned QueueW = $clog2(Queues),
  localparam int unsigned BurstW = $clog2(Chunk * Beats),  // a burst's place in its request
  localparam int unsigned StreamW = Streams > 1 ? $clog2(Streams) : 1,
  localparam int unsigned SlotW = $clog2(Depth),
  localparam int unsigned BeatW = Beats > 1 ? $clog2(Beats) : 1
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic [Queues-1:0]  load_i,             // the queue starts from base_i, length_i
  input  logic [AddrW-1:0]   base_i [Queues],    // each stream's first word (at load_i)
  input  logic [PcW-1:0]     length_i [Queues],  // instructions (at load_i)
  input  logic [PcW-1:0]     pc_i [Queues],      // each consumer's next instruction (0 at load)
  input  logic               halt_i,
  input  logic [Queues-1:0]  stream_ok_i,        // the core's check of each stream
  // HBM read port (32-byte bursts; responses by id, in any order, never back-pressured)
  output logic               rd_valid_o,
  input  logic               rd_ready_i,
  output logic [AddrW-1:0]   rd_addr_o,
  output logic [31:0]        rd_id_o,
  input  logic               rsp_valid_i,
  input  logic [31:0]        rsp_id_i,
  input  logic [255:0]       rsp_data_i,
  // buffer fill (one 32-byte beat of one instruction slot of one queue)
  output logic               fill_valid_o,
  output logic [QueueW-1:0]  fill_queue_o,
  output logic [SlotW-1:0]   fill_slot_o,
  output logic [BeatW-1:0]   fill_beat_o,
  output logic [255:0]       fill_data_o,
  output logic [PcW-1:0]     arrived_o [Queues],  // instructions [0, arrived) are in the buffer or issued
  output logic [31:0]        cnt_bursts_o [Queues]
);
  localparam int unsigned NumSlots = Queues * Streams;
  localparam int unsigned ReqW = $clog2(Chunk) + 1;
  localparam int unsigned SentW = BurstW + 1;
  localparam int unsigned ItemBytes = Beats * 32;
  localparam int unsigned IdW = QueueW + StreamW + BurstW;

  typedef struct packed {
    logic             valid;
    logic [PcW-1:0]   first;  // first instruction
    logic [ReqW-1:0]  n;      // instructions
    logic [SentW-1:0] sent;   // bursts sent
    logic [SentW-1:0] got;    // bursts arrived
  } request_t;

  request_t         req_q [Queues][Streams];
  logic [AddrW-1:0] base_q [Queues];
  logic [PcW-1:0]   length_q [Queues], requested_q [Queues], arrived_q [Queues];
  logic [StreamW-1:0] alloc_q [Queues], commit_q [Queues];  // next stream to use, oldest
  logic [31:0]      bursts_q [Queues];

  // ---- requests ---------------------------------------------------------------------------
  logic             alloc [Queues];
  logic [ReqW-1:0]  alloc_n [Queues];
  always_comb begin
    for (int q = 0; q < int'(Queues); q++) begin
      logic [PcW-1:0] left, end_pc;
      logic [PcW-1:0] to_boundary;
      left = length_q[q] - requested_q[q];
      to_boundary = PcW'(Chunk) - (requested_q[q] & PcW'(Chunk - 1));
      alloc_n[q] = FirstAlone && requested_q[q] == '0 ? ReqW'(1)
                 : left < to_boundary ? ReqW'(left) : ReqW'(to_boundary);
      end_pc = requested_q[q] + PcW'(alloc_n[q]);
      alloc[q] = !load_i[q] && !halt_i && stream_ok_i[q] && left != '0 && !req_q[q][alloc_q[q]].valid &&
                 end_pc - pc_i[q] <= PcW'(Depth);
    end
  end

  // ---- the read port: round-robin over the requests with bursts to send --------------------
  logic                        send_any;
  logic [$clog2(NumSlots)-1:0] send_slot, rr_q;
  /* verilator lint_off UNUSEDSIGNAL */  // a request's other fields
  function automatic logic wants(request_t r);
    return r.valid && r.sent != SentW'(32'(r.n) * Beats);
  endfunction
  always_comb begin
    send_any = 1'b0;
    send_slot = '0;
    for (int k = 1; k <= int'(NumSlots); k++) begin
      int s;
      s = (int'(rr_q) + k) % int'(NumSlots);
      if (!send_any && wants(req_q[s / Streams][s % Streams])) begin
        send_any = 1'b1;
        send_slot = $clog2(NumSlots)'(s);
      end
    end
  end
  request_t send_req;  // (its count of bursts back is not the sender's)
  logic [QueueW-1:0]  send_queue;
  logic [StreamW-1:0] send_stream;
  assign send_queue = QueueW'(32'(send_slot) / Streams);
  assign send_stream = StreamW'(32'(send_slot) % Streams);
  assign send_req = req_q[send_queue][send_stream];
  assign rd_valid_o = send_any && !halt_i;
  assign rd_addr_o = base_q[send_queue] + AddrW'(send_req.first) * AddrW'(ItemBytes) +
                     AddrW'(send_req.sent) * AddrW'(32);
  assign rd_id_o = 32'({IdTag, 16'(32'({send_queue, send_stream, BurstW'(send_req.sent)}))});

  // ---- responses: straight into the buffer ----------------------------------------------------
  logic [QueueW-1:0]  rsp_queue;
  logic [StreamW-1:0] rsp_stream;
  logic [BurstW-1:0]  rsp_burst;
  request_t           rsp_req;  // (its count sent is not the receiver's)
  logic [31-IdW:0]    rsp_id_unused;  // the fabric's own bits: the port
  /* verilator lint_on UNUSEDSIGNAL */
  assign {rsp_id_unused, rsp_queue, rsp_stream, rsp_burst} = rsp_id_i;
  assign rsp_req = req_q[rsp_queue][rsp_stream];
  assign fill_valid_o = rsp_valid_i;
  assign fill_queue_o = rsp_queue;
  assign fill_slot_o = SlotW'(rsp_req.first + PcW'(32'(rsp_burst) / Beats));
  assign fill_beat_o = BeatW'(32'(rsp_burst) % Beats);  // (0 with one beat an item)
  assign fill_data_o = rsp_data_i;

  // ---- state (a block per queue and per request slot: Verilator schedules those best) -------
  logic send_fire;
  assign send_fire = rd_valid_o && rd_ready_i;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rr_q <= '0;
    else if (send_fire) rr_q <= send_slot;
  end

  logic commit [Queues];  // the queue's oldest request is complete: its instructions are the sequencer's
  for (genvar q = 0; q < int'(Queues); q++) begin : g_queue
    /* verilator lint_off UNUSEDSIGNAL */
    request_t oldest;  // (its count sent does not matter here)
    /* verilator lint_on UNUSEDSIGNAL */
    assign oldest = req_q[q][commit_q[q]];
    assign commit[q] = oldest.valid && oldest.got == SentW'(32'(oldest.n) * Beats);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        base_q[q] <= '0;
        length_q[q] <= '0;
        requested_q[q] <= '0;
        arrived_q[q] <= '0;
        alloc_q[q] <= '0;
        commit_q[q] <= '0;
        bursts_q[q] <= '0;
      end else if (load_i[q]) begin
        base_q[q] <= base_i[q];
        length_q[q] <= length_i[q];
        requested_q[q] <= '0;
        arrived_q[q] <= '0;
        alloc_q[q] <= '0;
        commit_q[q] <= '0;
      end else begin
        if (commit[q]) begin
          arrived_q[q] <= oldest.first + PcW'(oldest.n);
          commit_q[q] <= StreamW'((32'(commit_q[q]) + 1) % Streams);
        end
        if (alloc[q]) begin
          requested_q[q] <= requested_q[q] + PcW'(alloc_n[q]);
          alloc_q[q] <= StreamW'((32'(alloc_q[q]) + 1) % Streams);
        end
        if (rsp_valid_i && rsp_queue == QueueW'(q)) bursts_q[q] <= bursts_q[q] + 1'b1;
      end
    end
    // A queue is loaded only when nothing of its previous stream is in flight.
    logic loading, idle;
    assign loading = load_i[q];
    assign idle = requested_q[q] == arrived_q[q] && !oldest.valid;
    `NC_ASSERT(FetchLoadsAnIdleQueue, loading |-> idle)
    for (genvar k = 0; k < int'(Streams); k++) begin : g_stream
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) begin
          req_q[q][k] <= '0;
        end else if (!load_i[q]) begin
          // A free slot is allocated; a busy one counts its bursts and frees once committed.
          if (alloc[q] && alloc_q[q] == StreamW'(k)) begin
            req_q[q][k] <= '{valid: 1'b1, first: requested_q[q], n: alloc_n[q], sent: '0, got: '0};
          end else begin
            if (commit[q] && commit_q[q] == StreamW'(k)) req_q[q][k].valid <= 1'b0;
            if (send_fire && send_queue == QueueW'(q) && send_stream == StreamW'(k))
              req_q[q][k].sent <= req_q[q][k].sent + 1'b1;
            if (rsp_valid_i && rsp_queue == QueueW'(q) && rsp_stream == StreamW'(k))
              req_q[q][k].got <= req_q[q][k].got + 1'b1;
          end
        end
      end
    end
  end

  assign arrived_o = arrived_q;
  assign cnt_bursts_o = bursts_q;

  // A response belongs to a burst that was sent and has not come back yet.
  `NC_ASSERT(FetchRspMatchesARequest,
             rsp_valid_i |-> rsp_req.valid && rsp_req.got < rsp_req.sent && 32'(rsp_queue) < Queues)
  // A buffer slot is an instruction's index modulo Depth; a request must fit in the buffer.
  if ((Depth & (Depth - 1)) != 0 || (Chunk & (Chunk - 1)) != 0 || Depth < Chunk) begin : g_bad_depth
    $fatal(1, "nc_core_fetch: Depth and Chunk must be powers of two, Depth at least Chunk");
  end
endmodule
