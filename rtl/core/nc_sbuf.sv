// The state buffer (SBUF): Parts partitions of Bytes bytes, byte-addressed, one port per client
// so that the tensor, vector and scalar engines and the DMA never wait on each other (the
// hardware's SBUF is banked widely enough for that; a client here never sees back-pressure).
// Each partition is a memory of 32-byte lines. Every read answers on the cycle after its
// request; elements are aligned to their size (the engines refuse anything else). A write and a read of the same byte in
// one cycle: the read sees the old value. Two writes to one byte in one cycle (a race the
// program's semaphores should prevent): the debug port, then the DMA, then the scalar engine
// wins over the vector engine.
//
// The DMA has DmaPorts ports (one per group of DMA engines); two DMA writes to one line in one
// cycle (again a race): the higher port wins.
//
// Layout: one memory of Lines entries, each holding that 32-byte line of every partition. An
// engine's access touches one line index in every partition (the moving tile: one per row
// segment), so a vector or scalar write is one read-modify-write of one entry, and everything
// is written as loops over partitions (a generate block per partition made the simulator's
// model four times larger and every partition's logic run on every clock edge).
//
// Clock domains (issue 49): the memory is on the core's base clock, and each client's port acts
// only in the base cycles its own domain's clock rises at the end of (en_*_i), so a request
// held for a whole cycle of a slower domain reads and writes once, and its response register
// belongs to the client's domain. With every enable high this is a one-clock memory.
//
// Addresses: the engines give a byte offset inside every partition they touch; the DMA and
// the debug port give `partition * DmaStride + offset` (nc_dma_pkg's flat layout) and move
// 32 bytes. An access outside the memory is dropped (reads return zero) and raises range_err_o.
module nc_sbuf
  import nc_isa_pkg::*;
  import nc_tensor_pkg::MaxReps;
  import nc_tensor_pkg::LsCols;
  import nc_tensor_pkg::Segs;
#(
  parameter int unsigned Parts = 128,
  parameter int unsigned Bytes = 229376,   // per partition (224 KiB: 28 MiB at 128 partitions)
  parameter int unsigned AddrW = 18,       // engines' byte offsets
  parameter int unsigned FlatW = 25,       // DMA and debug addresses
  parameter int unsigned DmaStride = 229376,
  parameter int unsigned DmaPorts = 1
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  // the base cycle ends with an edge of the client's clock: tensor engine, vector (0) and
  // scalar (1) engines, DMA
  input  logic                     en_te_i,
  input  logic                     en_ve_i [2],
  input  logic                     en_dma_i,
  // tensor engine: stationary (one address for every partition) and its sparse tags
  input  logic                     st_req_valid_i,
  input  logic [AddrW-1:0]         st_req_addr_i,
  input  logic [2:0]               st_req_bytes_i,
  input  logic [2:0]               st_req_reps_i,
  input  logic [AddrW-1:0]         st_req_rep_step_i,
  input  logic [AddrW-1:0]         st_req_tag_addr_i,
  input  logic [2:0]               st_req_cols_i,      // columns col_step apart (fast LS)
  input  logic [AddrW-1:0]         st_req_col_step_i,
  output logic                     st_rsp_valid_o,
  output logic [31:0]              st_rsp_data_o [MaxReps][Parts],
  output logic [31:0]              st_rsp_more_o [LsCols-1][MaxReps][Parts],  // columns 1 ..

  output logic [15:0]              st_rsp_tag_o [Parts],
  // tensor engine: moving tile (an address per row segment)
  input  logic                     mv_req_valid_i,
  input  logic [Segs-1:0]          mv_req_segs_i,
  input  logic [AddrW-1:0]         mv_req_addr_i [Segs],
  input  logic [2:0]               mv_req_bytes_i [Segs],
  input  logic [2:0]               mv_req_reps_i,
  input  logic [AddrW-1:0]         mv_req_rep_step_i [Segs],
  output logic                     mv_rsp_valid_o,
  output logic [31:0]              mv_rsp_data_o [MaxReps][Parts],
  // vector (index 0) and scalar (index 1) engines: one element of every partition
  input  logic                     ve_rd_valid_i [2],
  input  logic [AddrW-1:0]         ve_rd_addr_i [2],
  input  logic [2:0]               ve_rd_bytes_i [2],
  output logic                     ve_rd_rsp_valid_o [2],
  output logic [Parts-1:0][31:0]   ve_rd_rsp_data_o [2],
  input  logic                     ve_wr_valid_i [2],
  input  logic [AddrW-1:0]         ve_wr_addr_i [2],
  input  logic [2:0]               ve_wr_bytes_i [2],
  input  logic [Parts-1:0]         ve_wr_mask_i [2],
  input  logic [Parts-1:0][31:0]   ve_wr_data_i [2],
  // DMA: 32 bytes of one partition, per port
  input  logic                     dma_wr_valid_i [DmaPorts],
  input  logic [FlatW-1:0]         dma_wr_addr_i [DmaPorts],
  input  logic [255:0]             dma_wr_data_i [DmaPorts],
  input  logic                     dma_rd_valid_i [DmaPorts],
  input  logic [FlatW-1:0]         dma_rd_addr_i [DmaPorts],
  output logic [255:0]             dma_rd_data_o [DmaPorts],
  // debug port (testbench loads and dumps): writes on the clock, reads combinational
  input  logic                     dbg_wr_valid_i,
  input  logic [FlatW-1:0]         dbg_addr_i,
  input  logic [255:0]             dbg_wr_data_i,
  output logic [255:0]             dbg_rd_data_o,
  output logic                     range_err_o      // sticky: an access outside the memory
);
  localparam int unsigned PartW = $clog2(Parts) > 0 ? $clog2(Parts) : 1;
  localparam int unsigned Lines = (Bytes + 31) / 32;   // 32-byte lines per partition
  localparam int unsigned LineW = $clog2(Lines);
  localparam int unsigned SegW = $clog2(Segs);

  // A flat address: its partition and offset, and whether 32 bytes there exist.
  function automatic logic [PartW-1:0] flat_part(logic [FlatW-1:0] a);
    return PartW'(32'(a) / DmaStride);
  endfunction
  function automatic logic [LineW-1:0] flat_line(logic [FlatW-1:0] a);
    return LineW'((32'(a) % DmaStride) / 32);
  endfunction
  function automatic logic flat_in_range(logic [FlatW-1:0] a);
    return 32'(a) / DmaStride < Parts && 32'(a) % DmaStride + 32 <= Bytes;
  endfunction
  function automatic logic elem_in_range(logic [AddrW-1:0] addr, logic [2:0] n);
    return 32'(addr) + 32'(n) <= Bytes;
  endfunction
  function automatic logic [LineW-1:0] line_of(logic [AddrW-1:0] addr);
    return LineW'(addr >> 5);
  endfunction
  // `n` bytes (1, 2 or 4; never across a line, since elements are aligned) at byte `at`
  // of `line`, zero-extended.
  function automatic logic [31:0] elem_of(logic [255:0] line, logic [4:0] at, logic [2:0] n);
    logic [31:0] v = 32'(line >> (8 * at));
    return n == 3'd4 ? v[31:0] : n == 3'd2 ? {16'd0, v[15:0]} : {24'd0, v[7:0]};
  endfunction
  // A line with `n` bytes of `data` written at byte `at`.
  function automatic logic [255:0] merge(logic [255:0] line, logic [4:0] at, logic [2:0] n,
                                         logic [31:0] data);
    logic [255:0] mask = {224'd0, n == 3'd4 ? 32'hFFFF_FFFF : n == 3'd2 ? 32'h0000_FFFF
                                                                        : 32'h0000_00FF};
    logic [255:0] bits = {224'd0, data};
    mask = mask << (8 * at);
    bits = bits << (8 * at);
    return (line & ~mask) | (bits & mask);
  endfunction

  logic [255:0] mem_q [Lines][Parts];

  // ---- reads: looked up only on a cycle with a request, registered for the next one -------
  // (written as ifs: the simulator evaluates every combinational block on every clock edge)
  logic [31:0] st_rsp_d [MaxReps][Parts], mv_rsp_d [MaxReps][Parts];
  logic [31:0] st_more_d [LsCols-1][MaxReps][Parts];
  logic [15:0] st_tag_d [Parts];
  logic [Parts-1:0][31:0] ve_rsp_d [2];
  always_comb begin
    logic [AddrW-1:0] sa;
    sa = '0;
    for (int unsigned p = 0; p < Parts; p++) begin
      for (int unsigned r = 0; r < MaxReps; r++) st_rsp_d[r][p] = '0;
      for (int unsigned c = 0; c < LsCols - 1; c++)
        for (int unsigned r = 0; r < MaxReps; r++) st_more_d[c][r][p] = '0;
      st_tag_d[p] = '0;
    end
    if (st_req_valid_i) begin
      for (int unsigned r = 0; r < MaxReps; r++) begin
        sa = st_req_addr_i + AddrW'(r) * st_req_rep_step_i;
        if (r < 32'(st_req_reps_i) && elem_in_range(sa, st_req_bytes_i))
          for (int unsigned p = 0; p < Parts; p++)
            st_rsp_d[r][p] = elem_of(mem_q[line_of(sa)][p], sa[4:0], st_req_bytes_i);
      end
      // The further columns of a fast LoadStationary.
      for (int unsigned c = 1; c < LsCols; c++)
        for (int unsigned r = 0; r < MaxReps; r++) begin
          sa = st_req_addr_i + AddrW'(c) * st_req_col_step_i + AddrW'(r) * st_req_rep_step_i;
          if (c < 32'(st_req_cols_i) && r < 32'(st_req_reps_i) && elem_in_range(sa, st_req_bytes_i))
            for (int unsigned p = 0; p < Parts; p++)
              st_more_d[c - 1][r][p] = elem_of(mem_q[line_of(sa)][p], sa[4:0], st_req_bytes_i);
        end
      if (elem_in_range(st_req_tag_addr_i, 3'd2))
        for (int unsigned p = 0; p < Parts; p++)
          st_tag_d[p] = 16'(elem_of(mem_q[line_of(st_req_tag_addr_i)][p], st_req_tag_addr_i[4:0], 3'd2));
    end
  end
  always_comb begin
    logic [SegW-1:0]  seg;
    logic [AddrW-1:0] ma;
    {seg, ma} = '0;
    for (int unsigned p = 0; p < Parts; p++)
      for (int unsigned r = 0; r < MaxReps; r++) mv_rsp_d[r][p] = '0;
    if (mv_req_valid_i) begin
      for (int unsigned r = 0; r < MaxReps; r++) begin
        for (int unsigned p = 0; p < Parts; p++) begin
          // the moving tile: an address per row segment
          seg = SegW'(p * Segs / Parts);
          ma = mv_req_addr_i[seg] + AddrW'(r) * mv_req_rep_step_i[seg];
          if (r < 32'(mv_req_reps_i) && mv_req_segs_i[seg] && elem_in_range(ma, mv_req_bytes_i[seg]))
            mv_rsp_d[r][p] = elem_of(mem_q[line_of(ma)][p], ma[4:0], mv_req_bytes_i[seg]);
        end
      end
    end
  end
  always_comb begin
    for (int unsigned c = 0; c < 2; c++) begin
      ve_rsp_d[c] = '0;
      if (ve_rd_valid_i[c] && elem_in_range(ve_rd_addr_i[c], ve_rd_bytes_i[c]))
        for (int unsigned p = 0; p < Parts; p++)
          ve_rsp_d[c][p] = elem_of(mem_q[line_of(ve_rd_addr_i[c])][p], ve_rd_addr_i[c][4:0], ve_rd_bytes_i[c]);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_rsp_valid_o <= 1'b0;
      mv_rsp_valid_o <= 1'b0;
      ve_rd_rsp_valid_o <= '{default: 1'b0};
    end else begin
      if (en_te_i) st_rsp_valid_o <= st_req_valid_i;
      if (en_te_i) mv_rsp_valid_o <= mv_req_valid_i;
      if (en_ve_i[0]) ve_rd_rsp_valid_o[0] <= ve_rd_valid_i[0];
      if (en_ve_i[1]) ve_rd_rsp_valid_o[1] <= ve_rd_valid_i[1];
    end
  end
  always_ff @(posedge clk_i) begin
    if (en_te_i && st_req_valid_i) st_rsp_data_o <= st_rsp_d;
    if (en_te_i && st_req_valid_i && st_req_cols_i > 3'd1) st_rsp_more_o <= st_more_d;
    if (en_te_i && st_req_valid_i) st_rsp_tag_o <= st_tag_d;
    if (en_te_i && mv_req_valid_i) mv_rsp_data_o <= mv_rsp_d;
    if (en_ve_i[0] && ve_rd_valid_i[0]) ve_rd_rsp_data_o[0] <= ve_rsp_d[0];
    if (en_ve_i[1] && ve_rd_valid_i[1]) ve_rd_rsp_data_o[1] <= ve_rsp_d[1];
    for (int unsigned g = 0; g < DmaPorts; g++)
      if (en_dma_i && dma_rd_valid_i[g])
        dma_rd_data_o[g] <= flat_in_range(dma_rd_addr_i[g])
            ? mem_q[flat_line(dma_rd_addr_i[g])][flat_part(dma_rd_addr_i[g])] : '0;
  end
  assign dbg_rd_data_o = flat_in_range(dbg_addr_i) ? mem_q[flat_line(dbg_addr_i)][flat_part(dbg_addr_i)]
                                                    : '0;

  // ---- writes, in this order (a later one wins a byte): vector, scalar, DMA, debug ---------
  // A vector or scalar write merges its elements into a copy of the line in every partition
  // and writes the copy back (the scalar's starts from the vector's when both hit one line).
  logic ve_wr_any [2];
  logic ve_wr [2];  // a write that happens this cycle
  assign ve_wr[0] = en_ve_i[0] && ve_wr_valid_i[0];
  assign ve_wr[1] = en_ve_i[1] && ve_wr_valid_i[1];
  assign ve_wr_any[0] = ve_wr[0] && elem_in_range(ve_wr_addr_i[0], ve_wr_bytes_i[0]);
  assign ve_wr_any[1] = ve_wr[1] && elem_in_range(ve_wr_addr_i[1], ve_wr_bytes_i[1]);
  always_ff @(posedge clk_i) begin
    logic [255:0] row0 [Parts], row1 [Parts];
    if (ve_wr_any[0]) begin
      row0 = mem_q[line_of(ve_wr_addr_i[0])];
      for (int unsigned p = 0; p < Parts; p++)
        if (ve_wr_mask_i[0][p])
          row0[p] = merge(row0[p], ve_wr_addr_i[0][4:0], ve_wr_bytes_i[0], ve_wr_data_i[0][p]);
      mem_q[line_of(ve_wr_addr_i[0])] <= row0;
    end
    if (ve_wr_any[1]) begin
      row1 = ve_wr_any[0] && line_of(ve_wr_addr_i[0]) == line_of(ve_wr_addr_i[1])
           ? row0 : mem_q[line_of(ve_wr_addr_i[1])];
      for (int unsigned p = 0; p < Parts; p++)
        if (ve_wr_mask_i[1][p])
          row1[p] = merge(row1[p], ve_wr_addr_i[1][4:0], ve_wr_bytes_i[1], ve_wr_data_i[1][p]);
      mem_q[line_of(ve_wr_addr_i[1])] <= row1;
    end
    for (int unsigned g = 0; g < DmaPorts; g++)
      if (en_dma_i && dma_wr_valid_i[g] && flat_in_range(dma_wr_addr_i[g]))
        mem_q[flat_line(dma_wr_addr_i[g])][flat_part(dma_wr_addr_i[g])] <= dma_wr_data_i[g];
    if (dbg_wr_valid_i && flat_in_range(dbg_addr_i))
      mem_q[flat_line(dbg_addr_i)][flat_part(dbg_addr_i)] <= dbg_wr_data_i;
  end

  // ---- range errors (the engines check their own ranges; this catches the rest) -----------
  logic range_err_q, dma_out_of_range;
  always_comb begin
    dma_out_of_range = 1'b0;
    for (int unsigned g = 0; g < DmaPorts; g++)
      dma_out_of_range |= en_dma_i && ((dma_wr_valid_i[g] && !flat_in_range(dma_wr_addr_i[g])) ||
                                       (dma_rd_valid_i[g] && !flat_in_range(dma_rd_addr_i[g])));
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) range_err_q <= 1'b0;
    else if (dma_out_of_range ||
             (ve_wr[0] && !elem_in_range(ve_wr_addr_i[0], ve_wr_bytes_i[0])) ||
             (ve_wr[1] && !elem_in_range(ve_wr_addr_i[1], ve_wr_bytes_i[1])))
      range_err_q <= 1'b1;
  end
  assign range_err_o = range_err_q;
endmodule
