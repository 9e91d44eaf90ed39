// DMA engines between HBM and SBUF (rtl/dma/README.md).
//
// Engines independent engines, each with a queue of descriptors. An engine walks its descriptor
// (planes x rows x bytes, 32-byte bursts, a stride per dimension on each side) and moves one
// burst at a time: HBM -> SBUF as an HBM read whose response is written to SBUF (reads in flight
// are matched by tag, so the HBM controller may return them in any order); SBUF -> HBM as an
// SBUF read whose data goes out as an HBM write. Engines share the ports round-robin. A
// descriptor starts when the engine's previous one has completed (every read written, every write
// taken), so descriptors of one engine are ordered; engines are not ordered with each other.
// An illegal descriptor is refused (not executed): err_o rises with the first code, and the
// completion of its list is reported with the error flag.
// A transposing descriptor (HBM -> SBUF, 2-byte elements) reads 16 rows of one 32-byte column
// chunk into its engine's block buffer; the one drain unit then writes the block out, one
// partition per element column, and the engine goes on to the next chunk (rtl/dma/README.md).
//
// Fixed costs (issue 49; model::DmaCosts, the golden core's DmaDomainTransfers): a descriptor
// starts no earlier than its not_before stamp (descriptor generation, semaphore-to-start; in the
// core's base cycles, now_i), and completes no earlier than its least time after it started:
// rows x (row_cost_i + bytes x byte_cost_i[transpose]), in this clock's cycles (Q8.24, rounded
// up). All zero: no cost, the one-clock timing.
`include "nc_assert.svh"

module nc_dma
  import nc_isa_pkg::*;
  import nc_dma_pkg::*;
#(
  parameter int unsigned Engines = 16,
  parameter int unsigned QueueDepth = 4,
  parameter int unsigned Tags = 16,        // HBM reads in flight per engine
  parameter int unsigned StageDepth = 4,   // SBUF -> HBM writes staged
  // Bytes of flat SBUF address space that exist (partitions x 224 KiB): a NeuronCore with
  // fewer partitions refuses descriptors that reach past its last one.
  parameter int unsigned SbufLimit = SbufBytes,
  parameter int unsigned TimeW = 48        // base-cycle stamps
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic [5:0]             hbm_bytes_log2_i,  // HBM capacity: 2^n bytes
  // the program image: an SBUF -> HBM descriptor into it is refused (DmaErrorImage)
  input  logic [HbmAddrW-1:0]    image_base_i,
  input  logic [HbmAddrW-1:0]    image_bytes_i,
  // descriptors
  input  logic                   desc_valid_i,
  output logic                   desc_ready_o,
  input  logic [3:0]             desc_engine_i,
  input  isa_dma_t              desc_i,
  input  logic                   desc_malformed_i,  // a list entry with bits it may not have
  input  logic [TimeW-1:0]       desc_not_before_i, // it starts at this base cycle at the earliest
  // costs (issue 49): the base cycle this cycle ends at, and the engines' least time per
  // descriptor: per row, and per byte of a copy (0) and of a transpose (1), in Q8.24 cycles
  input  logic [TimeW-1:0]       now_i,
  input  logic [31:0]            row_cost_i,
  input  logic [1:0][31:0]       byte_cost_i,
  output logic [Engines-1:0]     desc_room_o,       // each engine's queue has room
  // a list finished (its last descriptor completed or was refused)
  output logic                   done_valid_o,
  output logic [3:0]             done_engine_o,
  output logic                   done_error_o,
  output isa_dma_error_e         done_code_o,       // the list's first refusal
  // HBM request ports (nc_hbm_ctrl's) and read responses
  output logic                   hbm_rd_valid_o,
  input  logic                   hbm_rd_ready_i,
  output logic [HbmAddrW-1:0]      hbm_rd_addr_o,
  output logic [31:0]            hbm_rd_id_o,
  output logic                   hbm_wr_valid_o,
  input  logic                   hbm_wr_ready_i,
  output logic [HbmAddrW-1:0]      hbm_wr_addr_o,
  output logic [31:0]            hbm_wr_id_o,
  output logic [255:0]           hbm_wr_data_o,
  input  logic                   hbm_rsp_valid_i,
  input  logic [31:0]            hbm_rsp_id_i,
  input  logic [255:0]           hbm_rsp_data_i,
  // SBUF: writes always taken; read data the next cycle
  output logic                   sbuf_wr_valid_o,
  output logic [SbufAddrW-1:0]   sbuf_wr_addr_o,
  output logic [255:0]           sbuf_wr_data_o,
  output logic [3:0]             sbuf_wr_engine_o,  // the engine whose data it is (monitors)
  output logic                   sbuf_rd_valid_o,
  output logic [SbufAddrW-1:0]   sbuf_rd_addr_o,
  input  logic [255:0]           sbuf_rd_data_i,
  // status
  output logic                   err_o,
  output isa_dma_error_e               err_code_o,
  output logic                   idle_o,
  output logic [31:0]            cnt_bursts_o
);
  localparam int unsigned EngW = $clog2(Engines);
  localparam int unsigned TagW = $clog2(Tags);
  localparam int unsigned OutW = $clog2(Tags + StageDepth + 2) + 1;
  localparam int unsigned LeastW = 48;

  // A descriptor's least time in cycles, rounded up: rows x (per row + bytes x per byte).
  function automatic logic [LeastW-1:0] least_cycles(isa_dma_t d, logic [31:0] row, logic [31:0] byte_cost);
    logic [79:0] per_row, total;
    per_row = 80'(row) + 80'(d.bytes) * 80'(byte_cost);
    total = 80'(d.count1) * 80'(d.count2) * per_row;
    return LeastW'((total + 80'(24'hFF_FFFF)) >> 24);
  endfunction

  // ------------------------------------------------------------------------------------------
  // Descriptor queues, one per engine

  typedef struct packed {
    logic [TimeW-1:0] not_before;
    logic             malformed;
    isa_dma_t         desc;
  } queued_t;
  logic [Engines-1:0] q_in_ready, q_out_valid, q_pop;
  queued_t            q_out [Engines];

  for (genvar e = 0; e < Engines; e++) begin : g_queue
    nc_fifo #(.T(queued_t), .Depth(QueueDepth)) u_queue (
      .clk_i, .rst_ni,
      .in_valid_i (desc_valid_i && desc_engine_i == 4'(e)),
      .in_ready_o (q_in_ready[e]),
      .in_data_i  ('{not_before: desc_not_before_i, malformed: desc_malformed_i, desc: desc_i}),
      .out_valid_o(q_out_valid[e]),
      .out_ready_i(q_pop[e]),
      .out_data_o (q_out[e])
    );
  end
  assign desc_ready_o = q_in_ready[EngW'(desc_engine_i)];
  assign desc_room_o = q_in_ready;


  // ------------------------------------------------------------------------------------------
  // Engine state

  typedef struct packed {
    logic                 busy;        // a descriptor is loaded
    logic                 issued;      // all its bursts have gone out
    logic                 report;      // a list's completion waits to be reported
    isa_dma_error_e       list_code;   // the first refusal of the current list
    isa_dma_t            desc;
    logic [16:0]          off;         // byte offset in the row
    logic [11:0]          i1, i2;
    logic [HbmAddrW-1:0]  row_hbm, plane_hbm;
    logic [SbufAddrW-1:0] row_sbuf, plane_sbuf;
    logic [OutW-1:0]      outstanding; // reads not yet written, writes not yet taken
    logic                 tp_hold;     // transpose: a block's reads issued, its drain not done
    logic [SbufAddrW-1:0] tp_addr;     // transpose: that block's SBUF address (column 0)
    logic [LeastW-1:0]    least;       // cycles it may not complete in yet (issue 49; 0, 1: none)
  } engine_t;

  engine_t                eng_q [Engines], eng_d [Engines];
  // Transpose block buffers: row i of the chunk, and which rows have arrived.
  logic [TpRows-1:0][255:0] tp_buf_q [Engines];
  logic [TpRows-1:0]      tp_have_q [Engines], tp_have_d [Engines];
  // The drain unit: 2 cycles to turn a full buffer around, then one column (partition) a cycle
  // when the SBUF write port is free of a copy's response.
  logic                   dr_busy_q, dr_busy_d;
  logic [EngW-1:0]        dr_eng_q, dr_eng_d;
  logic [4:0]             dr_cnt_q, dr_cnt_d;
  logic [Tags-1:0]        tag_busy_q [Engines], tag_busy_d [Engines];
  logic [SbufAddrW-1:0]   tag_addr_q [Engines][Tags];
  logic [EngW-1:0]        rr_rd_q, rr_rd_d, rr_srd_q, rr_srd_d;
  logic                   err_q, err_d;
  isa_dma_error_e               err_code_q, err_code_d;
  logic [31:0]            cnt_bursts_q;

  // HBM read request register (held until taken) and the SBUF read in flight.
  logic                   rd_out_valid_q, rd_out_valid_d;
  logic [HbmAddrW-1:0]    rd_out_addr_q, rd_out_addr_d;
  logic [EngW-1:0]        rd_out_eng_q, rd_out_eng_d;
  logic [TagW-1:0]        rd_out_tag_q, rd_out_tag_d;
  logic                   srd_valid_q, srd_valid_d;
  logic [HbmAddrW-1:0]    srd_hbm_q, srd_hbm_d;
  logic [EngW-1:0]        srd_eng_q, srd_eng_d;

  // Write staging: SBUF data on its way to the HBM write port.
  typedef struct packed {
    logic [EngW-1:0] eng;
    logic [HbmAddrW-1:0] addr;
    logic [255:0]    data;
  } stage_t;
  logic   stage_in_ready, stage_out_valid, stage_pop;
  stage_t stage_in, stage_out;
  logic [$clog2(StageDepth+1):0] stage_count_q, stage_count_d;

  // ------------------------------------------------------------------------------------------
  // Arbitration: the next engine (round-robin) that wants the HBM read port / the SBUF read port

  logic [Engines-1:0] want_rd, want_srd;
  logic [TagW-1:0]    free_tag [Engines];
  logic               grant_rd_valid, grant_srd_valid, load_rd;
  logic [EngW-1:0]    grant_rd, grant_srd;

  always_comb begin
    for (int unsigned e = 0; e < Engines; e++) begin
      free_tag[e] = '0;
      for (int t = Tags - 1; t >= 0; t--) if (!tag_busy_q[e][t]) free_tag[e] = TagW'(t);
      want_rd[e] = eng_q[e].busy && !eng_q[e].issued && !eng_q[e].desc.to_hbm &&
                   !(&tag_busy_q[e]) && !eng_q[e].tp_hold;
      want_srd[e] = eng_q[e].busy && !eng_q[e].issued && eng_q[e].desc.to_hbm;
    end
    // The read register takes a new request when it is empty or its request is taken now.
    load_rd = !rd_out_valid_q || hbm_rd_ready_i;
    grant_rd_valid = 1'b0;
    grant_rd = '0;
    for (int unsigned k = 0; k < Engines; k++)
      if (!grant_rd_valid && load_rd && want_rd[EngW'(32'(rr_rd_q) + k)]) begin
        grant_rd_valid = 1'b1;
        grant_rd = EngW'(32'(rr_rd_q) + k);
      end
    // An SBUF read only when its data will find room in the staging FIFO.
    grant_srd_valid = 1'b0;
    grant_srd = '0;
    for (int unsigned k = 0; k < Engines; k++)
      if (!grant_srd_valid && 32'(stage_count_q) + 32'(srd_valid_q) < StageDepth &&
          want_srd[EngW'(32'(rr_srd_q) + k)]) begin
        grant_srd_valid = 1'b1;
        grant_srd = EngW'(32'(rr_srd_q) + k);
      end
  end

  // ------------------------------------------------------------------------------------------
  // Next state

  logic             rsp_write;
  logic [EngW-1:0]  rsp_eng;
  logic [TagW-1:0]  rsp_tag;
  logic             done_found;
  logic [EngW-1:0]  done_eng;

  logic             rsp_transpose, dr_write;
  logic [SbufAddrW-1:0] rsp_tag_addr;  // the read's SBUF address (a transposing read's: its row)
  logic [3:0]       dr_col;
  logic [255:0]     dr_data;
  assign rsp_eng = hbm_rsp_id_i[8 +: EngW];
  assign rsp_tag = hbm_rsp_id_i[0 +: TagW];
  assign rsp_tag_addr = tag_addr_q[rsp_eng][rsp_tag];
  // A response of a transposing engine goes to its block buffer, not to SBUF.
  assign rsp_transpose = hbm_rsp_valid_i && eng_q[rsp_eng].desc.transpose;
  assign rsp_write = hbm_rsp_valid_i && !rsp_transpose;
  // The drain writes a column when its turnaround is done and no response takes the port.
  assign dr_write = dr_busy_q && dr_cnt_q >= 5'd2 && !rsp_write;
  assign dr_col = 4'(dr_cnt_q - 5'd2);
  always_comb begin
    for (int i = 0; i < int'(TpRows); i++)
      dr_data[16 * i +: 16] = tp_buf_q[dr_eng_q][i][16 * int'(dr_col) +: 16];
  end
  assign stage_pop = stage_out_valid && hbm_wr_ready_i;

  always_comb begin
    done_found = 1'b0;
    done_eng = '0;
    for (int e = Engines - 1; e >= 0; e--)
      if (eng_q[e].report) begin
        done_found = 1'b1;
        done_eng = EngW'(e);
      end
  end

  // Advances a transposing engine past the read it just issued: rows of the block innermost,
  // then 32-byte column chunks, then blocks of 16 rows (one plane). row_hbm is row i1's HBM
  // address, plane_hbm the block's first row's; row_sbuf is the chunk's column-0 address in
  // SBUF, plane_sbuf the block's.
  function automatic engine_t advance_transpose(input engine_t s);
    engine_t n;
    n = s;
    if (s.i1[3:0] != 4'hF) begin
      n.i1 = s.i1 + 1'b1;
      n.row_hbm = s.row_hbm + HbmAddrW'(s.desc.hbm_stride1);
      return n;
    end
    n.tp_hold = 1'b1;                      // the chunk's 16 reads are out: wait for its drain
    n.tp_addr = s.row_sbuf;
    n.off = s.off + 17'd32;
    if (n.off != s.desc.bytes) begin       // the next chunk of the same rows
      n.i1 = s.i1 - 12'd15;
      n.row_hbm = s.plane_hbm;             // (the read adds off)
      n.row_sbuf = s.row_sbuf + SbufAddrW'(16 * PartitionBytes);
    end else if (s.i1 + 1'b1 == s.desc.count1) begin
      n.issued = 1'b1;
    end else begin                         // the next block of 16 rows
      n.off = '0;
      n.i1 = s.i1 + 1'b1;
      n.plane_hbm = s.plane_hbm + (HbmAddrW'(s.desc.hbm_stride1) << 4);
      n.row_hbm = s.plane_hbm + (HbmAddrW'(s.desc.hbm_stride1) << 4);
      n.plane_sbuf = s.plane_sbuf + SbufAddrW'(2 * TpRows);
      n.row_sbuf = s.plane_sbuf + SbufAddrW'(2 * TpRows);
    end
    return n;
  endfunction

  // Advances an engine's walk past the burst it just issued.
  function automatic engine_t advance(input engine_t s);
    engine_t n;
    n = s;
    if (s.desc.transpose) return advance_transpose(s);
    n.off = s.off + 17'd32;
    if (n.off == s.desc.bytes) begin
      n.off = '0;
      if (s.i1 + 1'b1 == s.desc.count1) begin
        n.i1 = '0;
        if (s.i2 + 1'b1 == s.desc.count2) begin
          n.issued = 1'b1;
        end else begin
          n.i2 = s.i2 + 1'b1;
          n.plane_hbm = s.plane_hbm + HbmAddrW'(s.desc.hbm_stride2);
          n.plane_sbuf = s.plane_sbuf + s.desc.sbuf_stride2;
          n.row_hbm = s.plane_hbm + HbmAddrW'(s.desc.hbm_stride2);
          n.row_sbuf = s.plane_sbuf + s.desc.sbuf_stride2;
        end
      end else begin
        n.i1 = s.i1 + 1'b1;
        n.row_hbm = s.row_hbm + HbmAddrW'(s.desc.hbm_stride1);
        n.row_sbuf = s.row_sbuf + s.desc.sbuf_stride1;
      end
    end
    return n;
  endfunction

  always_comb begin
    isa_dma_error_e code;
    for (int unsigned e = 0; e < Engines; e++) begin
      eng_d[e] = eng_q[e];
      tag_busy_d[e] = tag_busy_q[e];
      tp_have_d[e] = tp_have_q[e];
      q_pop[e] = 1'b0;
    end
    dr_busy_d = dr_busy_q;
    dr_eng_d = dr_eng_q;
    dr_cnt_d = dr_cnt_q;
    rr_rd_d = rr_rd_q;
    rr_srd_d = rr_srd_q;
    err_d = err_q;
    err_code_d = err_code_q;
    code = DmaErrorNone;

    // HBM read request register.
    rd_out_valid_d = rd_out_valid_q && !hbm_rd_ready_i;
    rd_out_addr_d = rd_out_addr_q;
    rd_out_eng_d = rd_out_eng_q;
    rd_out_tag_d = rd_out_tag_q;
    if (grant_rd_valid) begin
      rd_out_valid_d = 1'b1;
      rd_out_addr_d = eng_q[grant_rd].row_hbm + HbmAddrW'(eng_q[grant_rd].off);
      rd_out_eng_d = grant_rd;
      rd_out_tag_d = free_tag[grant_rd];
      tag_busy_d[grant_rd][free_tag[grant_rd]] = 1'b1;
      eng_d[grant_rd] = advance(eng_q[grant_rd]);
      eng_d[grant_rd].outstanding = eng_q[grant_rd].outstanding + 1'b1;
      rr_rd_d = grant_rd + 1'b1;
    end

    // SBUF read for an HBM write.
    srd_valid_d = grant_srd_valid;
    srd_hbm_d = srd_hbm_q;
    srd_eng_d = srd_eng_q;
    if (grant_srd_valid) begin
      srd_hbm_d = eng_q[grant_srd].row_hbm + HbmAddrW'(eng_q[grant_srd].off);
      srd_eng_d = grant_srd;
      eng_d[grant_srd] = advance(eng_q[grant_srd]);
      eng_d[grant_srd].outstanding = eng_q[grant_srd].outstanding + 1'b1;
      rr_srd_d = grant_srd + 1'b1;
    end

    // Completions: a read's data written to SBUF, a write taken by HBM; a transposing read's
    // data into its buffer (the drain's column writes complete those reads).
    if (rsp_write) begin
      tag_busy_d[rsp_eng][rsp_tag] = 1'b0;
      eng_d[rsp_eng].outstanding = eng_d[rsp_eng].outstanding - 1'b1;
    end
    if (rsp_transpose) begin
      tag_busy_d[rsp_eng][rsp_tag] = 1'b0;
      tp_have_d[rsp_eng][rsp_tag_addr[3:0]] = 1'b1;
    end
    // The drain unit: start on the lowest engine with a full buffer; a column per free cycle.
    if (!dr_busy_q) begin
      for (int e = Engines - 1; e >= 0; e--)
        if (&tp_have_q[e]) begin
          dr_busy_d = 1'b1;
          dr_eng_d = EngW'(e);
          dr_cnt_d = '0;
        end
    end else if (dr_cnt_q < 5'd2 || dr_write) begin
      dr_cnt_d = dr_cnt_q + 5'd1;
      if (dr_write) eng_d[dr_eng_q].outstanding = eng_d[dr_eng_q].outstanding - 1'b1;
      if (dr_write && dr_col == 4'hF) begin
        dr_busy_d = 1'b0;
        tp_have_d[dr_eng_q] = '0;
        eng_d[dr_eng_q].tp_hold = 1'b0;
      end
    end
    if (stage_pop)
      eng_d[stage_out.eng].outstanding = eng_d[stage_out.eng].outstanding - 1'b1;

    for (int unsigned e = 0; e < Engines; e++) begin
      if (eng_q[e].least != '0) eng_d[e].least = eng_q[e].least - 1'b1;
      // A descriptor completes when all its bursts went out and came back, and its least time
      // has passed.
      if (eng_q[e].busy && eng_q[e].issued && eng_q[e].outstanding == '0 && eng_q[e].least <= 1) begin
        eng_d[e].busy = 1'b0;
        eng_d[e].report = eng_q[e].desc.last;
      end
      // The next descriptor, once its not_before has come: refused, or loaded.
      if (!eng_q[e].busy && !eng_q[e].report && q_out_valid[e] && now_i >= q_out[e].not_before) begin
        q_pop[e] = 1'b1;
        code = q_out[e].malformed ? DmaErrorDescriptor
                                  : dma_check(q_out[e].desc, hbm_bytes_log2_i, 48'(SbufLimit));
        if (code == DmaErrorNone && dma_writes_image(q_out[e].desc, image_base_i, image_bytes_i))
          code = DmaErrorImage;
        if (code != DmaErrorNone) begin
          if (eng_q[e].list_code == DmaErrorNone) eng_d[e].list_code = code;
          eng_d[e].report = q_out[e].desc.last;
          if (!err_d) begin
            err_d = 1'b1;
            err_code_d = code;
          end
        end else begin
          eng_d[e].busy = 1'b1;
          eng_d[e].issued = 1'b0;
          eng_d[e].desc = q_out[e].desc;
          eng_d[e].off = '0;
          eng_d[e].i1 = '0;
          eng_d[e].i2 = '0;
          eng_d[e].row_hbm = q_out[e].desc.hbm_addr;
          eng_d[e].plane_hbm = q_out[e].desc.hbm_addr;
          eng_d[e].row_sbuf = q_out[e].desc.sbuf_addr;
          eng_d[e].plane_sbuf = q_out[e].desc.sbuf_addr;
          eng_d[e].tp_hold = 1'b0;
          eng_d[e].least = least_cycles(q_out[e].desc, row_cost_i, byte_cost_i[q_out[e].desc.transpose]);
        end
      end
    end
    // One list completion reported per cycle; its error flag clears with it.
    if (done_found) begin
      eng_d[done_eng].report = 1'b0;
      eng_d[done_eng].list_code = DmaErrorNone;
    end
  end

  // Staging FIFO: SBUF read data, one cycle after the read.
  assign stage_in = '{eng: srd_eng_q, addr: srd_hbm_q, data: sbuf_rd_data_i};
  nc_fifo #(.T(stage_t), .Depth(StageDepth)) u_stage (
    .clk_i, .rst_ni,
    .in_valid_i (srd_valid_q),
    .in_ready_o (stage_in_ready),
    .in_data_i  (stage_in),
    .out_valid_o(stage_out_valid),
    .out_ready_i(hbm_wr_ready_i),
    .out_data_o (stage_out)
  );
  assign stage_count_d = stage_count_q + ($clog2(StageDepth+1)+1)'(srd_valid_q) -
                         ($clog2(StageDepth+1)+1)'(stage_pop);

  // ------------------------------------------------------------------------------------------
  // Outputs

  assign hbm_rd_valid_o = rd_out_valid_q;
  assign hbm_rd_addr_o = rd_out_addr_q;
  assign hbm_rd_id_o = {16'd0, 8'(rd_out_eng_q), 8'(rd_out_tag_q)};
  assign hbm_wr_valid_o = stage_out_valid;
  assign hbm_wr_addr_o = stage_out.addr;
  assign hbm_wr_id_o = {16'd0, 8'(stage_out.eng), 8'd0};
  assign hbm_wr_data_o = stage_out.data;
  assign sbuf_wr_valid_o = rsp_write || dr_write;
  assign sbuf_wr_addr_o = rsp_write ? rsp_tag_addr
                                    : eng_q[dr_eng_q].tp_addr + SbufAddrW'(dr_col) * SbufAddrW'(PartitionBytes);
  assign sbuf_wr_data_o = rsp_write ? hbm_rsp_data_i : dr_data;
  assign sbuf_wr_engine_o = rsp_write ? 4'(rsp_eng) : 4'(dr_eng_q);
  assign sbuf_rd_valid_o = grant_srd_valid;
  assign sbuf_rd_addr_o = eng_q[grant_srd].row_sbuf + SbufAddrW'(eng_q[grant_srd].off);
  assign done_valid_o = done_found;
  assign done_engine_o = 4'(done_eng);
  assign done_error_o = eng_q[done_eng].list_code != DmaErrorNone;
  assign done_code_o = eng_q[done_eng].list_code;
  assign err_o = err_q;
  assign err_code_o = err_code_q;

  always_comb begin
    idle_o = !rd_out_valid_q && !srd_valid_q && !stage_out_valid && !dr_busy_q;
    for (int unsigned e = 0; e < Engines; e++)
      idle_o &= !eng_q[e].busy && !eng_q[e].report && !q_out_valid[e];
  end

  // ------------------------------------------------------------------------------------------
  // Registers

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      eng_q <= '{default: '0};
      tag_busy_q <= '{default: '0};
      tp_have_q <= '{default: '0};
      dr_busy_q <= 1'b0;
      dr_eng_q <= '0;
      dr_cnt_q <= '0;
      rr_rd_q <= '0;
      rr_srd_q <= '0;
      err_q <= 1'b0;
      err_code_q <= DmaErrorNone;
      rd_out_valid_q <= 1'b0;
      rd_out_addr_q <= '0;
      rd_out_eng_q <= '0;
      rd_out_tag_q <= '0;
      srd_valid_q <= 1'b0;
      srd_hbm_q <= '0;
      srd_eng_q <= '0;
      stage_count_q <= '0;
      cnt_bursts_q <= '0;
    end else begin
      eng_q <= eng_d;
      tag_busy_q <= tag_busy_d;
      tp_have_q <= tp_have_d;
      dr_busy_q <= dr_busy_d;
      dr_eng_q <= dr_eng_d;
      dr_cnt_q <= dr_cnt_d;
      rr_rd_q <= rr_rd_d;
      rr_srd_q <= rr_srd_d;
      err_q <= err_d;
      err_code_q <= err_code_d;
      rd_out_valid_q <= rd_out_valid_d;
      rd_out_addr_q <= rd_out_addr_d;
      rd_out_eng_q <= rd_out_eng_d;
      rd_out_tag_q <= rd_out_tag_d;
      srd_valid_q <= srd_valid_d;
      srd_hbm_q <= srd_hbm_d;
      srd_eng_q <= srd_eng_d;
      stage_count_q <= stage_count_d;
      cnt_bursts_q <= cnt_bursts_q + 32'(rsp_write) + 32'(dr_write) + 32'(stage_pop);
    end
  end
  assign cnt_bursts_o = cnt_bursts_q;

  // The SBUF address of each read in flight, by engine and tag (a transposing read: its row in
  // the block). No reset: read only after set. The block buffers likewise.
  always_ff @(posedge clk_i) begin
    if (grant_rd_valid)
      tag_addr_q[grant_rd][free_tag[grant_rd]] <= eng_q[grant_rd].desc.transpose
          ? SbufAddrW'(eng_q[grant_rd].i1[3:0])
          : eng_q[grant_rd].row_sbuf + SbufAddrW'(eng_q[grant_rd].off);
    if (rsp_transpose) tp_buf_q[rsp_eng][rsp_tag_addr[3:0]] <= hbm_rsp_data_i;
  end

  // ------------------------------------------------------------------------------------------
  // Assertions

  `NC_ASSERT_HANDSHAKE(HbmRdReqStable, hbm_rd_valid_o, hbm_rd_ready_i,
                       {hbm_rd_addr_o, hbm_rd_id_o})
  // A response names a read in flight; staged data always finds room.
  logic rsp_tag_busy;
  assign rsp_tag_busy = tag_busy_q[rsp_eng][rsp_tag];
  `NC_ASSERT(RspMatchesAReadInFlight, hbm_rsp_valid_i |-> rsp_tag_busy)
  `NC_ASSERT(StageNeverOverflows, srd_valid_q |-> stage_in_ready)
  // A transposing read lands in a buffer row still empty (its engine holds until the drain).
  logic rsp_row_taken;
  assign rsp_row_taken = tp_have_q[rsp_eng][rsp_tag_addr[3:0]];
  `NC_ASSERT(TransposeRowFree, rsp_transpose |-> !rsp_row_taken)
endmodule
