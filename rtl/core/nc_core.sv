// The NeuronCore top: five instruction queues with their sequencers (pe, act, dve, sp, cc), 32
// semaphores, the tensor engine (PE array and PSUM), the vector and scalar engines, 16 DMA
// engines, and the SBUF they share. The HBM side of the DMA engines is this module's HBM port
// (the memory system outside the core); the cc queue's collectives go out on the collective
// port to the chip's collective engine. README.md in this folder describes the semantics, the
// status codes and the ports; model::CoreModel is the golden model of the same programs.
`include "nc_assert.svh"

module nc_core
  import nc_isa_pkg::*;
  import nc_tensor_pkg::*;
  import nc_vector_pkg::ve_counters_t;
#(
  parameter int unsigned Size = 128,          // PE rows = PE columns = lanes = SBUF partitions
  parameter int unsigned Banks = 8,           // PSUM banks
  parameter int unsigned BankElems = 512,     // FP32 words per PSUM bank and partition
  parameter int unsigned SbufBytes = 229376,  // per partition (28 MiB at 128 partitions)
  // Instruction fetch (README.md, "Instruction fetch"; model::FetchConfig): each queue's
  // buffer, the instructions one request reads, the requests a queue has in flight
  parameter int unsigned FetchDepth = 32,
  parameter int unsigned FetchChunk = 8,
  parameter int unsigned FetchStreams = 4,
  // Descriptor lists (README.md, "Descriptor lists"; model::ListFetchConfig): entries buffered
  // per DMA engine, entries one request reads, requests an engine has in flight
  parameter int unsigned ListDepth = 16,
  parameter int unsigned ListChunk = 8,
  parameter int unsigned ListStreams = 2,
  // HBM and SBUF ports of the DMA: engine e is served by port e % DmaPorts (1, 2, 4 or 8)
  parameter int unsigned DmaPorts = 4,
  parameter int unsigned DmaTags = 64,        // HBM reads in flight per DMA engine
  // HBM ports: the DMA's, then the fetch unit's (reads only: instructions and list entries)
  localparam int unsigned HbmPorts = DmaPorts + 1,
  localparam int unsigned FetchPort = DmaPorts,
  localparam int unsigned PcW = 32,           // an instruction's index in its queue
  localparam int unsigned InstrBytes = InstrW / 8,
  localparam int unsigned QueueW = $bits(isa_queue_e),
  localparam int unsigned HbmAddrW = nc_dma_pkg::HbmAddrW,
  localparam int unsigned FlatW = nc_dma_pkg::SbufAddrW,
  // Commit channels: a nop on each queue, the tensor engine's MMs (one per column segment)
  // and LS, the vector and scalar engines, the sync queue's DMA completions, the collectives.
  localparam int unsigned NumCommit = NumQueues + Segs + 1 + 2 + 1 + 1,
  // semaphore signals: each queue's sequencer (pe, act, dve, sp nop, cc), then DMA
  localparam int unsigned NumSig = NumQueues + 1
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // start (the testbench's or host's port): where each queue's stream lies in the program
  // image in HBM and its length, taken at start_i; initial semaphores before it
  input  logic                  sem_wr_valid_i,
  input  logic [4:0]            sem_wr_index_i,
  input  logic [15:0]           sem_wr_value_i,
  input  logic                  start_i,
  input  logic [HbmAddrW-1:0]   queue_base_i [NumQueues],
  input  logic [PcW-1:0]        queue_length_i [NumQueues],
  // the program image [image_base_i, + image_bytes_i): DMA may not write into it
  input  logic [HbmAddrW-1:0]   image_base_i,
  input  logic [HbmAddrW-1:0]   image_bytes_i,
  input  logic [31:0]           watchdog_cycles_i,   // cycles without progress; 0: off
  // The vector (index 0) and scalar (1) engines' minimum instruction interval, MIN_II (issue 49,
  // model::EngineCosts::min_cycles; 0: none, the uniform timing): nc_core_seq.
  input  logic [15:0]           ve_min_cycles_i [2],
  // Their pipeline latency: results land this many of the engine's cycles after it has
  // streamed an instruction (model::EngineCosts::static_cycles; 0: none): nc_core_pipeline.
  input  logic [15:0]           ve_static_cycles_i [2],
  // The vector engine's performance mode (NeuronCore-v3's; off in the trn1 preset).
  input  logic                  ve_perf_mode_i,
  // The vector and scalar engines take turns on PSUM (NeuronCore-v2's rule, the trn1 preset;
  // model::PsumAccess): "PSUM between the Vector and Scalar engines" in the README.
  input  logic                  ve_psum_serial_i,
  // The tensor engine's LoadStationary columns a cycle: 1, 2 or 4 (model::TensorCosts).
  input  logic [2:0]            te_ls_columns_i,
  // Its power throttling (model::ThrottleConfig, in tensor cycles; nc_tensor_engine): on, the
  // share at the ramp's start and gained a cycle (Q0.32), the window, the low-use threshold.
  input  logic                  te_throttle_en_i,
  input  logic [31:0]           te_throttle_start_i,
  input  logic [31:0]           te_throttle_step_i,
  input  logic [15:0]           te_throttle_window_i,
  input  logic [16:0]           te_throttle_low_i,
  // The DMA engines' (model::DmaCosts; all 0: none): a descriptor's least time, per row and per
  // byte of a copy (0) and a transpose (1), in dma-domain cycles, Q8.24 (nc_dma); from a
  // dma_copy's issue to its first byte (descriptor generation), and from another queue's signal
  // to the start of a DMA that waited on it, in base cycles.
  input  logic [31:0]           dma_row_cost_i,
  input  logic [1:0][31:0]      dma_byte_cost_i,
  input  logic [31:0]           dma_descriptor_cycles_i,
  input  logic [31:0]           dma_sem_to_start_cycles_i,
  // Clock domains (issue 49; README.md, "Clock domains"): each domain's clock is the base clock
  // (clk_i) divided by its divider (1 .. 127), from the start edge: tensor, scalar, vector,
  // dma (model::ClockDomain's order). Taken at start; all 1: one clock, as before issue 49.
  input  logic [6:0]            clk_divide_i [4],
  // which domains' clocks rise at the end of this base cycle (all, while not running): the
  // harness steps what sits in a domain (the HBM behind the dma domain) on its edges
  output logic [3:0]            clk_en_o,
  input  logic [5:0]            hbm_bytes_log2_i,
  // SBUF debug port: 32 bytes at partition * 229376 + offset (writes clocked, reads not)
  input  logic                  dbg_sbuf_wr_valid_i,
  input  logic [FlatW-1:0]      dbg_sbuf_addr_i,
  input  logic [255:0]          dbg_sbuf_wr_data_i,
  output logic [255:0]          dbg_sbuf_rd_data_o,
  // PSUM debug read port (only while the queues do not run): one word of every partition,
  // the data the next cycle, as the engines read it
  input  logic                  dbg_psum_rd_valid_i,
  input  logic [$clog2(Banks)-1:0]     dbg_psum_bank_i,
  input  logic [$clog2(BankElems)-1:0] dbg_psum_elem_i,
  output logic                  dbg_psum_rd_rsp_valid_o,
  output logic [31:0]           dbg_psum_rd_data_o [Size],
  // HBM: one port per DMA port, then the fetch unit's (FetchPort, which never writes);
  // 32-byte bursts; read responses in any order, by id, on the port that sent the read, never
  // back-pressured
  output logic [HbmPorts-1:0]         hbm_rd_valid_o,
  input  logic [HbmPorts-1:0]         hbm_rd_ready_i,
  output logic [HbmAddrW-1:0]   hbm_rd_addr_o [HbmPorts],
  output logic [HbmPorts-1:0][31:0]   hbm_rd_id_o,
  output logic [HbmPorts-1:0]         hbm_wr_valid_o,
  input  logic [HbmPorts-1:0]         hbm_wr_ready_i,
  output logic [HbmAddrW-1:0]   hbm_wr_addr_o [HbmPorts],
  output logic [HbmPorts-1:0][31:0]   hbm_wr_id_o,
  output logic [HbmPorts-1:0][255:0]  hbm_wr_data_o,
  input  logic [HbmPorts-1:0]         hbm_rsp_valid_i,
  input  logic [HbmPorts-1:0][31:0]   hbm_rsp_id_i,
  input  logic [HbmPorts-1:0][255:0]  hbm_rsp_data_i,
  // Collectives (cc queue) to the chip's collective engine: one taken per handshake; each ends
  // with a done pulse, in issue order, echoing its tag, with the engine's refusal code if any
  output logic                  cc_req_valid_o,
  input  logic                  cc_req_ready_i,
  output isa_cc_instr_t         cc_req_o,
  input  logic                  cc_done_valid_i,
  input  logic [7:0]            cc_done_tag_i,
  input  isa_cc_error_e         cc_done_error_i,
  // status: valid once finished_o is set
  output logic                  ready_o,       // out of reset (PSUM cleared): start may come
  output logic                  running_o,
  output logic                  finished_o,
  output isa_core_status_e      status_o,
  output isa_core_error_e       err_code_o,
  output logic [QueueW-1:0]     err_queue_o,
  output logic [PcW-1:0]        err_pc_o,
  output logic [7:0]            err_detail_o,  // the engine's or decoder's code; sem index
  output logic [NumQueues-1:0]  waiting_o,     // queues waiting on a semaphore
  output logic [PcW-1:0]        pc_o [NumQueues],
  output logic [15:0]           sems_o [32],
  // counters since start
  output logic [63:0]           cnt_cycles_o,
  output logic [31:0]           cnt_issued_o [NumQueues],
  output logic [31:0]           cnt_wait_o [NumQueues],    // cycles the queue's head waited
  output logic [31:0]           cnt_fetch_stall_o [NumQueues],  // cycles its head had not arrived
  output logic [31:0]           cnt_fetch_bursts_o [NumQueues], // 32-byte bursts fetched for it
  output logic [31:0]           cnt_busy_o [NumQueues],    // cycles the queue's engine was busy
  output logic [63:0]           cnt_te_macs_o,
  output logic [63:0]           cnt_te_stream_o,   // cycles the PE array streamed work
  output logic [31:0]           cnt_dma_bursts_o,
  output logic [31:0]           cnt_list_entries_o,  // descriptor-list entries fetched
  // Lockstep observation (README.md, "Commit and write ports"): every instruction as it
  // completes, every semaphore signal as it applies, every SBUF and PSUM write as it happens
  // (HBM writes are the HBM port's). Tags are the low 8 bits of the instruction's index.
  output logic                  commit_valid_o [NumCommit],
  output logic [QueueW-1:0]     commit_queue_o [NumCommit],
  output logic [PcW-1:0]        commit_pc_o [NumCommit],
  output logic                  sem_effect_valid_o [NumSig],
  output logic [QueueW-1:0]     sem_effect_queue_o [NumSig],
  output logic [PcW-1:0]        sem_effect_pc_o [NumSig],
  output logic [1:0]            sem_effect_op_o [NumSig],     // isa_sig_op_e
  output logic [4:0]            sem_effect_sem_o [NumSig],
  output logic [15:0]           sem_effect_value_o [NumSig],
  // the vector (0) and scalar (1) engines: one element of each partition in ve_write_mask_o
  output logic                  ve_write_valid_o [2],
  output logic [7:0]            ve_write_tag_o [2],
  output logic                  ve_write_psum_o [2],          // else SBUF
  output logic [nc_vector_pkg::AddrW-1:0] ve_write_addr_o [2], // byte offset in a partition
  output logic [2:0]            ve_write_bytes_o [2],
  output logic [Size-1:0]       ve_write_mask_o [2],
  output logic [Size-1:0][31:0] ve_write_data_o [2],
  // the tensor engine: per partition, the PSUM word after the write
  output logic                  te_write_any_o,
  output logic                  te_write_valid_o [Size],
  output logic [7:0]            te_write_tag_o [Size],
  output logic [$clog2(Banks)-1:0]     te_write_bank_o [Size],
  output logic [$clog2(BankElems)-1:0] te_write_elem_o [Size],
  output logic [1:0]            te_write_half_o [Size],       // 0 word, 1 low half, 2 high half
  output logic [31:0]           te_write_data_o [Size],
  // the DMA ports' SBUF writes (32 bytes at a flat address) and the engine that made each
  output logic [DmaPorts-1:0]   dma_write_valid_o,
  output logic [3:0]            dma_write_engine_o [DmaPorts],
  output logic [FlatW-1:0]      dma_write_addr_o [DmaPorts],
  output logic [255:0]          dma_write_data_o [DmaPorts]
);
  localparam int unsigned NumQ = NumQueues;
  localparam int unsigned DmaEngines = 16;
  localparam int unsigned PortEngines = DmaEngines / DmaPorts;  // DMA engines per port
  localparam int unsigned TrkDepth = 8;   // dma_copy instructions outstanding per DMA engine
  localparam int unsigned PsumBytes = Banks * BankElems * 4;
  localparam int unsigned VeAddrW = nc_vector_pkg::AddrW;

  // ---------------------------------------------------------------------------------------
  // Clock domains (nc_core_clocks, instanced with the run state below). A domain's blocks run
  // on its gated clock; what several domains write (semaphores, status) and the SBUF's ports
  // sit on the base clock and act only in the base cycles that end with the writer's edge.
  // ---------------------------------------------------------------------------------------
  localparam int unsigned DomTensor = 0, DomScalar = 1, DomVector = 2, DomDma = 3, Domains = 4;
  logic [Domains-1:0] dom_en, dom_clk;
  logic [6:0]         dom_left [Domains];  // base cycles to each domain's next edge, less one
  logic clk_te, clk_act, clk_dve, clk_dma;   // the tensor, scalar, vector and dma domains
  logic en_te, en_act, en_dve, en_dma;
  assign {clk_dma, clk_dve, clk_act, clk_te} = dom_clk;
  assign {en_dma, en_dve, en_act, en_te} = dom_en;
  assign clk_en_o = dom_en;
  // The base cycle this one ends at, counted from the start edge (the golden core's `now`).
  localparam int unsigned TimeW = 48;
  logic [63:0]       cycles_q;   // base cycles since start (the status section counts them)
  logic [TimeW-1:0]  now;
  assign now = TimeW'(cycles_q) + 1'b1;
  // Each queue's sequencer runs on its engine's clock; sp and cc on the dma domain's.
  function automatic int unsigned queue_domain(int q);
    return q == int'(QueuePe) ? DomTensor : q == int'(QueueAct) ? DomScalar
         : q == int'(QueueDve) ? DomVector : DomDma;
  endfunction
  logic [NumQ-1:0] queue_clk, queue_en;
  for (genvar q = 0; q < NumQ; q++) begin : g_queue_clock
    assign queue_clk[q] = dom_clk[queue_domain(q)];
    assign queue_en[q] = dom_en[queue_domain(q)];
  end

  // ---------------------------------------------------------------------------------------
  // Sequencers and semaphores
  // ---------------------------------------------------------------------------------------
  logic [15:0]       sem_q [32];
  logic              halt;
  logic              seq_issue_valid [NumQ], seq_issue_ready [NumQ], seq_drained [NumQ];
  logic [InstrW-1:0] seq_word [NumQ];
  logic [PcW-1:0]    seq_pc [NumQ];
  logic              seq_sig_valid [NumQ];
  isa_header_t       seq_sig_header [NumQ];
  isa_decode_error_e seq_decode_err [NumQ];
  logic              seq_waiting [NumQ], seq_finished [NumQ], seq_issued [NumQ];
  logic [15:0]       seq_interval [NumQ];   // the head instruction's minimum interval
  logic              seq_holding [NumQ], seq_landing [NumQ];
  logic              seq_interval_tail [NumQ];  // it writes a reduction: the interval again

  // Each queue's stream, checked as it is taken at start: bit 0, not 128-byte aligned; bit 1,
  // past the end of HBM. A bad stream stops the core (fetch_refused) before anything issues,
  // and the fetch unit never reads it.
  logic [1:0] stream_bad_q [NumQ];
  logic [NumQ-1:0] stream_ok;
  logic [47:0] stream_lo_q [NumQ], stream_hi_q [NumQ];
  for (genvar q = 0; q < NumQ; q++) begin : g_stream_check
    logic [47:0] stream_end;
    assign stream_end = 48'(queue_base_i[q]) + 48'(queue_length_i[q]) * 48'(InstrBytes);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) stream_bad_q[q] <= '0;
      else if (start_i)
        stream_bad_q[q] <= queue_length_i[q] == '0 ? 2'b00
                         : {stream_end > (48'd1 << hbm_bytes_log2_i),
                            queue_base_i[q][$clog2(InstrBytes)-1:0] != '0};
    end
    assign stream_ok[q] = stream_bad_q[q] == 2'b00;
    // Its extent, for the refusal of a descriptor list over it (DmaErrorListImage).
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        stream_lo_q[q] <= '0;
        stream_hi_q[q] <= '0;
      end else if (start_i) begin
        stream_lo_q[q] <= 48'(queue_base_i[q]);
        stream_hi_q[q] <= stream_end;
      end
    end
  end

  // Instruction fetch: one more HBM read port, filling the sequencers' buffers.
  logic                 fetch_fill_valid;
  logic [QueueW-1:0]    fetch_fill_queue;
  logic [$clog2(FetchDepth)-1:0] fetch_fill_slot;
  logic [$clog2(InstrW / 256)-1:0] fetch_fill_beat;
  logic [255:0]         fetch_fill_data;
  logic [PcW-1:0]       fetch_arrived [NumQ];
  logic                 ifetch_rd_valid, ifetch_rd_ready, lfetch_rd_valid, lfetch_rd_ready;
  logic [HbmAddrW-1:0]  ifetch_rd_addr, lfetch_rd_addr;
  logic [31:0]          ifetch_rd_id, lfetch_rd_id;
  logic                 fetch_pick_list, fetch_list_turn_q;
  nc_core_fetch #(.Depth(FetchDepth), .Chunk(FetchChunk), .Streams(FetchStreams), .PcW(PcW),
                  .AddrW(HbmAddrW)) u_fetch (
    .clk_i(clk_dma), .rst_ni, .load_i({NumQ{start_i}}), .base_i(queue_base_i), .length_i(queue_length_i),
    .pc_i(seq_pc), .halt_i(halt), .stream_ok_i(stream_ok),
    .rd_valid_o(ifetch_rd_valid), .rd_ready_i(ifetch_rd_ready),
    .rd_addr_o(ifetch_rd_addr), .rd_id_o(ifetch_rd_id),
    .rsp_valid_i(hbm_rsp_valid_i[FetchPort] && !hbm_rsp_id_i[FetchPort][16]),
    .rsp_id_i(hbm_rsp_id_i[FetchPort]), .rsp_data_i(hbm_rsp_data_i[FetchPort]),
    .fill_valid_o(fetch_fill_valid), .fill_queue_o(fetch_fill_queue), .fill_slot_o(fetch_fill_slot),
    .fill_beat_o(fetch_fill_beat), .fill_data_o(fetch_fill_data), .arrived_o(fetch_arrived),
    .cnt_bursts_o(cnt_fetch_bursts_o)
  );
  // The fetch port: instruction fetch and the list walkers take turns when both want it; read
  // ids carry the unit in bit 16.
  assign fetch_pick_list = lfetch_rd_valid && (!ifetch_rd_valid || fetch_list_turn_q);
  assign hbm_rd_valid_o[FetchPort] = ifetch_rd_valid || lfetch_rd_valid;
  assign hbm_rd_addr_o[FetchPort] = fetch_pick_list ? lfetch_rd_addr : ifetch_rd_addr;
  assign hbm_rd_id_o[FetchPort] = fetch_pick_list ? lfetch_rd_id : ifetch_rd_id;
  assign ifetch_rd_ready = hbm_rd_ready_i[FetchPort] && !fetch_pick_list;
  assign lfetch_rd_ready = hbm_rd_ready_i[FetchPort] && fetch_pick_list;
  always_ff @(posedge clk_dma or negedge rst_ni) begin
    if (!rst_ni) fetch_list_turn_q <= 1'b0;
    else if (hbm_rd_valid_o[FetchPort] && hbm_rd_ready_i[FetchPort]) fetch_list_turn_q <= !fetch_pick_list;
  end
  // The fetch port only reads.
  assign hbm_wr_valid_o[FetchPort] = 1'b0;
  assign hbm_wr_addr_o[FetchPort] = '0;
  assign hbm_wr_id_o[FetchPort] = '0;
  assign hbm_wr_data_o[FetchPort] = '0;

  for (genvar q = 0; q < NumQ; q++) begin : g_seq
    nc_core_seq #(.Queue(isa_queue_e'(q)), .Fenced(q != int'(QueueSp)), .Depth(FetchDepth),
                  .PcW(PcW)) u_seq (
      .clk_i(queue_clk[q]), .rst_ni, .fill_clk_i(clk_dma),
      .fill_valid_i(fetch_fill_valid && fetch_fill_queue == QueueW'(q)),
      .fill_slot_i(fetch_fill_slot), .fill_beat_i(fetch_fill_beat), .fill_data_i(fetch_fill_data),
      .arrived_i(fetch_arrived[q]), .start_i, .length_i(queue_length_i[q]),
      .halt_i(halt), .sems_i(sem_q),
      .issue_valid_o(seq_issue_valid[q]), .issue_ready_i(seq_issue_ready[q]),
      .issue_word_o(seq_word[q]), .pc_o(seq_pc[q]), .drained_i(seq_drained[q]),
      .interval_i(seq_interval[q]), .interval_tail_i(seq_interval_tail[q]),
      .holding_o(seq_holding[q]), .landing_i(seq_landing[q]),
      .sig_valid_o(seq_sig_valid[q]), .sig_header_o(seq_sig_header[q]),
      .decode_err_o(seq_decode_err[q]), .waiting_o(seq_waiting[q]),
      .finished_o(seq_finished[q]), .issued_o(seq_issued[q]),
      .cnt_issued_o(cnt_issued_o[q]), .cnt_wait_o(cnt_wait_o[q]),
      .cnt_fetch_stall_o(cnt_fetch_stall_o[q])
    );
    assign pc_o[q] = seq_pc[q];
    assign waiting_o[q] = seq_waiting[q];
  end

  // The pc of an instruction an engine reports by its 8-bit tag (the low bits of its pc):
  // the latest issued pc with those low bits (an engine holds far fewer than 256).
  function automatic logic [PcW-1:0] pc_from_tag(logic [PcW-1:0] last_pc, logic [7:0] tag);
    return last_pc - PcW'(8'(last_pc[7:0] - tag));
  endfunction
  logic [PcW-1:0] last_issued_pc_q [NumQ];
  for (genvar q = 0; q < NumQ; q++) begin : g_last_issued_pc
    logic [PcW-1:0] pc_q;  // on the queue's clock
    always_ff @(posedge queue_clk[q] or negedge rst_ni) begin
      if (!rst_ni) pc_q <= '0;
      else if (seq_issued[q]) pc_q <= seq_pc[q];
    end
    assign last_issued_pc_q[q] = pc_q;
  end

  // ---------------------------------------------------------------------------------------
  // Tensor engine (pe queue)
  // ---------------------------------------------------------------------------------------
  isa_te_t       te_payload;
  isa_te_instr_t te_cmd;
  logic      te_ready, te_idle, te_rej_valid, te_err;
  isa_te_error_e te_rej_code, te_err_code;
  logic [7:0] te_rej_tag;
  logic [63:0] te_cnt_busy, te_cnt_macs;

  // The pe queue holds only load_stationary and multiply_moving (the decoder refuses the rest;
  // nops never issue): the word's te payload is the engine's instruction, tagged with its pc.
  assign te_payload = isa_te_t'(seq_word[QueuePe][IsaTeLsb +: IsaTeBits]);
  assign te_cmd = isa_te_instr(isa_opcode_e'(seq_word[QueuePe][7:0]), seq_pc[QueuePe][7:0],
                               te_payload);
  assign seq_issue_ready[QueuePe] = te_ready;
  // No minimum interval beyond the engines' own on pe, sp and cc (the vector and scalar
  // engines' is below).
  for (genvar q = 0; q < NumQ; q++) begin : g_no_interval
    if (q != int'(QueueAct) && q != int'(QueueDve)) begin : g_none
      assign seq_interval[q] = '0;
      assign seq_interval_tail[q] = 1'b0;
      assign seq_landing[q] = 1'b0;
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */  // only the vector and scalar queues' hold their pipelines
  logic unused_holding;
  /* verilator lint_on UNUSEDSIGNAL */
  assign unused_holding = seq_holding[QueuePe] ^ seq_holding[QueueSp] ^ seq_holding[QueueCc];
  assign seq_drained[QueuePe] = te_idle && !seq_issue_valid[QueuePe];

  // SBUF ports of the tensor engine
  logic                 st_req_valid, mv_req_valid, st_rsp_valid, mv_rsp_valid;
  logic [SbufAddrW-1:0] st_req_addr, st_req_rep_step, st_req_tag_addr, st_req_col_step;
  logic [2:0]           st_req_cols;
  logic [31:0]          st_rsp_more [LsCols-1][MaxReps][Size];
  logic [2:0]           st_req_bytes, st_req_reps, mv_req_reps;
  logic [Segs-1:0]      mv_req_segs;
  logic [SbufAddrW-1:0] mv_req_addr [Segs], mv_req_rep_step [Segs];
  logic [2:0]           mv_req_bytes [Segs];
  logic [31:0]          st_rsp_data [MaxReps][Size], mv_rsp_data [MaxReps][Size];
  logic [15:0]          st_rsp_tag [Size];
  // PSUM read port (shared by the vector and scalar engines)
  logic                 psum_rd_valid, psum_rd_ready, psum_rd_rsp_valid;
  logic [$clog2(Banks)-1:0]     psum_rd_bank;
  logic [$clog2(BankElems)-1:0] psum_rd_elem;
  logic [31:0]          psum_rd_rsp_data [Size];
  logic                 psum_wr_valid [Size];
  logic [$clog2(Banks)-1:0]     psum_wr_bank [Size];
  logic [$clog2(BankElems)-1:0] psum_wr_elem [Size];
  logic [1:0]           psum_wr_half [Size];
  logic [31:0]          psum_wr_data [Size];
  logic [7:0]           psum_wr_tag [Size];
  logic [63:0]          te_cnt_unused [8];
  logic                 te_mm_done_valid [Segs], te_ls_done_valid;
  logic [7:0]           te_mm_done_tag [Segs], te_ls_done_tag;

  logic [31:0] te_arr_out_sum_none [Size];
  assign te_arr_out_sum_none = '{default: '0};

  nc_tensor_engine #(.Rows(Size), .Cols(Size), .Banks(Banks), .BankElems(BankElems),
                     .SbufBytes(SbufBytes)) u_te (
    .clk_i(clk_te), .rst_ni,
    .cmd_valid_i(seq_issue_valid[QueuePe]), .cmd_ready_o(te_ready), .cmd_data_i(te_cmd),
    .ls_columns_i(te_ls_columns_i), .throttle_en_i(te_throttle_en_i),
    .throttle_start_i(te_throttle_start_i), .throttle_step_i(te_throttle_step_i),
    .throttle_window_i(te_throttle_window_i), .throttle_low_i(te_throttle_low_i),
    .st_req_valid_o(st_req_valid), .st_req_ready_i(1'b1), .st_req_addr_o(st_req_addr),
    .st_req_cols_o(st_req_cols), .st_req_col_step_o(st_req_col_step), .st_rsp_more_i(st_rsp_more),
    .st_req_bytes_o(st_req_bytes), .st_req_reps_o(st_req_reps),
    .st_req_rep_step_o(st_req_rep_step), .st_req_tag_addr_o(st_req_tag_addr),
    .st_rsp_valid_i(st_rsp_valid), .st_rsp_data_i(st_rsp_data), .st_rsp_tag_i(st_rsp_tag),
    .mv_req_valid_o(mv_req_valid), .mv_req_ready_i(1'b1), .mv_req_segs_o(mv_req_segs),
    .mv_req_addr_o(mv_req_addr), .mv_req_bytes_o(mv_req_bytes), .mv_req_reps_o(mv_req_reps),
    .mv_req_rep_step_o(mv_req_rep_step),
    .mv_rsp_valid_i(mv_rsp_valid), .mv_rsp_data_i(mv_rsp_data),
    .psum_rd_valid_i(psum_rd_valid), .psum_rd_ready_o(psum_rd_ready),
    .psum_rd_bank_i(psum_rd_bank), .psum_rd_elem_i(psum_rd_elem),
    .psum_rd_rsp_valid_o(psum_rd_rsp_valid), .psum_rd_rsp_data_o(psum_rd_rsp_data),
    .psum_ext_wr_valid_i(psum_ext_wr_valid), .psum_ext_wr_ready_o(psum_ext_wr_ready),
    .psum_ext_wr_bank_i(psum_ext_wr_bank), .psum_ext_wr_elem_i(psum_ext_wr_elem),
    .psum_ext_wr_byte_en_i(psum_ext_wr_byte_en), .psum_ext_wr_part_mask_i(psum_ext_wr_part_mask),
    .psum_ext_wr_data_i(psum_ext_wr_data),
    .psum_wr_valid_o(psum_wr_valid), .psum_wr_bank_o(psum_wr_bank),
    .psum_wr_elem_o(psum_wr_elem), .psum_wr_half_o(psum_wr_half),
    .psum_wr_data_o(psum_wr_data), .psum_wr_tag_o(psum_wr_tag),
    .mm_done_valid_o(te_mm_done_valid), .mm_done_tag_o(te_mm_done_tag),
    .ls_done_valid_o(te_ls_done_valid), .ls_done_tag_o(te_ls_done_tag),
    .rej_valid_o(te_rej_valid), .rej_code_o(te_rej_code), .rej_tag_o(te_rej_tag),
    .err_o(te_err), .err_code_o(te_err_code), .idle_o(te_idle),
    .cnt_busy_o(te_cnt_busy), .cnt_macs_o(te_cnt_macs),
    .cnt_stall_sbuf_mv_o(te_cnt_unused[0]), .cnt_stall_sbuf_st_o(te_cnt_unused[1]),
    .cnt_stall_mm_wait_ls_o(te_cnt_unused[2]), .cnt_stall_ls_wait_bank_o(te_cnt_unused[3]),
    .cnt_stall_psum_rd_o(te_cnt_unused[4]), .cnt_mm_o(te_cnt_unused[5]),
    .cnt_ls_o(te_cnt_unused[6]), .cnt_rejected_o(te_cnt_unused[7]),
    // The array inside the engine (ExternalArray = 0): its external ports unused.
    .arr_w_we_o(), .arr_w_row_en_o(), .arr_w_bank_o(), .arr_w_col_o(), .arr_w_col_data_o(),
    .arr_w_col_data1_o(), .arr_w_col_aux_o(), .arr_in_row_o(), .arr_in_op_o(),
    .arr_in_sparsity_o(), .arr_in_data_o(), .arr_out_sum_i(te_arr_out_sum_none)
  );
  assign cnt_te_macs_o = te_cnt_macs;
  assign cnt_te_stream_o = te_cnt_busy;

  logic te_psum_write_any;
  always_comb begin
    te_psum_write_any = 1'b0;
    for (int unsigned p = 0; p < Size; p++) te_psum_write_any |= psum_wr_valid[p];
  end

  // ---------------------------------------------------------------------------------------
  // Vector engine (dve queue, index 0) and scalar engine (act queue, index 1)
  // ---------------------------------------------------------------------------------------
  localparam int unsigned Dve = 0, Act = 1;
  isa_ve_instr_t       ve_cmd [2];
  logic                ve_cmd_valid [2], ve_cmd_ready [2], ve_idle [2];
  logic                ve_hazard [2], ve_landing [2];  // nc_core_pipeline
  logic                ve_done_valid [2];
  logic [7:0]          ve_done_tag [2];
  isa_ve_error_e           ve_done_error [2], ve_err [2];
  ve_counters_t        ve_counters [2];
  logic                ve_rd_valid [2], ve_rd_ready [2], ve_rd_space [2], ve_rd_rsp_valid [2];
  logic [VeAddrW-1:0]  ve_rd_addr [2], ve_wr_addr [2];
  logic [2:0]          ve_rd_bytes [2], ve_wr_bytes [2];
  logic [Size-1:0][31:0] ve_rd_rsp_data [2], ve_wr_data [2], sbuf_ve_rsp_data [2];
  logic                ve_wr_valid [2], ve_wr_ready [2], ve_wr_space [2];
  logic [Size-1:0]     ve_wr_mask [2];
  logic                sbuf_ve_rd_valid [2], sbuf_ve_rsp_valid [2], sbuf_ve_wr_valid [2];
  function automatic isa_queue_e ve_queue(int c);
    return c == Dve ? QueueDve : QueueAct;
  endfunction
  logic ve_en [2];   // the engine's clock rises at the end of this base cycle
  assign ve_en = '{en_dve, en_act};

  // PSUM between the two engines when they may not access it in parallel (ve_psum_serial_i):
  // an instruction that reads or writes PSUM claims it, at an edge of its engine where the
  // engine could take it, when neither engine holds a claim; the claim lasts until the engine
  // is done with it. When both would claim at once, the one that did not claim last does (the
  // first such tie goes to the scalar engine). Each claim register is on its engine's clock; the
  // other engine reads it at its own edges.
  typedef enum logic [1:0] {PsumFree, PsumClaimed, PsumTaken} psum_claim_e;
  psum_claim_e psum_claim_q [2];  // g_ve's claim_q
  logic        psum_use [2], psum_want [2], psum_claim [2], psum_hold [2];
  logic        psum_last_act_q;   // the last claim was the scalar engine's
  function automatic logic uses_psum(isa_opcode_e op, isa_mem_space_e src0, isa_mem_space_e src1,
                                     isa_mem_space_e dst);  // model::ve_reads_psum, ve_writes_psum
    logic reads0, reads1;
    reads0 = op != IsaMemset && op != IsaIota;
    reads1 = op == IsaTensorTensor || op == IsaTensorTensorScan || op == IsaScalarTensorTensor;
    return (reads0 && src0 == MemSpacePsum) || (reads1 && src1 == MemSpacePsum) || dst == MemSpacePsum;
  endfunction
  always_comb begin
    for (int c = 0; c < 2; c++)
      psum_use[c] = ve_psum_serial_i &&
                    uses_psum(ve_cmd[c].opcode, ve_cmd[c].src0.space, ve_cmd[c].src1.space, ve_cmd[c].dst.space);
    for (int c = 0; c < 2; c++)
      psum_want[c] = ve_en[c] && psum_use[c] && seq_issue_valid[ve_queue(c)] && ve_cmd_ready[c] &&
                     psum_claim_q[Dve] == PsumFree && psum_claim_q[Act] == PsumFree;
    psum_claim[Act] = psum_want[Act] && !(psum_want[Dve] && psum_last_act_q);
    psum_claim[Dve] = psum_want[Dve] && !(psum_want[Act] && !psum_last_act_q);
    for (int c = 0; c < 2; c++)
      psum_hold[c] = psum_use[c] && !(psum_claim_q[c] == PsumClaimed || psum_claim[c]);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) psum_last_act_q <= 1'b0;
    else if (psum_claim[Act] || psum_claim[Dve]) psum_last_act_q <= psum_claim[Act];
  end


  for (genvar c = 0; c < 2; c++) begin : g_ve
    localparam isa_queue_e Q = ve_queue(c);
    // The word's ve payload is the engine's instruction, tagged with its pc.
    assign ve_cmd[c] = isa_ve_instr(isa_opcode_e'(seq_word[Q][7:0]), seq_pc[Q][7:0],
                                    isa_ve_t'(seq_word[Q][IsaVeLsb +: IsaVeBits]));
    assign ve_cmd_valid[c] = seq_issue_valid[Q] && !ve_hazard[c] && !psum_hold[c];
    // MIN_II on every instruction of the engine (not on the queue's nops, which the sequencer
    // runs itself, as on the golden core); an activation or tensor_scalar_reduce that writes its
    // reduction pays it twice (nki.isa: max(MIN_II, N) + MIN_II).
    assign seq_interval[Q] = isa_format_of(seq_word[Q][7:0]) == FormatVe ? ve_min_cycles_i[c] : '0;
    assign seq_interval_tail[Q] = ve_cmd[c].acc_enable == 1'b1 &&
        (ve_cmd[c].opcode == IsaActivation || ve_cmd[c].opcode == IsaTensorScalarReduce);
    assign seq_issue_ready[Q] = ve_cmd_ready[c] && !ve_hazard[c] && !psum_hold[c];
    assign seq_drained[Q] = ve_idle[c] && !seq_issue_valid[Q];
    assign seq_landing[Q] = ve_landing[c];
    nc_core_pipeline u_pipeline (
      .clk_i(queue_clk[Q]), .rst_ni, .latency_i(ve_static_cycles_i[c]), .head_i(ve_cmd[c]),
      .take_i(ve_cmd_valid[c] && ve_cmd_ready[c]), .done_i(ve_done_valid[c]),
      .hold_i(seq_holding[Q]), .hazard_o(ve_hazard[c]), .landing_o(ve_landing[c])
    );
    psum_claim_e claim_q;
    assign psum_claim_q[c] = claim_q;
    always_ff @(posedge queue_clk[Q] or negedge rst_ni) begin
      if (!rst_ni) claim_q <= PsumFree;
      else unique case (claim_q)
        PsumFree:    if (psum_claim[c]) claim_q <= ve_cmd_valid[c] ? PsumTaken : PsumClaimed;
        PsumClaimed: if (ve_cmd_valid[c] && ve_cmd_ready[c]) claim_q <= PsumTaken;
        PsumTaken:   if (ve_done_valid[c]) claim_q <= PsumFree;
        default:     claim_q <= PsumFree;
      endcase
    end
    if (c == Dve) begin : g_vector
      nc_vector_engine #(.Scalar(1'b0), .Lanes(Size), .SbufBytes(SbufBytes),
                         .PsumBytes(PsumBytes)) u_engine (
        .clk_i(clk_dve), .rst_ni, .perf_mode_en_i(ve_perf_mode_i),
        .cmd_valid_i(ve_cmd_valid[c]), .cmd_ready_o(ve_cmd_ready[c]), .cmd_i(ve_cmd[c]),
        .done_valid_o(ve_done_valid[c]), .done_tag_o(ve_done_tag[c]),
        .done_error_o(ve_done_error[c]),
        .rd_valid_o(ve_rd_valid[c]), .rd_ready_i(ve_rd_ready[c]), .rd_space_o(ve_rd_space[c]),
        .rd_addr_o(ve_rd_addr[c]), .rd_bytes_o(ve_rd_bytes[c]),
        .rd_rsp_valid_i(ve_rd_rsp_valid[c]), .rd_rsp_data_i(ve_rd_rsp_data[c]),
        .wr_valid_o(ve_wr_valid[c]), .wr_ready_i(ve_wr_ready[c]), .wr_space_o(ve_wr_space[c]),
        .wr_addr_o(ve_wr_addr[c]), .wr_bytes_o(ve_wr_bytes[c]), .wr_mask_o(ve_wr_mask[c]),
        .wr_data_o(ve_wr_data[c]),
        .idle_o(ve_idle[c]), .err_o(ve_err[c]), .counters_o(ve_counters[c])
      );
    end else begin : g_scalar
      nc_scalar_engine #(.Lanes(Size), .SbufBytes(SbufBytes), .PsumBytes(PsumBytes)) u_engine (
        .clk_i(clk_act), .rst_ni,
        .cmd_valid_i(ve_cmd_valid[c]), .cmd_ready_o(ve_cmd_ready[c]), .cmd_i(ve_cmd[c]),
        .done_valid_o(ve_done_valid[c]), .done_tag_o(ve_done_tag[c]),
        .done_error_o(ve_done_error[c]),
        .rd_valid_o(ve_rd_valid[c]), .rd_ready_i(ve_rd_ready[c]), .rd_space_o(ve_rd_space[c]),
        .rd_addr_o(ve_rd_addr[c]), .rd_bytes_o(ve_rd_bytes[c]),
        .rd_rsp_valid_i(ve_rd_rsp_valid[c]), .rd_rsp_data_i(ve_rd_rsp_data[c]),
        .wr_valid_o(ve_wr_valid[c]), .wr_ready_i(ve_wr_ready[c]), .wr_space_o(ve_wr_space[c]),
        .wr_addr_o(ve_wr_addr[c]), .wr_bytes_o(ve_wr_bytes[c]), .wr_mask_o(ve_wr_mask[c]),
        .wr_data_o(ve_wr_data[c]),
        .idle_o(ve_idle[c]), .err_o(ve_err[c]), .counters_o(ve_counters[c])
      );
    end
    assign sbuf_ve_rd_valid[c] = ve_rd_valid[c] && !ve_rd_space[c];
    assign sbuf_ve_wr_valid[c] = ve_wr_valid[c] && !ve_wr_space[c];
  end

  // A PSUM byte offset (the same in every partition) as the bank and element of its FP32 word.
  function automatic logic [$clog2(Banks)-1:0] psum_bank_of(logic [VeAddrW-1:0] a);
    return $clog2(Banks)'((32'(a) >> 2) / BankElems);
  endfunction
  function automatic logic [$clog2(BankElems)-1:0] psum_elem_of(logic [VeAddrW-1:0] a);
    return $clog2(BankElems)'((32'(a) >> 2) % BankElems);
  endfunction

  // PSUM reads and writes go through the tensor engine's ports, in its clock domain: each engine
  // reaches them through a bridge (nc_core_bridge), which is wires when the engine's clock is
  // the tensor engine's.
  logic ve_bypass [2];  // the engine's domain has the tensor domain's divider
  assign ve_bypass[Dve] = clk_divide_i[DomVector] == clk_divide_i[DomTensor];
  assign ve_bypass[Act] = clk_divide_i[DomScalar] == clk_divide_i[DomTensor];

  // PSUM reads: one port, the two engines alternate priority. The tensor engine holds a read
  // off while writes to its bank are in flight. The debug port takes it while the core is
  // stopped.
  typedef logic [Size-1:0][31:0] lanes_t;
  logic       psum_prio_q, psum_grant, psum_req [2], psum_take [2], psum_answer [2];
  logic       psum_rsp_owner_q, psum_rsp_dbg_q;
  logic [1:0] psum_rsp_shift_q;
  logic [2:0] psum_rsp_bytes_q;
  lanes_t     psum_rsp_elems, ve_psum_rsp_data [2];
  logic       ve_psum_rd_ready [2], ve_psum_rsp_valid [2];
  // When both ask, the engine whose own edge comes first goes first: its bridge must have the
  // answer by then to keep its access to one of its cycles (at trn2's clocks that gives both
  // every access in one engine cycle); on a tie they alternate, as on one clock.
  // A request the tensor engine holds off (a bank conflict) keeps the port until it is taken:
  // the port's request stays stable (PsumRdReqStable), whichever engine's edge comes first.
  logic act_first, act_tie;
  logic psum_lock_q, psum_lock_act_q, psum_wr_lock_q, psum_wr_lock_act_q;
  assign act_first = dom_left[DomScalar] < dom_left[DomVector];
  assign act_tie = dom_left[DomScalar] == dom_left[DomVector];
  assign psum_grant = psum_lock_q ? psum_lock_act_q
                    : psum_req[1] && (!psum_req[0] || act_first || (act_tie && psum_prio_q));
  assign psum_rd_valid = dbg_psum_rd_valid_i || psum_req[0] || psum_req[1];
  assign psum_rd_bank = dbg_psum_rd_valid_i ? dbg_psum_bank_i : psum_bank_of(ve_rd_addr[psum_grant]);
  assign psum_rd_elem = dbg_psum_rd_valid_i ? dbg_psum_elem_i : psum_elem_of(ve_rd_addr[psum_grant]);
  assign dbg_psum_rd_rsp_valid_o = psum_rd_rsp_valid && psum_rsp_dbg_q;
  assign dbg_psum_rd_data_o = psum_rd_rsp_data;
  // The answer as the engine asked for it: the element's bytes of each partition's word.
  always_comb begin
    for (int unsigned p = 0; p < Size; p++) begin
      logic [31:0] w;
      w = psum_rd_rsp_data[p] >> (8 * psum_rsp_shift_q);
      psum_rsp_elems[p] = psum_rsp_bytes_q == 3'd4 ? w
                        : psum_rsp_bytes_q == 3'd2 ? {16'd0, w[15:0]} : {24'd0, w[7:0]};
    end
  end
  for (genvar c = 0; c < 2; c++) begin : g_ve_rd
    assign psum_take[c] = psum_grant == 1'(c) && psum_rd_ready && !dbg_psum_rd_valid_i;
    assign psum_answer[c] = psum_rd_rsp_valid && !psum_rsp_dbg_q && psum_rsp_owner_q == 1'(c);
    nc_core_bridge #(.Response(1'b1), .T(lanes_t)) u_psum_rd (
      .clk_i, .rst_ni, .bypass_i(ve_bypass[c]), .en_req_i(ve_en[c]), .en_srv_i(en_te),
      .req_valid_i(ve_rd_valid[c] && ve_rd_space[c]), .req_ready_o(ve_psum_rd_ready[c]),
      .rsp_valid_o(ve_psum_rsp_valid[c]), .rsp_data_o(ve_psum_rsp_data[c]),
      .srv_valid_o(psum_req[c]), .srv_ready_i(psum_take[c]),
      .srv_rsp_valid_i(psum_answer[c]), .srv_rsp_data_i(psum_rsp_elems)
    );
    assign ve_rd_ready[c] = !ve_rd_space[c] || ve_psum_rd_ready[c];
    assign ve_rd_rsp_valid[c] = sbuf_ve_rsp_valid[c] || ve_psum_rsp_valid[c];
    assign ve_rd_rsp_data[c] = sbuf_ve_rsp_valid[c] ? sbuf_ve_rsp_data[c] : ve_psum_rsp_data[c];
  end
  always_ff @(posedge clk_te or negedge rst_ni) begin
    if (!rst_ni) begin
      psum_lock_q <= 1'b0;
      psum_lock_act_q <= 1'b0;
    end else begin
      psum_lock_q <= psum_rd_valid && !psum_rd_ready && !dbg_psum_rd_valid_i;
      psum_lock_act_q <= psum_grant;
    end
  end
  always_ff @(posedge clk_te or negedge rst_ni) begin
    if (!rst_ni) begin
      psum_prio_q <= 1'b0;
      psum_rsp_owner_q <= 1'b0;
      psum_rsp_dbg_q <= 1'b0;
      psum_rsp_shift_q <= '0;
      psum_rsp_bytes_q <= '0;
    end else if (psum_rd_valid && psum_rd_ready) begin
      psum_rsp_dbg_q <= dbg_psum_rd_valid_i;
      psum_prio_q <= !psum_grant;
      psum_rsp_owner_q <= psum_grant;
      psum_rsp_shift_q <= ve_rd_addr[psum_grant][1:0];
      psum_rsp_bytes_q <= ve_rd_bytes[psum_grant];
    end
  end

  // PSUM writes: the tensor engine's external write port, the two engines alternate priority;
  // a write waits (ready low) while the tensor engine has writes to that bank in flight.
  logic                         psum_wr_prio_q, psum_wr_grant, psum_wr_req [2];
  logic                         psum_ext_wr_valid, psum_ext_wr_ready;
  logic [$clog2(Banks)-1:0]     psum_ext_wr_bank;
  logic [$clog2(BankElems)-1:0] psum_ext_wr_elem;
  logic [3:0]                   psum_ext_wr_byte_en;
  logic [Size-1:0]              psum_ext_wr_part_mask;
  logic [31:0]                  psum_ext_wr_data [Size];
  logic                         ve_psum_wr_ready [2];
  assign psum_wr_grant = psum_wr_lock_q ? psum_wr_lock_act_q
                       : psum_wr_req[1] && (!psum_wr_req[0] || act_first || (act_tie && psum_wr_prio_q));
  assign psum_ext_wr_valid = psum_wr_req[0] || psum_wr_req[1];
  always_comb begin
    logic [VeAddrW-1:0] a;
    a = ve_wr_addr[psum_wr_grant];
    psum_ext_wr_bank = psum_bank_of(a);
    psum_ext_wr_elem = psum_elem_of(a);
    psum_ext_wr_byte_en = ve_wr_bytes[psum_wr_grant] == 3'd4 ? 4'hF
                        : ve_wr_bytes[psum_wr_grant] == 3'd2 ? 4'b0011 << a[1:0]
                                                             : 4'b0001 << a[1:0];
    psum_ext_wr_part_mask = ve_wr_mask[psum_wr_grant];
    for (int unsigned p = 0; p < Size; p++)
      psum_ext_wr_data[p] = ve_wr_data[psum_wr_grant][p] << (8 * a[1:0]);
  end
  for (genvar c = 0; c < 2; c++) begin : g_ve_wr
    /* verilator lint_off UNUSEDSIGNAL */  // a write has no answer
    logic unused_rsp_valid, unused_rsp_data;
    /* verilator lint_on UNUSEDSIGNAL */
    nc_core_bridge #(.Response(1'b0), .T(logic)) u_psum_wr (
      .clk_i, .rst_ni, .bypass_i(ve_bypass[c]), .en_req_i(ve_en[c]), .en_srv_i(en_te),
      .req_valid_i(ve_wr_valid[c] && ve_wr_space[c]), .req_ready_o(ve_psum_wr_ready[c]),
      .rsp_valid_o(unused_rsp_valid), .rsp_data_o(unused_rsp_data),
      .srv_valid_o(psum_wr_req[c]), .srv_ready_i(psum_wr_grant == 1'(c) && psum_ext_wr_ready),
      .srv_rsp_valid_i(1'b0), .srv_rsp_data_i(1'b0)
    );
    assign ve_wr_ready[c] = !ve_wr_space[c] || ve_psum_wr_ready[c];
  end
  always_ff @(posedge clk_te or negedge rst_ni) begin
    if (!rst_ni) begin
      psum_wr_prio_q <= 1'b0;
      psum_wr_lock_q <= 1'b0;
      psum_wr_lock_act_q <= 1'b0;
    end else begin
      if (psum_ext_wr_valid && psum_ext_wr_ready) psum_wr_prio_q <= !psum_wr_grant;
      psum_wr_lock_q <= psum_ext_wr_valid && !psum_ext_wr_ready;  // held off: keep the port
      psum_wr_lock_act_q <= psum_wr_grant;
    end
  end

  // ---------------------------------------------------------------------------------------
  // DMA engines (sp queue) and the completions they owe the sp queue
  // ---------------------------------------------------------------------------------------
  isa_dma_t  dma_payload;
  isa_list_t list_payload;
  logic      sp_list;      // the sync queue's head is a dma_list (else a dma_copy)
  logic [3:0] sp_engine;   // the DMA engine it is for
  logic      dma_desc_valid, dma_idle;
  logic [DmaPorts-1:0] dma_done_valid, dma_done_error, dma_err, dma_port_idle;
  logic [3:0] dma_done_engine [DmaPorts];  // the core's engine number
  isa_dma_error_e dma_done_code [DmaPorts];
  /* verilator lint_off UNUSEDSIGNAL */  // a port's first refusal: the core reports each list's own
  isa_dma_error_e dma_err_code [DmaPorts];
  logic [DmaPorts-1:0] dma_desc_ready_unused;  // (the core looks at each engine's room)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [PortEngines-1:0] dma_room [DmaPorts];  // each engine's descriptor queue has room
  logic [31:0] dma_port_bursts [DmaPorts];
  logic      sbuf_dma_wr_valid [DmaPorts], sbuf_dma_rd_valid [DmaPorts];
  logic [FlatW-1:0] sbuf_dma_wr_addr [DmaPorts], sbuf_dma_rd_addr [DmaPorts];
  logic [255:0] sbuf_dma_wr_data [DmaPorts], sbuf_dma_rd_data [DmaPorts];
  logic [3:0]   sbuf_dma_wr_engine [DmaPorts];  // the port's engine of each SBUF write
  logic      sbuf_dma_active;  // a DMA port reads or writes SBUF this cycle

  assign dma_payload = isa_dma_t'(seq_word[QueueSp][IsaDmaLsb +: IsaDmaBits]);
  assign list_payload = isa_list_t'(seq_word[QueueSp][IsaListLsb +: IsaListBits]);
  /* verilator lint_off UNUSEDSIGNAL */  // its opcode
  isa_header_t sp_header;
  /* verilator lint_on UNUSEDSIGNAL */
  assign sp_header = isa_header_t'(seq_word[QueueSp][IsaHeaderBits-1:0]);
  assign sp_list = sp_header.opcode == IsaDmaList;
  assign sp_engine = sp_list ? list_payload.engine : dma_payload.engine;

  // Fixed costs (issue 49): the base cycle the sp queue's head may start moving data at the
  // earliest: a dma_copy's descriptor is generated first; a DMA that waited on a semaphore that
  // another queue signalled starts no earlier than the semaphore-to-start latency after it.
  logic [31:0][TimeW-1:0] sem_changed_q;  // each semaphore's last signal
  logic [31:0]      sem_seen_q;          // signalled since start
  logic [31:0]      sem_by_sp_q;         // last signalled by the sp queue (a nop or a DMA)
  logic [TimeW-1:0] sp_not_before, sp_after_signal;
  always_comb begin
    sp_not_before = now + (sp_list ? '0 : TimeW'(dma_descriptor_cycles_i));
    sp_after_signal = sem_changed_q[sp_header.wait_sem] + TimeW'(dma_sem_to_start_cycles_i);
    if (sp_header.wait_en && dma_sem_to_start_cycles_i != '0 && sem_seen_q[sp_header.wait_sem] &&
        !sem_by_sp_q[sp_header.wait_sem] && sp_after_signal > sp_not_before)
      sp_not_before = sp_after_signal;
  end
  // A list's entries start no earlier than the list's stamp.
  logic [TimeW-1:0] list_not_before_q [DmaEngines];

  // The descriptor-list walkers (nc_core_lists), on the fetch port.
  logic [DmaEngines-1:0] list_active, list_desc_valid, list_take;
  nc_dma_pkg::dma_entry_t list_desc [DmaEngines];
  logic list_start;

  // Per DMA engine, its dma_copy and dma_list instructions not yet completed (their signals),
  // in order.
  typedef struct packed {
    isa_header_t    header;
    logic [PcW-1:0] pc;
    logic           last;
  } trk_entry_t;
  trk_entry_t trk_q [DmaEngines][TrkDepth];
  logic [$clog2(TrkDepth)-1:0] trk_head_q [DmaEngines], trk_tail_q [DmaEngines];
  logic [$clog2(TrkDepth):0]   trk_count_q [DmaEngines];
  logic [$clog2(TrkDepth):0]   trk_lists_q [DmaEngines];  // finished lists not yet popped
  logic [$clog2(TrkDepth):0]   trk_open_q [DmaEngines];   // descriptors of the open list
  logic       trk_push, trk_pop, trk_empty;
  logic [3:0] trk_pop_engine;
  trk_entry_t trk_pop_entry;

  // The checks at issue: a descriptor the engines would refuse, or a list the core cannot
  // read, is never issued, and its refusal is raised (precisely) once sp has drained. So is the
  // ninth descriptor of one list of dma_copy's: the list's entries leave the tracker only when
  // it finishes, so it could never be issued. (A dma_list's entries are checked by their engine
  // as it loads them.)
  isa_dma_error_e dma_refusal;
  logic dma_refused, dma_lists_pending, sp_engine_free, list_over_streams;
  logic [47:0] list_end;
  always_comb begin
    list_end = 48'(list_payload.list_addr) + 48'(list_payload.count) * 48'd32;
    list_over_streams = 1'b0;
    for (int q = 0; q < int'(NumQ); q++)
      list_over_streams |= stream_lo_q[q] != stream_hi_q[q] &&
                           48'(list_payload.list_addr) < stream_hi_q[q] && stream_lo_q[q] < list_end;
    if (sp_list) begin
      dma_refusal = list_payload.count == '0 ? DmaErrorZero
                  : list_payload.list_addr[4:0] != '0 ? DmaErrorAlign
                  : list_end > (48'd1 << hbm_bytes_log2_i) ? DmaErrorHbmRange
                  : list_over_streams ? DmaErrorListImage : DmaErrorNone;
    end else begin
      dma_refusal = nc_dma_pkg::dma_check(dma_payload, hbm_bytes_log2_i, 48'(Size * SbufBytes));
      // The program image is what the fetch unit reads: no DMA writes into it.
      if (dma_refusal == DmaErrorNone &&
          nc_dma_pkg::dma_writes_image(dma_payload, image_base_i, image_bytes_i))
        dma_refusal = DmaErrorImage;
    end
    if (dma_refusal == DmaErrorNone &&
        trk_open_q[sp_engine] == ($clog2(TrkDepth) + 1)'(TrkDepth))
      dma_refusal = DmaErrorListLength;
  end
  assign dma_refused = seq_issue_valid[QueueSp] && dma_refusal != DmaErrorNone;

  // sp holds a descriptor or a list for an engine whose tracker is full or that walks a list.
  assign sp_engine_free = dma_refusal == DmaErrorNone && !list_active[sp_engine] &&
                          trk_count_q[sp_engine] != ($clog2(TrkDepth) + 1)'(TrkDepth);
  assign trk_push = seq_issue_valid[QueueSp] && seq_issue_ready[QueueSp];
  assign dma_desc_valid = seq_issue_valid[QueueSp] && !sp_list && sp_engine_free;
  assign list_start = trk_push && sp_list;
  assign seq_issue_ready[QueueSp] = sp_engine_free &&
      (sp_list || dma_room[32'(sp_engine) % DmaPorts][32'(sp_engine) / DmaPorts]);
  // sp has drained when no descriptor is in flight or listed and no finished list still owes
  // its signals (a list left open by a descriptor without `last` can never finish: it does not
  // count).
  always_comb begin
    dma_lists_pending = |dma_done_valid || |list_active;  // reported this cycle, counted from the next
    for (int e = 0; e < DmaEngines; e++) dma_lists_pending |= trk_lists_q[e] != '0;
  end
  assign seq_drained[QueueSp] = dma_idle && !dma_lists_pending;

  nc_core_lists #(.Engines(DmaEngines), .Depth(ListDepth), .Chunk(ListChunk),
                  .Streams(ListStreams), .AddrW(HbmAddrW)) u_lists (
    .clk_i(clk_dma), .rst_ni, .halt_i(halt),
    .start_i(list_start), .start_engine_i(list_payload.engine),
    .start_addr_i(list_payload.list_addr), .start_count_i(list_payload.count),
    .active_o(list_active),
    .rd_valid_o(lfetch_rd_valid), .rd_ready_i(lfetch_rd_ready), .rd_addr_o(lfetch_rd_addr),
    .rd_id_o(lfetch_rd_id),
    .rsp_valid_i(hbm_rsp_valid_i[FetchPort] && hbm_rsp_id_i[FetchPort][16]),
    .rsp_id_i(hbm_rsp_id_i[FetchPort]), .rsp_data_i(hbm_rsp_data_i[FetchPort]),
    .desc_valid_o(list_desc_valid), .desc_o(list_desc), .desc_take_i(list_take),
    .cnt_entries_o(cnt_list_entries_o)
  );

  // One completion a cycle: the lowest engine with a finished list pops its oldest entry.
  always_comb begin
    trk_pop = 1'b0;
    trk_pop_engine = '0;
    trk_empty = 1'b1;
    for (int e = DmaEngines - 1; e >= 0; e--) begin
      if (trk_count_q[e] != '0) trk_empty = 1'b0;
      if (trk_lists_q[e] != '0 && trk_count_q[e] != '0) begin
        trk_pop = 1'b1;
        trk_pop_engine = 4'(e);
      end
    end
    trk_pop_entry = trk_q[trk_pop_engine][trk_head_q[trk_pop_engine]];
  end

  for (genvar e = 0; e < DmaEngines; e++) begin : g_trk
    logic push, pop, done, list_end_pop;
    always_ff @(posedge clk_dma or negedge rst_ni) begin
      if (!rst_ni) list_not_before_q[e] <= '0;
      else if (list_start && list_payload.engine == 4'(e)) list_not_before_q[e] <= sp_not_before;
    end
    assign push = trk_push && sp_engine == 4'(e);
    assign pop = trk_pop && trk_pop_engine == 4'(e);
    assign done = dma_done_valid[e % DmaPorts] && dma_done_engine[e % DmaPorts] == 4'(e);
    assign list_end_pop = pop && trk_pop_entry.last;
    always_ff @(posedge clk_dma or negedge rst_ni) begin
      if (!rst_ni) begin
        trk_head_q[e] <= '0;
        trk_tail_q[e] <= '0;
        trk_count_q[e] <= '0;
        trk_lists_q[e] <= '0;
        trk_open_q[e] <= '0;
      end else begin
        // A dma_list ends any list open on its engine: its final entry carries `last`.
        if (push) trk_open_q[e] <= sp_list || dma_payload.last ? '0 : trk_open_q[e] + 1'b1;
        if (push) trk_tail_q[e] <= trk_tail_q[e] + 1'b1;
        if (pop) trk_head_q[e] <= trk_head_q[e] + 1'b1;
        trk_count_q[e] <= trk_count_q[e] + ($clog2(TrkDepth) + 1)'(push) -
                          ($clog2(TrkDepth) + 1)'(pop);
        trk_lists_q[e] <= trk_lists_q[e] + ($clog2(TrkDepth) + 1)'(done) -
                          ($clog2(TrkDepth) + 1)'(list_end_pop);
      end
    end
    always_ff @(posedge clk_dma) begin
      if (push) trk_q[e][trk_tail_q[e]] <= '{
          header: isa_header_t'(seq_word[QueueSp][IsaHeaderBits-1:0]),
          pc: seq_pc[QueueSp], last: sp_list || dma_payload.last};
    end
  end

  // The DMA ports: engine e is engine e / DmaPorts of port e % DmaPorts, so that programs
  // using consecutive engines spread over the ports. Each port has its own HBM and SBUF ports
  // and takes one descriptor a cycle: the sync queue's, else the lowest of its engines whose
  // list walker offers an entry its queue has room for.
  logic [DmaPorts-1:0] dma_port_selected;
  for (genvar g = 0; g < DmaPorts; g++) begin : g_dma
    logic [3:0] local_done_engine, port_engine;
    logic port_list, port_sp;
    assign dma_port_selected[g] = 32'(sp_engine) % DmaPorts == g;
    assign dma_done_engine[g] = 4'(32'(local_done_engine) * DmaPorts + g);
    assign port_sp = dma_desc_valid && dma_port_selected[g];
    always_comb begin
      port_list = 1'b0;
      port_engine = 4'(32'(sp_engine) / DmaPorts);
      for (int k = PortEngines - 1; k >= 0; k--)
        if (!port_sp && list_desc_valid[k * DmaPorts + g] && dma_room[g][k]) begin
          port_list = 1'b1;
          port_engine = 4'(k);
        end
      for (int k = 0; k < int'(PortEngines); k++)
        list_take[k * DmaPorts + g] = port_list && port_engine == 4'(k);
    end
    nc_dma #(.Engines(PortEngines), .Tags(DmaTags), .SbufLimit(Size * SbufBytes)) u_dma (
      .clk_i(clk_dma), .rst_ni, .hbm_bytes_log2_i, .image_base_i, .image_bytes_i,
      .desc_valid_i(port_sp || port_list),
      .desc_ready_o(dma_desc_ready_unused[g]),
      .desc_engine_i(port_engine),
      .desc_i(port_list ? list_desc[32'(port_engine) * DmaPorts + g].desc : dma_payload),
      .desc_malformed_i(port_list && list_desc[32'(port_engine) * DmaPorts + g].malformed),
      .desc_not_before_i(port_list ? list_not_before_q[32'(port_engine) * DmaPorts + g] : sp_not_before),
      .now_i(now), .row_cost_i(dma_row_cost_i), .byte_cost_i(dma_byte_cost_i),
      .desc_room_o(dma_room[g]),
      .done_valid_o(dma_done_valid[g]), .done_engine_o(local_done_engine),
      .done_error_o(dma_done_error[g]), .done_code_o(dma_done_code[g]),
      .hbm_rd_valid_o(hbm_rd_valid_o[g]), .hbm_rd_ready_i(hbm_rd_ready_i[g]),
      .hbm_rd_addr_o(hbm_rd_addr_o[g]), .hbm_rd_id_o(hbm_rd_id_o[g]),
      .hbm_wr_valid_o(hbm_wr_valid_o[g]), .hbm_wr_ready_i(hbm_wr_ready_i[g]),
      .hbm_wr_addr_o(hbm_wr_addr_o[g]), .hbm_wr_id_o(hbm_wr_id_o[g]),
      .hbm_wr_data_o(hbm_wr_data_o[g]),
      .hbm_rsp_valid_i(hbm_rsp_valid_i[g]), .hbm_rsp_id_i(hbm_rsp_id_i[g]),
      .hbm_rsp_data_i(hbm_rsp_data_i[g]),
      .sbuf_wr_valid_o(sbuf_dma_wr_valid[g]), .sbuf_wr_addr_o(sbuf_dma_wr_addr[g]),
      .sbuf_wr_data_o(sbuf_dma_wr_data[g]), .sbuf_wr_engine_o(sbuf_dma_wr_engine[g]),
      .sbuf_rd_valid_o(sbuf_dma_rd_valid[g]), .sbuf_rd_addr_o(sbuf_dma_rd_addr[g]),
      .sbuf_rd_data_i(sbuf_dma_rd_data[g]),
      .err_o(dma_err[g]), .err_code_o(dma_err_code[g]), .idle_o(dma_port_idle[g]),
      .cnt_bursts_o(dma_port_bursts[g])
    );
    // A DMA engine finishes only lists the sp queue gave it.
    logic done_engine_empty;
    assign done_engine_empty = trk_count_q[dma_done_engine[g]] == '0;
    `NC_ASSERT(DmaDoneHasInstruction, !(dma_done_valid[g] && done_engine_empty))
  end
  assign dma_idle = &dma_port_idle;
  always_comb begin
    cnt_dma_bursts_o = '0;
    sbuf_dma_active = 1'b0;
    for (int unsigned g = 0; g < DmaPorts; g++) begin
      cnt_dma_bursts_o += dma_port_bursts[g];
      sbuf_dma_active |= sbuf_dma_wr_valid[g] || sbuf_dma_rd_valid[g];
    end
  end

  // ---------------------------------------------------------------------------------------
  // SBUF
  // ---------------------------------------------------------------------------------------
  logic sbuf_range_err;
  nc_sbuf #(.Parts(Size), .Bytes(SbufBytes), .AddrW(SbufAddrW), .FlatW(FlatW),
            .DmaPorts(DmaPorts)) u_sbuf (
    .clk_i, .rst_ni, .en_te_i(en_te), .en_ve_i('{en_dve, en_act}), .en_dma_i(en_dma),
    .st_req_valid_i(st_req_valid), .st_req_addr_i(st_req_addr), .st_req_bytes_i(st_req_bytes),
    .st_req_reps_i(st_req_reps), .st_req_rep_step_i(st_req_rep_step),
    .st_req_tag_addr_i(st_req_tag_addr), .st_req_cols_i(st_req_cols),
    .st_req_col_step_i(st_req_col_step), .st_rsp_more_o(st_rsp_more),
    .st_rsp_valid_o(st_rsp_valid), .st_rsp_data_o(st_rsp_data), .st_rsp_tag_o(st_rsp_tag),
    .mv_req_valid_i(mv_req_valid), .mv_req_segs_i(mv_req_segs), .mv_req_addr_i(mv_req_addr),
    .mv_req_bytes_i(mv_req_bytes), .mv_req_reps_i(mv_req_reps),
    .mv_req_rep_step_i(mv_req_rep_step),
    .mv_rsp_valid_o(mv_rsp_valid), .mv_rsp_data_o(mv_rsp_data),
    .ve_rd_valid_i(sbuf_ve_rd_valid), .ve_rd_addr_i(ve_rd_addr), .ve_rd_bytes_i(ve_rd_bytes),
    .ve_rd_rsp_valid_o(sbuf_ve_rsp_valid), .ve_rd_rsp_data_o(sbuf_ve_rsp_data),
    .ve_wr_valid_i(sbuf_ve_wr_valid), .ve_wr_addr_i(ve_wr_addr), .ve_wr_bytes_i(ve_wr_bytes),
    .ve_wr_mask_i(ve_wr_mask), .ve_wr_data_i(ve_wr_data),
    .dma_wr_valid_i(sbuf_dma_wr_valid), .dma_wr_addr_i(sbuf_dma_wr_addr),
    .dma_wr_data_i(sbuf_dma_wr_data),
    .dma_rd_valid_i(sbuf_dma_rd_valid), .dma_rd_addr_i(sbuf_dma_rd_addr),
    .dma_rd_data_o(sbuf_dma_rd_data),
    .dbg_wr_valid_i(dbg_sbuf_wr_valid_i), .dbg_addr_i(dbg_sbuf_addr_i),
    .dbg_wr_data_i(dbg_sbuf_wr_data_i), .dbg_rd_data_o(dbg_sbuf_rd_data_o),
    .range_err_o(sbuf_range_err)
  );

  // ---------------------------------------------------------------------------------------
  // Collectives (cc queue): out to the chip's collective engine, ended by its done pulses
  // ---------------------------------------------------------------------------------------
  localparam int unsigned CcDepth = 8;  // collectives in flight (model::CoreConfig::cc_outstanding)
  logic [$clog2(CcDepth):0] cc_outstanding_q;
  logic cc_idle, cc_take;
  assign cc_take = seq_issue_valid[QueueCc] && seq_issue_ready[QueueCc];
  assign cc_req_valid_o = seq_issue_valid[QueueCc] && !halt &&
                          cc_outstanding_q != ($clog2(CcDepth) + 1)'(CcDepth);
  assign seq_issue_ready[QueueCc] = cc_req_ready_i && cc_req_valid_o;
  assign cc_req_o = isa_cc_instr(isa_opcode_e'(seq_word[QueueCc][7:0]), seq_pc[QueueCc][7:0],
                                 isa_cc_t'(seq_word[QueueCc][IsaCcLsb +: IsaCcBits]));
  assign cc_idle = cc_outstanding_q == '0;
  assign seq_drained[QueueCc] = cc_idle && !cc_req_valid_o;
  always_ff @(posedge clk_dma or negedge rst_ni) begin
    if (!rst_ni) cc_outstanding_q <= '0;
    else cc_outstanding_q <= cc_outstanding_q + ($clog2(CcDepth) + 1)'(cc_take) -
                             ($clog2(CcDepth) + 1)'(cc_done_valid_i);
  end

  // ---------------------------------------------------------------------------------------
  // Semaphores: signals of one cycle apply in queue order (pe, act, dve, sp nop, cc, DMA)
  // ---------------------------------------------------------------------------------------
  logic        sig_valid [NumSig];
  isa_header_t sig_header [NumSig];
  logic [PcW-1:0] sig_pc [NumSig];
  logic [QueueW-1:0] sig_queue [NumSig];
  logic [15:0] sem_d [32];
  logic        sem_overflow;
  logic [4:0]  sem_overflow_index;
  logic [QueueW-1:0] sem_overflow_queue;
  logic [PcW-1:0] sem_overflow_pc;
  logic [16:0] sum;

  always_comb begin
    for (int q = 0; q < NumQ; q++) begin
      sig_valid[q] = seq_sig_valid[q] && queue_en[q];  // at the queue's edge
      sig_header[q] = seq_sig_header[q];
      sig_pc[q] = seq_pc[q] - 1'b1;  // the fence's instruction, or the sp nop issuing now
      sig_queue[q] = QueueW'(q);
    end
    if (seq_sig_valid[QueueSp]) sig_pc[int'(QueueSp)] = seq_pc[QueueSp];
    sig_valid[NumQ] = en_dma && trk_pop && trk_pop_entry.header.sig_op != 2'(SigOpNone);
    sig_header[NumQ] = trk_pop_entry.header;
    sig_pc[NumQ] = trk_pop_entry.pc;
    sig_queue[NumQ] = QueueW'(QueueSp);

    sem_d = sem_q;
    sem_overflow = 1'b0;
    sem_overflow_index = '0;
    sem_overflow_queue = '0;
    sem_overflow_pc = '0;
    for (int s = 0; s < NumSig; s++) begin
      sum = 17'(sem_d[sig_header[s].sig_sem]) + 17'(sig_header[s].sig_value);
      if (sig_valid[s] && !halt) begin
        if (sig_header[s].sig_op == 2'(SigOpSet)) begin
          sem_d[sig_header[s].sig_sem] = sig_header[s].sig_value;
        end else if (sum[16]) begin
          if (!sem_overflow) begin
            sem_overflow = 1'b1;
            sem_overflow_index = sig_header[s].sig_sem;
            sem_overflow_queue = sig_queue[s];
            sem_overflow_pc = sig_pc[s];
          end
        end else begin
          sem_d[sig_header[s].sig_sem] = sum[15:0];
        end
      end
    end
    if (sem_wr_valid_i) sem_d[sem_wr_index_i] = sem_wr_value_i;
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) sem_q <= '{default: '0};
    else sem_q <= sem_d;
  end
  // When each semaphore was last signalled, and whether by the sp queue (a later signal in the
  // order above wins, as its value does).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sem_changed_q <= '0;
      sem_seen_q <= '0;
      sem_by_sp_q <= '0;
    end else if (run_q == RunIdle && start_i) begin
      sem_seen_q <= '0;
    end else begin
      for (int s = 0; s < NumSig; s++) begin
        if (sig_valid[s] && !halt) begin
          sem_changed_q[sig_header[s].sig_sem] <= now;
          sem_seen_q[sig_header[s].sig_sem] <= 1'b1;
          sem_by_sp_q[sig_header[s].sig_sem] <= sig_queue[s] == QueueW'(QueueSp);
        end
      end
    end
  end
  assign sems_o = sem_q;

  // ---------------------------------------------------------------------------------------
  // Run state, error status, deadlock and watchdog
  // ---------------------------------------------------------------------------------------
  typedef enum logic [1:0] { RunIdle, RunBusy, RunFinished } run_e;
  run_e           run_q;
  isa_core_status_e status_q;
  isa_core_error_e  err_code_q;
  logic [QueueW-1:0] err_queue_q;
  logic [PcW-1:0] err_pc_q;
  logic [7:0]     err_detail_q;
  logic           err_now;
  isa_core_error_e  err_now_code;
  logic [QueueW-1:0] err_now_queue;
  logic [PcW-1:0] err_now_pc;
  logic [7:0]     err_now_detail;
  logic           err_now_dma;         // a DMA port finished a list with a refusal
  logic [PcW-1:0] err_now_dma_pc;
  logic [7:0]     err_now_dma_detail;
  logic           all_quiet, any_waiting, all_done, progress;
  logic [1:0]     stuck_q;
  logic [31:0]    idle_cycles_q;
  logic [31:0]    busy_q [NumQ];

  // The first error of this cycle, in a fixed order.
  always_comb begin
    err_now = 1'b0;
    err_now_code = CoreErrorNone;
    err_now_queue = '0;
    err_now_pc = '0;
    err_now_detail = '0;
    err_now_dma = 1'b0;
    err_now_dma_pc = '0;
    err_now_dma_detail = '0;
    // A stream the fetch unit cannot read stops the core before anything issues (lowest queue).
    for (int q = NumQ - 1; q >= 0; q--) begin
      if (stream_bad_q[q] != 2'b00) begin
        err_now = 1'b1;
        err_now_code = CoreErrorFetchRefused;
        err_now_queue = QueueW'(q);
        err_now_pc = '0;
        err_now_detail = stream_bad_q[q][0] ? 8'd0 : 8'd1;
      end
    end
    // An engine's refusal comes before a refusal found at issue: the latter waits for its
    // queue to drain, so any refusal in the same cycle belongs to an earlier instruction.
    if (en_te && te_rej_valid) begin
      err_now = 1'b1;
      err_now_code = CoreErrorTensorRefused;
      err_now_queue = QueueW'(QueuePe);
      err_now_pc = pc_from_tag(last_issued_pc_q[QueuePe], te_rej_tag);
      err_now_detail = 8'(te_rej_code);
    end
    for (int c = 1; c >= 0; c--) begin
      if (!err_now && ve_en[c] && ve_done_valid[c] && ve_done_error[c] != VeErrorNone) begin
        err_now = 1'b1;
        err_now_code = c == Dve ? CoreErrorVectorRefused : CoreErrorScalarRefused;
        err_now_queue = QueueW'(ve_queue(c));
        err_now_pc = pc_from_tag(last_issued_pc_q[ve_queue(c)], ve_done_tag[c]);
        err_now_detail = 8'(ve_done_error[c]);
      end
    end
    for (int g = DmaPorts - 1; g >= 0; g--) begin  // the lowest port first
      if (!err_now_dma && en_dma && dma_done_valid[g] && dma_done_error[g]) begin
        err_now_dma = 1'b1;
        err_now_dma_pc = trk_q[dma_done_engine[g]][trk_head_q[dma_done_engine[g]]].pc;
        err_now_dma_detail = 8'(dma_done_code[g]);
      end
    end
    if (!err_now && en_dma && cc_done_valid_i && cc_done_error_i != CcErrorNone) begin
      err_now = 1'b1;
      err_now_code = CoreErrorCcRefused;
      err_now_queue = QueueW'(QueueCc);
      err_now_pc = pc_from_tag(last_issued_pc_q[QueueCc], cc_done_tag_i);
      err_now_detail = 8'(cc_done_error_i);
    end
    if (!err_now && err_now_dma) begin
      err_now = 1'b1;
      err_now_code = CoreErrorDmaRefused;
      err_now_queue = QueueW'(QueueSp);
      err_now_pc = err_now_dma_pc;
      err_now_detail = err_now_dma_detail;
    end
    // Refusals found at issue (the sequencers raise a decode error only once drained).
    for (int q = NumQ - 1; q >= 0; q--) begin
      if (!err_now && seq_decode_err[q] != '0) begin
        err_now = 1'b1;
        err_now_code = CoreErrorDecode;
        err_now_queue = QueueW'(q);
        err_now_pc = seq_pc[q];
        err_now_detail = 8'(seq_decode_err[q]);
      end
    end
    if (!err_now && dma_refused && seq_drained[QueueSp]) begin
      err_now = 1'b1;
      err_now_code = CoreErrorDmaRefused;
      err_now_queue = QueueW'(QueueSp);
      err_now_pc = seq_pc[QueueSp];
      err_now_detail = 8'(dma_refusal);
    end
    if (!err_now && sbuf_range_err) begin
      err_now = 1'b1;
      err_now_code = CoreErrorDmaRefused;
      err_now_queue = QueueW'(QueueSp);
      err_now_pc = last_issued_pc_q[QueueSp];
      err_now_detail = 8'(DmaErrorOutsideSbuf);
    end
    if (!err_now && sem_overflow) begin
      err_now = 1'b1;
      err_now_code = CoreErrorSemOverflow;
      err_now_queue = sem_overflow_queue;
      err_now_pc = sem_overflow_pc;
      err_now_detail = 8'(sem_overflow_index);
    end
  end

  always_comb begin
    all_done = trk_empty && dma_idle && te_idle && ve_idle[0] && ve_idle[1] && cc_idle &&
               !ve_landing[0] && !ve_landing[1];
    all_quiet = all_done;
    any_waiting = 1'b0;
    for (int q = 0; q < NumQ; q++) begin
      all_done &= seq_finished[q];
      all_quiet &= seq_finished[q] || seq_waiting[q];
      any_waiting |= seq_waiting[q];
    end
    progress = te_psum_write_any || sbuf_dma_active ||
               ve_wr_valid[0] || ve_wr_valid[1] || ve_done_valid[0] || ve_done_valid[1] ||
               |dma_done_valid || |hbm_rsp_valid_i || st_req_valid || mv_req_valid || trk_pop ||
               cc_done_valid_i;
    for (int q = 0; q < NumQ; q++) progress |= seq_issued[q] || seq_sig_valid[q];
  end
  assign halt = run_q != RunBusy;  // an error stops issue from the next cycle

  nc_core_clocks #(.Domains(Domains), .DivideW(7)) u_clocks (
    .clk_i, .rst_ni, .start_i(run_q == RunIdle && start_i), .running_i(run_q == RunBusy),
    .divide_i(clk_divide_i), .en_o(dom_en), .clk_o(dom_clk), .left_o(dom_left)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      run_q <= RunIdle;
      status_q <= CoreStatusDone;
      err_code_q <= CoreErrorNone;
      err_queue_q <= '0;
      err_pc_q <= '0;
      err_detail_q <= '0;
      stuck_q <= '0;
      idle_cycles_q <= '0;
      cycles_q <= '0;
      busy_q <= '{default: '0};
    end else begin
      unique case (run_q)
        RunIdle: if (start_i) begin
          run_q <= RunBusy;
          cycles_q <= '0;
        end
        RunBusy: begin
          cycles_q <= cycles_q + 1'b1;
          busy_q[QueuePe] <= busy_q[QueuePe] + 32'(!te_idle);
          busy_q[QueueAct] <= busy_q[QueueAct] + 32'(!ve_idle[Act]);
          busy_q[QueueDve] <= busy_q[QueueDve] + 32'(!ve_idle[Dve]);
          busy_q[QueueSp] <= busy_q[QueueSp] + 32'(!dma_idle);
          busy_q[QueueCc] <= busy_q[QueueCc] + 32'(!cc_idle);
          idle_cycles_q <= progress ? '0 : idle_cycles_q + 1'b1;
          // Two quiet cycles in a row: nothing in flight can still wake a waiting queue.
          stuck_q <= all_quiet && any_waiting ? stuck_q + 2'(stuck_q != 2'd2) : '0;
          if (err_now) begin
            run_q <= RunFinished;
            status_q <= CoreStatusError;
            err_code_q <= err_now_code;
            err_queue_q <= err_now_queue;
            err_pc_q <= err_now_pc;
            err_detail_q <= err_now_detail;
          end else if (all_done) begin
            run_q <= RunFinished;
            status_q <= CoreStatusDone;
          end else if (stuck_q == 2'd2) begin
            run_q <= RunFinished;
            status_q <= CoreStatusDeadlock;
          end else if (watchdog_cycles_i != '0 && idle_cycles_q >= watchdog_cycles_i) begin
            run_q <= RunFinished;
            status_q <= CoreStatusWatchdog;
          end
        end
        RunFinished: ;
        default: run_q <= RunIdle;
      endcase
    end
  end

  assign ready_o = run_q == RunIdle && te_idle;
  assign running_o = run_q == RunBusy;
  assign finished_o = run_q == RunFinished;
  assign status_o = status_q;
  assign err_code_o = err_code_q;
  assign err_queue_o = err_queue_q;
  assign err_pc_o = err_pc_q;
  assign err_detail_o = err_detail_q;
  assign cnt_cycles_o = cycles_q;
  assign cnt_busy_o = busy_q;

  // Engine outputs the core does not use (their sticky errors are seen as they happen).
  logic unused_outputs;
  always_comb begin
    unused_outputs = ^{te_err, te_err_code, hbm_wr_ready_i[FetchPort], ve_err[0], ve_err[1], ve_counters[0], ve_counters[1],
                       dma_err, te_cnt_unused[0], te_cnt_unused[1], te_cnt_unused[2],
                       te_cnt_unused[3], te_cnt_unused[4], te_cnt_unused[5], te_cnt_unused[6],
                       te_cnt_unused[7]};
  end

  // ---------------------------------------------------------------------------------------
  // Lockstep observation: commits, semaphore effects, writes (nothing here feeds back)
  // ---------------------------------------------------------------------------------------
  always_comb begin
    for (int q = 0; q < NumQ; q++) begin  // a nop completes as it issues
      commit_valid_o[q] = queue_en[q] && seq_issued[q] && seq_word[q][7:0] == 8'(IsaNop);
      commit_queue_o[q] = QueueW'(q);
      commit_pc_o[q] = seq_pc[q];
    end
    for (int c = 0; c < int'(Segs); c++) begin
      commit_valid_o[NumQ + c] = en_te && te_mm_done_valid[c];
      commit_queue_o[NumQ + c] = QueueW'(QueuePe);
      commit_pc_o[NumQ + c] = pc_from_tag(last_issued_pc_q[QueuePe], te_mm_done_tag[c]);
    end
    commit_valid_o[NumQ + Segs] = en_te && te_ls_done_valid;
    commit_queue_o[NumQ + Segs] = QueueW'(QueuePe);
    commit_pc_o[NumQ + Segs] = pc_from_tag(last_issued_pc_q[QueuePe], te_ls_done_tag);
    for (int c = 0; c < 2; c++) begin  // an instruction refused at completion does not commit
      commit_valid_o[NumQ + Segs + 1 + c] = ve_en[c] && ve_done_valid[c] &&
                                            ve_done_error[c] == VeErrorNone;
      commit_queue_o[NumQ + Segs + 1 + c] = QueueW'(ve_queue(c));
      commit_pc_o[NumQ + Segs + 1 + c] = pc_from_tag(last_issued_pc_q[ve_queue(c)],
                                                     ve_done_tag[c]);
    end
    commit_valid_o[NumCommit - 2] = en_dma && trk_pop;
    commit_queue_o[NumCommit - 2] = QueueW'(QueueSp);
    commit_pc_o[NumCommit - 2] = trk_pop_entry.pc;
    commit_valid_o[NumCommit - 1] = en_dma && cc_done_valid_i && cc_done_error_i == CcErrorNone;
    commit_queue_o[NumCommit - 1] = QueueW'(QueueCc);
    commit_pc_o[NumCommit - 1] = pc_from_tag(last_issued_pc_q[QueueCc], cc_done_tag_i);
    for (int i = 0; i < int'(NumCommit); i++) commit_valid_o[i] &= !halt;

    for (int s = 0; s < int'(NumSig); s++) begin
      sem_effect_valid_o[s] = sig_valid[s] && !halt;
      sem_effect_queue_o[s] = sig_queue[s];
      sem_effect_pc_o[s] = sig_pc[s];
      sem_effect_op_o[s] = sig_header[s].sig_op;
      sem_effect_sem_o[s] = sig_header[s].sig_sem;
      sem_effect_value_o[s] = sig_header[s].sig_value;
    end

    for (int c = 0; c < 2; c++) begin  // the engine runs one instruction at a time
      ve_write_valid_o[c] = ve_en[c] && ve_wr_valid[c] && ve_wr_ready[c];
      ve_write_tag_o[c] = ve_done_tag[c];
      ve_write_psum_o[c] = ve_wr_space[c];
      ve_write_addr_o[c] = ve_wr_addr[c];
      ve_write_bytes_o[c] = ve_wr_bytes[c];
      ve_write_mask_o[c] = ve_wr_mask[c];
      ve_write_data_o[c] = ve_wr_data[c];
    end

    te_write_any_o = en_te && te_psum_write_any;
    for (int unsigned p = 0; p < Size; p++) begin
      te_write_valid_o[p] = en_te && psum_wr_valid[p];
      te_write_tag_o[p] = psum_wr_tag[p];
      te_write_bank_o[p] = psum_wr_bank[p];
      te_write_elem_o[p] = psum_wr_elem[p];
      te_write_half_o[p] = psum_wr_half[p];
      te_write_data_o[p] = psum_wr_data[p];
    end

    // A DMA port writes SBUF in the cycle an HBM read response arrives, or when its drain unit
    // writes out a transpose block; nc_dma names the port's engine the data belongs to.
    for (int g = 0; g < int'(DmaPorts); g++) begin
      dma_write_valid_o[g] = en_dma && sbuf_dma_wr_valid[g];
      dma_write_engine_o[g] = 4'(32'(sbuf_dma_wr_engine[g]) * DmaPorts + g);
      dma_write_addr_o[g] = sbuf_dma_wr_addr[g];
      dma_write_data_o[g] = sbuf_dma_wr_data[g];
    end
  end

  // ---------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------
  // An increment past 65535 always stops the core.
  `NC_ASSERT(SemaphoreNeverWrapsSilently, !(sem_overflow && !err_now))
  `NC_ASSERT(CcDoneOnlyForACollectiveInFlight, cc_done_valid_i |-> !cc_idle)
  `NC_ASSERT(PsumDebugReadOnlyWhenStopped, !(dbg_psum_rd_valid_i && run_q == RunBusy))
endmodule
