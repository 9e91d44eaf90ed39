// The NeuronCore's descriptor-list walkers: one per DMA engine. A dma_list (sp queue) loads
// engine e's walker with a list of `count` 32-byte entries in HBM (model/dma/dma.h); the walker
// fetches them ahead through a fetch unit of its own (nc_core_fetch, one beat an entry, sharing
// the core's fetch port) into a Depth-entry buffer, and offers them in order to the engine's
// descriptor queue: the final entry with `last` set, so that the list completes once, as the
// dma_list's tracker entry expects. Policy (rtl/core/README.md, "Descriptor lists"):
//   - requests run to the list's next Chunk-entry boundary (from its first entry) and go out as
//     soon as they fit in the buffer and one of the engine's Streams request slots is free;
//   - an entry with its engine or last field, or a bit above the dma format, set is offered as
//     malformed: its engine refuses it (DmaErrorDescriptor), like any refused descriptor, and
//     the list goes on;
//   - while a walker is active, the sync queue holds any descriptor or list for its engine.
`include "nc_assert.svh"

module nc_core_lists
  import nc_isa_pkg::*;
  import nc_dma_pkg::*;
#(
  parameter int unsigned Engines = 16,
  parameter int unsigned Depth = 16,    // entries buffered per engine (a power of two)
  parameter int unsigned Chunk = 8,     // entries per request once aligned (a power of two)
  parameter int unsigned Streams = 2,   // requests in flight per engine
  parameter int unsigned AddrW = 40,
  localparam int unsigned EngW = $clog2(Engines),
  localparam int unsigned CountW = 24,  // the ISA's count field
  localparam int unsigned SlotW = $clog2(Depth)
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                halt_i,
  // a dma_list the sync queue issues
  input  logic                start_i,
  input  logic [EngW-1:0]     start_engine_i,
  input  logic [AddrW-1:0]    start_addr_i,
  input  logic [CountW-1:0]   start_count_i,
  output logic [Engines-1:0]  active_o,        // a list not yet fully offered
  // HBM read port (to the fetch-port arbiter)
  output logic                rd_valid_o,
  input  logic                rd_ready_i,
  output logic [AddrW-1:0]    rd_addr_o,
  output logic [31:0]         rd_id_o,
  input  logic                rsp_valid_i,
  input  logic [31:0]         rsp_id_i,
  input  logic [255:0]        rsp_data_i,
  // each engine's next entry, taken when its DMA queue has room and its port picks it
  output logic [Engines-1:0]  desc_valid_o,
  output dma_entry_t          desc_o [Engines],
  input  logic [Engines-1:0]  desc_take_i,
  output logic [31:0]         cnt_entries_o    // entries fetched
);
  logic [31:0]     handed_q [Engines], arrived [Engines], length [Engines];
  logic [AddrW-1:0] base [Engines];
  logic [Engines-1:0] load, fill_engine_hit;
  logic [255:0]    buf_q [Engines][Depth];
  logic            fill_valid;
  logic [EngW-1:0] fill_engine;
  logic [SlotW-1:0] fill_slot;
  logic [255:0]    fill_data;
  logic [31:0]     cnt_bursts [Engines];
  /* verilator lint_off UNUSEDSIGNAL */
  logic            fill_beat;  // one beat an entry
  /* verilator lint_on UNUSEDSIGNAL */

  for (genvar e = 0; e < Engines; e++) begin : g_load
    assign load[e] = start_i && start_engine_i == EngW'(e);
    assign base[e] = start_addr_i;
    assign length[e] = 32'(start_count_i);
  end

  nc_core_fetch #(.Queues(Engines), .Beats(1), .Depth(Depth), .Chunk(Chunk), .Streams(Streams),
                  .FirstAlone(1'b0), .IdTag(1'b1), .PcW(32), .AddrW(AddrW)) u_fetch (
    .clk_i, .rst_ni, .load_i(load), .base_i(base), .length_i(length), .pc_i(handed_q),
    .halt_i, .stream_ok_i({Engines{1'b1}}),
    .rd_valid_o, .rd_ready_i, .rd_addr_o, .rd_id_o, .rsp_valid_i, .rsp_id_i, .rsp_data_i,
    .fill_valid_o(fill_valid), .fill_queue_o(fill_engine), .fill_slot_o(fill_slot),
    .fill_beat_o(fill_beat), .fill_data_o(fill_data), .arrived_o(arrived),
    .cnt_bursts_o(cnt_bursts)
  );

  logic [31:0] count_q [Engines];
  for (genvar e = 0; e < Engines; e++) begin : g_engine
    logic [255:0] raw;
    isa_dma_t d;
    assign raw = buf_q[e][SlotW'(handed_q[e])];
    assign d = isa_dma_t'(raw[IsaDmaBits-1:0]);
    assign active_o[e] = handed_q[e] != count_q[e];
    assign desc_valid_o[e] = active_o[e] && handed_q[e] != arrived[e];
    always_comb begin
      desc_o[e].malformed = raw[255:IsaDmaBits] != '0 || d.engine != '0 || d.last;
      desc_o[e].desc = d;
      desc_o[e].desc.last = handed_q[e] + 1 == count_q[e];  // the final entry ends the list
    end
    assign fill_engine_hit[e] = fill_valid && fill_engine == EngW'(e);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        handed_q[e] <= '0;
        count_q[e] <= '0;
      end else if (load[e]) begin
        handed_q[e] <= '0;
        count_q[e] <= 32'(start_count_i);
      end else if (desc_take_i[e]) begin
        handed_q[e] <= handed_q[e] + 1;
      end
    end
    always_ff @(posedge clk_i) begin
      if (fill_engine_hit[e]) buf_q[e][fill_slot] <= fill_data;
    end
    // A list starts only on an idle walker; an entry is taken only once it has arrived.
    `NC_ASSERT(ListLoadsAnIdleWalker, load[e] |-> !active_o[e])
    `NC_ASSERT(ListTakesAnArrivedEntry, desc_take_i[e] |-> desc_valid_o[e])
  end

  always_comb begin
    cnt_entries_o = '0;
    for (int e = 0; e < int'(Engines); e++) cnt_entries_o += cnt_bursts[e];
  end
endmodule
