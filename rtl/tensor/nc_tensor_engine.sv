// The tensor engine: instruction queue, LoadStationary and MultiplyMoving sequencers, SBUF
// read ports, the systolic array, PSUM, error status and counters. See README.md beside
// this file for the theory of operation.
`include "nc_assert.svh"

module nc_tensor_engine
  import nc_pkg::*;
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;
  import nc_tensor_pkg::*;
#(
  parameter int unsigned Rows = 128,          // PE rows: largest K
  parameter int unsigned Cols = 128,          // PE columns: largest M, PSUM partitions
  parameter int unsigned Banks = 8,           // PSUM banks
  parameter int unsigned BankElems = 512,     // FP32 words per bank per partition: largest N
  parameter int unsigned SbufBytes = 229376,  // bytes per SBUF partition (224 KiB)
  parameter int unsigned CmdDepth = 4,        // instruction queue entries
  parameter int unsigned MinMmCycles = 64,    // an MM occupies the stream at least this long
  parameter int unsigned Fp32Passes = 4,      // cycles per moving vector when FP32 is involved
  // 1: the PE array is outside the engine (arr_* ports), for a simulator that steps it as column
  // slices on threads (tb/tensor/array_slices.h; README "Column slices"). 0: inside, as built.
  parameter int unsigned ExternalArray = 0
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // Instructions (valid/ready).
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  isa_te_instr_t             cmd_data_i,
  // Fast LoadStationary (issue 49; model::TensorCosts::ls_columns_per_cycle): weight columns
  // an LS loads a cycle, 1, 2 or LsCols (anything else loads 1).
  input  logic [2:0]            ls_columns_i,
  // Power throttling (issue 49; model::ThrottleConfig, the golden core's
  // TensorEngineTiming::throttle_share): an MM streams at a share of the full rate, fixed when
  // it starts: start_i (Q0.32) at the ramp's start, step_i (Q0.32) more each cycle after, up to
  // 1. The ramp starts at the first MM, and again at an MM that starts window_i cycles or more
  // after the ramp did when the MMs streamed fewer than low_i cycles in the last window_i.
  input  logic                  throttle_en_i,
  input  logic [31:0]           throttle_start_i,
  input  logic [31:0]           throttle_step_i,
  input  logic [15:0]           throttle_window_i,   // 1 .. ThrottleWindow
  input  logic [16:0]           throttle_low_i,
  // SBUF read port for the stationary: per accepted request, `cols` columns col_step apart, of
  // each `reps` elements per partition (replica r at addr + r * rep_step) and the uint16 at
  // tag_addr (the tags of four columns), returned the next cycle: column 0 in st_rsp_data_i,
  // column c > 0 in st_rsp_more_i[c - 1].
  output logic                  st_req_valid_o,
  input  logic                  st_req_ready_i,
  output logic [SbufAddrW-1:0]  st_req_addr_o,
  output logic [2:0]            st_req_bytes_o,
  output logic [2:0]            st_req_reps_o,
  output logic [SbufAddrW-1:0]  st_req_rep_step_o,
  output logic [2:0]            st_req_cols_o,
  output logic [SbufAddrW-1:0]  st_req_col_step_o,
  output logic [SbufAddrW-1:0]  st_req_tag_addr_o,
  input  logic                  st_rsp_valid_i,
  input  logic [31:0]           st_rsp_data_i [MaxReps][Rows],
  input  logic [31:0]           st_rsp_more_i [LsCols-1][MaxReps][Rows],
  input  logic [15:0]           st_rsp_tag_i [Rows],
  // SBUF read port for the moving tile (replicas as above).
  // Each of the Segs row segments (Rows / Segs partitions) has its own address, so the MMs of
  // up to Segs row tiles read in one access.
  output logic                  mv_req_valid_o,
  input  logic                  mv_req_ready_i,
  output logic [Segs-1:0]       mv_req_segs_o,
  output logic [SbufAddrW-1:0]  mv_req_addr_o [Segs],
  output logic [2:0]            mv_req_bytes_o [Segs],
  output logic [2:0]            mv_req_reps_o,
  output logic [SbufAddrW-1:0]  mv_req_rep_step_o [Segs],
  input  logic                  mv_rsp_valid_i,
  input  logic [31:0]           mv_rsp_data_i [MaxReps][Rows],
  // PSUM read port (all partitions of one bank element), data the next cycle.
  input  logic                  psum_rd_valid_i,
  output logic                  psum_rd_ready_o,
  input  logic [$clog2(Banks)-1:0]     psum_rd_bank_i,
  input  logic [$clog2(BankElems)-1:0] psum_rd_elem_i,
  output logic                  psum_rd_rsp_valid_o,
  output logic [31:0]           psum_rd_rsp_data_o [Cols],
  // PSUM write port for other engines: bytes `byte_en` of one word in the partitions of
  // `part_mask`; held off (ready low) while the bank has array writes in flight.
  input  logic                  psum_ext_wr_valid_i,
  output logic                  psum_ext_wr_ready_o,
  input  logic [$clog2(Banks)-1:0]     psum_ext_wr_bank_i,
  input  logic [$clog2(BankElems)-1:0] psum_ext_wr_elem_i,
  input  logic [3:0]            psum_ext_wr_byte_en_i,
  input  logic [Cols-1:0]       psum_ext_wr_part_mask_i,
  input  logic [31:0]           psum_ext_wr_data_i [Cols],
  // Every PSUM write as it happens, for checkers and waves.
  output logic                  psum_wr_valid_o [Cols],
  output logic [$clog2(Banks)-1:0]     psum_wr_bank_o [Cols],
  output logic [$clog2(BankElems)-1:0] psum_wr_elem_o [Cols],
  output logic [1:0]            psum_wr_half_o [Cols],   // 0 word, 1 low half, 2 high half
  output logic [31:0]           psum_wr_data_o [Cols],   // the whole word after the write
  output logic [7:0]            psum_wr_tag_o [Cols],
  // Completions, for checkers (the NeuronCore's commit port): an MM completes in the cycle its
  // last moving vector leaves the array (all its PSUM writes done), one pulse per MM, MMs on
  // disjoint column tiles in the same cycle on their lowest column segment's index; an LS
  // completes with its last weight column.
  output logic                  mm_done_valid_o [Segs],
  output logic [7:0]            mm_done_tag_o [Segs],
  output logic                  ls_done_valid_o,
  output logic [7:0]            ls_done_tag_o,
  // A rejected instruction: one pulse per rejection. err_o stays set from the first.
  output logic                  rej_valid_o,
  output isa_te_error_e             rej_code_o,
  output logic [7:0]            rej_tag_o,
  output logic                  err_o,
  output isa_te_error_e             err_code_o,
  output logic                  idle_o,
  // Counters since reset.
  output logic [63:0]           cnt_busy_o,            // cycles the array streams real work
  output logic [63:0]           cnt_macs_o,
  output logic [63:0]           cnt_stall_sbuf_mv_o,   // MM wanted moving data, port not ready
  output logic [63:0]           cnt_stall_sbuf_st_o,   // LS wanted stationary data, not ready
  output logic [63:0]           cnt_stall_mm_wait_ls_o,   // next MM waits: its LS, a busy tile
  output logic [63:0]           cnt_stall_ls_wait_bank_o, // LS waits for its weight bank
  output logic [63:0]           cnt_stall_psum_rd_o,   // PSUM read held off: bank conflict
  output logic [63:0]           cnt_mm_o,
  output logic [63:0]           cnt_ls_o,
  output logic [63:0]           cnt_rejected_o,
  // With ExternalArray: the array's inputs, as the engine would give them to its own
  // nc_systolic_array, and the bottom of its columns (read the cycle after, as from its
  // registers). Unused otherwise (tie arr_out_sum_i to zero).
  output logic [LsCols-1:0]     arr_w_we_o,
  output logic                  arr_w_row_en_o [Rows],
  output logic                  arr_w_bank_o,
  output logic [$clog2(Cols)-1:0] arr_w_col_o [LsCols],
  output fp_unpacked_t          arr_w_col_data_o [LsCols][Rows],
  output fp_unpacked_t          arr_w_col_data1_o [LsCols][Rows],
  output logic [31:0]           arr_w_col_aux_o [LsCols][Rows],
  output te_row_meta_t          arr_in_row_o [Segs],
  output te_pe_op_e             arr_in_op_o,
  output isa_te_sparsity_e      arr_in_sparsity_o,
  output fp_unpacked_t          arr_in_data_o [MaxReps][Rows],
  input  logic [31:0]           arr_out_sum_i [Cols]
);
  localparam int unsigned ColW = $clog2(Cols);
  localparam int unsigned BankW = $clog2(Banks);
  localparam int unsigned ElemW = $clog2(BankElems);
  localparam int unsigned RingDepth = Rows + Cols;  // meta read Rows..Rows+Cols-1 cycles late
  localparam int unsigned RingW = $clog2(RingDepth);
  localparam int unsigned DrainCycles = Rows + Cols + 3;  // request to last PE use, + margin
  localparam fp_unpacked_t FpZero = '{is_zero: 1'b1, default: '0};
  localparam int unsigned Slots = Segs;  // MMs streaming at once: one per row tile at most
  localparam int unsigned IdW = 16;      // LS sequence numbers (segments holding one LS)

  // ---------------------------------------------------------------------------------------
  // Instruction queue and in-order dispatch
  // ---------------------------------------------------------------------------------------
  logic      head_valid, head_pop;
  isa_te_instr_t head;

  nc_fifo #(.T(isa_te_instr_t), .Depth(CmdDepth)) u_cmd_fifo (
    .clk_i, .rst_ni,
    .in_valid_i(cmd_valid_i), .in_ready_o(cmd_ready_o), .in_data_i(cmd_data_i),
    .out_valid_o(head_valid), .out_ready_i(head_pop), .out_data_o(head)
  );

  // ---------------------------------------------------------------------------------------
  // Tiles and the stationary each segment holds (program order, updated at dispatch)
  // ---------------------------------------------------------------------------------------
  typedef struct packed {
    logic           valid;
    logic [IdW-1:0] id;          // which LS wrote it: a tile's segments must agree
    logic [8:0]     k, m;
    logic [3:0]     dtype;
    logic           double_row, transpose;
    isa_te_sparsity_e   sparsity;
    te_tiling_t     tiling;
    logic           wsel;        // weight bank holding it
  } seg_desc_t;
  seg_desc_t      seg_q [Segs][Segs];   // [row segment][column segment]
  seg_desc_t      seg_d [Segs][Segs];
  logic [IdW-1:0] ls_id_q;

  function automatic logic tiling_fits(logic [1:0] split, logic [1:0] tile, int unsigned side);
    return split <= 2'd2 && 32'(tile) < (32'd1 << split) && (split == 2'd0 || side % 4 == 0);
  endfunction

  // The segments of tile `tile` when a side is split in 2^split.
  function automatic logic [Segs-1:0] seg_mask(logic [1:0] split, logic [1:0] tile);
    logic [Segs-1:0] mask;
    int unsigned     per;
    per = Segs >> ((split > 2'd2) ? 2'd2 : split);
    for (int unsigned s = 0; s < Segs; s++) mask[s] = (s / per) == 32'(tile);
    return mask;
  endfunction

  function automatic int unsigned first_seg(logic [1:0] split, logic [1:0] tile);
    return 32'(tile) * (Segs >> ((split > 2'd2) ? 2'd2 : split));
  endfunction

  // Elements per partition an access of this instruction reads: 2 for double-row, G / 4 for
  // a sparse MM's moving tile (a sparse stationary is the compressed tile), else 1.
  function automatic logic [2:0] replicas(isa_te_instr_t i);
    if (i.double_row) return 3'd2;
    return (i.opcode == IsaMultiplyMoving) ? 3'd1 + 3'(i.sparsity) : 3'd1;
  endfunction

  function automatic logic is_fp8(logic [3:0] t);
    return t == 4'(DTypeE4m3) || t == 4'(DTypeE5m2);
  endfunction

  // The same checks, in the same order, as model/tensor/tensor_engine.cpp TensorEngine::check.
  // st: the stationary in the first segment of the instruction's tile; uniform: every
  // segment of the tile holds that same LS.
  function automatic isa_te_error_e check(isa_te_instr_t i, seg_desc_t st, logic uniform);
    logic        is_ls, sparse;
    logic [31:0] bytes, count, last_byte, elements, tag_end, tile_rows, tile_cols;
    is_ls = i.opcode == IsaLoadStationary;
    sparse = i.sparsity != TeSparsityDense;
    bytes = 32'(dtype_bytes(isa_d_type_e'(i.dtype)));
    count = (is_ls ? 32'(i.m) : 32'(i.n)) * 32'(replicas(i));
    last_byte = 32'(i.sbuf_addr) + (count - 1) * 32'(i.sbuf_stride) + bytes;
    tag_end = 32'(i.tag_addr) + 2 * ((32'(i.m) + 3) / 4);
    tile_rows = Rows >> i.row_split;
    tile_cols = Cols >> i.col_split;
    // A transpose of a 16- or 8-bit stationary writes 16-bit elements: twice as many per bank.
    elements = (i.transpose && dtype_bytes(isa_d_type_e'(st.dtype)) != 3'd4) ? 2 * BankElems
                                                                       : BankElems;
    if (!is_ls && i.opcode != IsaMultiplyMoving) return TeErrorOpcode;
    if (!is_float_dtype(i.dtype)) return TeErrorDtype;
    if ((i.double_row && (i.transpose || sparse || i.col_split != 2'd0)) ||
        (i.transpose && sparse) || (!is_ls && i.transpose && i.accumulate))
      return TeErrorModeCombo;
    if (i.double_row && !is_fp8(i.dtype)) return TeErrorModeType;
    if (!tiling_fits(i.row_split, i.row_tile, Rows) ||
        !tiling_fits(i.col_split, i.col_tile, Cols) ||
        (sparse && i.row_split != 2'd0 && tile_rows % 4 != 0))
      return TeErrorTile;
    if (i.k == '0 || 32'(i.k) > tile_rows || (sparse && i.k[1:0] != 2'b00)) return TeErrorK;
    if (is_ls) begin
      if (i.m == '0 || 32'(i.m) > tile_cols) return TeErrorM;
    end else begin
      if (i.n == '0 || 32'(i.n) > BankElems) return TeErrorN;
      if (32'(i.psum_bank) >= Banks) return TeErrorPsumBank;
      if (!st.valid) return TeErrorNoStationary;
      if (i.k != st.k) return TeErrorKMismatch;
      if (i.double_row != st.double_row || i.transpose != st.transpose ||
          i.sparsity != st.sparsity || te_tiling(i) != st.tiling || !uniform)
        return TeErrorModeMismatch;
      if (32'(i.psum_offset) + 32'(i.n) > elements) return TeErrorPsumRange;
    end
    if ((32'(i.sbuf_addr) % bytes) != 0 || (32'(i.sbuf_stride) % bytes) != 0)
      return TeErrorSbufAlign;
    if (is_ls && sparse && i.tag_addr[0]) return TeErrorSbufAlign;
    if (last_byte > SbufBytes) return TeErrorSbufRange;
    if (is_ls && sparse && tag_end > SbufBytes) return TeErrorSbufRange;
    return TeErrorNone;
  endfunction

  // The head instruction's tile and the stationary it finds there.
  logic [Segs-1:0] head_rows, head_cols;
  seg_desc_t       head_st;
  logic            head_uniform;
  always_comb begin
    head_rows = seg_mask(head.row_split, head.row_tile);
    head_cols = seg_mask(head.col_split, head.col_tile);
    head_st = seg_q[first_seg(head.row_split, head.row_tile)]
                   [first_seg(head.col_split, head.col_tile)];
    head_uniform = 1'b1;
    for (int unsigned r = 0; r < Segs; r++)
      for (int unsigned c = 0; c < Segs; c++)
        if (head_rows[r] && head_cols[c] && (!seg_q[r][c].valid || seg_q[r][c].id != head_st.id))
          head_uniform = 1'b0;
  end

  isa_te_error_e head_err;
  logic      head_is_ls, head_is_mm, dispatch_ls, dispatch_mm, reject;
  logic      psum_init_busy;
  logic      ls_target_bank, ls_bank_free;

  // LoadStationary unit state.
  logic                 ls_busy_q;
  logic                 ls_bank_q;
  logic [3:0]           ls_dtype_q;
  logic [8:0]           ls_k_q, ls_m_q, ls_req_cnt_q, ls_rsp_cnt_q;
  logic [2:0]           ls_lanes_q;       // columns a request (fast LoadStationary)
  logic [SbufAddrW-1:0] ls_addr_q;
  logic [15:0]          ls_stride_q;
  logic [2:0]           ls_reps_q;
  logic [SbufAddrW-1:0] ls_rep_step_q;
  logic [SbufAddrW-1:0] ls_tag_addr_q;
  logic [7:0]           ls_tag_q;         // the instruction's tag, for its completion
  logic                 ls_transpose_q;
  logic                 ls_sparse_q;
  logic [Segs-1:0]      ls_rows_q, ls_cols_q;   // its tile
  logic [8:0]           ls_row0_q;              // first PE row (and partition) of the tile
  logic [8:0]           ls_row_end_q;           // first row past the tile
  logic [8:0]           ls_col0_q;              // first PE column of the tile

  // MultiplyMoving: a waiting slot (next) and up to Slots streaming ones on disjoint tiles.
  typedef struct packed {
    logic                 valid;
    logic                 wsel;
    logic [3:0]           dtype;
    logic [8:0]           k;
    logic [8:0]           row_end;      // first row past its K rows (row0 + K)
    logic [8:0]           m_limit;      // first PE column past its outputs (col0 + M)
    logic [31:0]          macs;         // dense-equivalent MACs per vector
    logic [Segs-1:0]      rows, cols;   // its tile
    logic [9:0]           n;
    logic [SbufAddrW-1:0] addr;
    logic [15:0]          stride;
    logic [BankW-1:0]     bank;
    logic [9:0]           offset;       // in 16-bit elements for a narrow transpose
    logic                 accumulate;
    logic [7:0]           tag;
    logic [2:0]           passes;
    logic [2:0]           reps;
    logic [SbufAddrW-1:0] rep_step;
    logic                 narrow;
    te_pe_op_e            pe_op;
    isa_te_sparsity_e         sparsity;
  } mm_slot_t;
  mm_slot_t    mm_next_q;
  mm_slot_t    mm_act_q [Slots];
  logic [9:0]  mm_req_cnt_q [Slots];   // moving vectors requested so far
  logic [15:0] mm_cycle_q [Slots];     // cycles since the slot's MM started

  assign head_err = check(head, head_st, head_uniform);
  assign head_is_ls = head_valid && head_err == TeErrorNone && head.opcode == IsaLoadStationary;
  assign head_is_mm = head_valid && head_err == TeErrorNone && head.opcode == IsaMultiplyMoving;
  assign reject = head_valid && head_err != TeErrorNone;
  assign dispatch_ls = head_is_ls && !ls_busy_q && ls_bank_free;
  assign dispatch_mm = head_is_mm && !mm_next_q.valid && !psum_init_busy;
  assign head_pop = reject || dispatch_ls || dispatch_mm;

  // An LS loads the weight bank its tile's first segment does not use. That bank must be free
  // in every segment of the tile: no MM of an overlapping tile holds it and its last vector
  // there has drained.
  logic [$clog2(DrainCycles+1)-1:0] drain_q [2][Segs][Segs];
  logic [$clog2(DrainCycles+1)-1:0] drain_d [2][Segs][Segs];
  assign ls_target_bank = head_st.valid ? !head_st.wsel : 1'b0;
  always_comb begin
    ls_bank_free = 1'b1;
    for (int unsigned j = 0; j < Slots; j++)
      if (mm_act_q[j].valid && mm_act_q[j].wsel == ls_target_bank &&
          (mm_act_q[j].rows & head_rows) != '0 && (mm_act_q[j].cols & head_cols) != '0)
        ls_bank_free = 1'b0;
    if (mm_next_q.valid && mm_next_q.wsel == ls_target_bank &&
        (mm_next_q.rows & head_rows) != '0 && (mm_next_q.cols & head_cols) != '0)
      ls_bank_free = 1'b0;
    for (int unsigned r = 0; r < Segs; r++)
      for (int unsigned c = 0; c < Segs; c++)
        if (head_rows[r] && head_cols[c] && drain_q[ls_target_bank][r][c] != '0)
          ls_bank_free = 1'b0;
  end

  // Segment state after this cycle's LS dispatch.
  always_comb begin
    seg_d = seg_q;
    if (dispatch_ls) begin
      for (int unsigned r = 0; r < Segs; r++) begin
        for (int unsigned c = 0; c < Segs; c++) begin
          if (head_rows[r] && head_cols[c]) begin
            seg_d[r][c] = '{valid: 1'b1, id: ls_id_q, k: head.k, m: head.m, dtype: head.dtype,
                            double_row: head.double_row, transpose: head.transpose,
                            sparsity: head.sparsity, tiling: te_tiling(head), wsel: ls_target_bank};
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      seg_q <= '{default: '{default: '0}};
      ls_id_q <= '0;
    end else begin
      seg_q <= seg_d;
      if (dispatch_ls) ls_id_q <= ls_id_q + 1'b1;
    end
  end

  // ---------------------------------------------------------------------------------------
  // LoadStationary: ceil(M / cols) requests, up to cols (ls_columns_i) columns of the chosen
  // weight bank per response, written into the rows of its tile.
  // ---------------------------------------------------------------------------------------
  logic                        st_fire, st_fire_q;
  logic [LsCols-1:0]           w_we;
  logic [ColW-1:0]             w_col [LsCols];
  logic                        w_row_en [Rows];
  fp_unpacked_t                w_col_data [LsCols][Rows];
  fp_unpacked_t                w_col_data1 [LsCols][Rows];
  logic [31:0]                 w_col_aux [LsCols][Rows];
  logic [31:0]                 st_bytes_mask;
  logic [2:0]                  rsp_cols;     // columns in this cycle's response

  // The columns of the next request and of the next response: cols, or what is left of M.
  function automatic logic [2:0] cols_from(logic [8:0] done, logic [8:0] m, logic [2:0] cols);
    return (m - done) < 9'(cols) ? 3'(m - done) : cols;
  endfunction
  assign st_req_valid_o = ls_busy_q && ls_req_cnt_q < ls_m_q;
  assign st_req_addr_o = ls_addr_q;
  assign st_req_bytes_o = dtype_bytes(isa_d_type_e'(ls_dtype_q));
  assign st_req_reps_o = ls_reps_q;
  assign st_req_rep_step_o = ls_rep_step_q;
  assign st_req_cols_o = cols_from(ls_req_cnt_q, ls_m_q, ls_lanes_q);
  assign st_req_col_step_o = SbufAddrW'(ls_stride_q);
  assign st_req_tag_addr_o = ls_tag_addr_q;
  assign st_fire = st_req_valid_o && st_req_ready_i;
  assign rsp_cols = cols_from(ls_rsp_cnt_q, ls_m_q, ls_lanes_q);
  for (genvar l = 0; l < LsCols; l++) begin : g_w_lane
    assign w_we[l] = st_rsp_valid_i && 3'(l) < rsp_cols;
    assign w_col[l] = ColW'(32'(ls_col0_q) + 32'(ls_rsp_cnt_q) + l);
  end
  assign st_bytes_mask = (st_req_bytes_o == 3'd4) ? 32'hFFFF_FFFF
                       : (st_req_bytes_o == 3'd2) ? 32'h0000_FFFF : 32'h0000_00FF;

  // Decoded only when a column arrives (these feed only the weight write), so a simulator
  // does not decode a column on every evaluation of the inputs.
  always_comb begin
    for (int unsigned k = 0; k < Rows; k++)
      w_row_en[k] = k >= 32'(ls_row0_q) && k < 32'(ls_row_end_q);
    for (int unsigned l = 0; l < LsCols; l++) begin
      for (int unsigned k = 0; k < Rows; k++) begin
        // Row k reads partition k. Rows of the tile at or past K hold +0: they add nothing.
        automatic logic live = w_we[l] && k >= 32'(ls_row0_q) && k < 32'(ls_row0_q) + 32'(ls_k_q);
        automatic logic [31:0] e0 = l == 0 ? st_rsp_data_i[0][k] : st_rsp_more_i[l - 1][0][k];
        automatic logic [31:0] e1 = l == 0 ? st_rsp_data_i[1][k] : st_rsp_more_i[l - 1][1][k];
        automatic logic [1:0]  col = 2'(32'(ls_rsp_cnt_q) + l);  // its tag's place in the uint16
        w_col_data[l][k] = FpZero;
        w_col_data1[l][k] = FpZero;
        w_col_aux[l][k] = 32'd0;
        if (live) begin
          w_col_data[l][k] = unpack_fp32(decode_to_fp32(ls_dtype_q, e0));
          if (ls_reps_q == 3'd2) w_col_data1[l][k] = unpack_fp32(decode_to_fp32(ls_dtype_q, e1));
          // Transpose keeps the element's bits; sparse keeps the column's tag.
          if (ls_transpose_q) w_col_aux[l][k] = e0 & st_bytes_mask;
          else if (ls_sparse_q) w_col_aux[l][k] = 32'(st_rsp_tag_i[k][{col, 2'b00} +: 4]);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ls_busy_q <= 1'b0;
      ls_bank_q <= 1'b0;
      ls_dtype_q <= '0;
      ls_k_q <= '0;
      ls_m_q <= '0;
      ls_req_cnt_q <= '0;
      ls_rsp_cnt_q <= '0;
      ls_lanes_q <= 3'd1;
      ls_addr_q <= '0;
      ls_stride_q <= '0;
      ls_reps_q <= 3'd1;
      ls_rep_step_q <= '0;
      ls_tag_addr_q <= '0;
      ls_tag_q <= '0;
      ls_transpose_q <= 1'b0;
      ls_sparse_q <= 1'b0;
      ls_rows_q <= '0;
      ls_cols_q <= '0;
      ls_row0_q <= '0;
      ls_row_end_q <= '0;
      ls_col0_q <= '0;
      st_fire_q <= 1'b0;
    end else begin
      st_fire_q <= st_fire;
      if (dispatch_ls) begin
        ls_busy_q <= 1'b1;
        ls_bank_q <= ls_target_bank;
        ls_dtype_q <= head.dtype;
        ls_k_q <= head.k;
        ls_m_q <= head.m;
        ls_req_cnt_q <= '0;
        ls_rsp_cnt_q <= '0;
        ls_lanes_q <= ls_columns_i == 3'd2 || ls_columns_i == 3'(LsCols) ? ls_columns_i : 3'd1;
        ls_addr_q <= head.sbuf_addr;
        ls_stride_q <= head.sbuf_stride;
        ls_reps_q <= replicas(head);
        ls_rep_step_q <= SbufAddrW'(32'(head.m) * 32'(head.sbuf_stride));
        ls_tag_addr_q <= head.tag_addr;
        ls_tag_q <= head.tag;
        ls_transpose_q <= head.transpose;
        ls_sparse_q <= head.sparsity != TeSparsityDense;
        ls_rows_q <= head_rows;
        ls_cols_q <= head_cols;
        ls_row0_q <= 9'(32'(head.row_tile) * (Rows >> head.row_split));
        ls_row_end_q <= 9'((32'(head.row_tile) + 1) * (Rows >> head.row_split));
        ls_col0_q <= 9'(32'(head.col_tile) * (Cols >> head.col_split));
      end else begin
        if (st_fire) begin
          ls_req_cnt_q <= ls_req_cnt_q + 9'(st_req_cols_o);
          ls_addr_q <= ls_addr_q + SbufAddrW'(st_req_cols_o) * SbufAddrW'(ls_stride_q);
          // Four tags per uint16: the next word after every fourth column (a request's columns
          // never straddle two: 1, 2 or 4 of them from a multiple of as many).
          if ((ls_req_cnt_q + 9'(st_req_cols_o)) >> 2 != ls_req_cnt_q >> 2)
            ls_tag_addr_q <= ls_tag_addr_q + SbufAddrW'(2);
        end
        if (st_rsp_valid_i) begin
          ls_rsp_cnt_q <= ls_rsp_cnt_q + 9'(rsp_cols);
          if (ls_rsp_cnt_q + 9'(rsp_cols) == ls_m_q) ls_busy_q <= 1'b0;
        end
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // MultiplyMoving: each streaming slot paces its own moving vectors; one SBUF access a cycle
  // carries the vectors of every slot due, each in its own row segments.
  // ---------------------------------------------------------------------------------------
  // Cycles per moving vector. FP32 arithmetic takes Fp32Passes; an FP32 transpose moves each
  // 32-bit element as two halves (2 cycles, twice as fast as an identity matmul); the rest 1.
  function automatic logic [2:0] mm_passes(isa_te_instr_t i, logic [3:0] st_dtype);
    logic fp32;
    fp32 = i.dtype == 4'(DTypeFp32) || st_dtype == 4'(DTypeFp32);
    if (i.transpose) return (st_dtype == 4'(DTypeFp32)) ? 3'd2 : 3'd1;
    if (i.double_row) return 3'd1;
    return fp32 ? 3'(Fp32Passes) : 3'd1;
  endfunction

  // Dense-equivalent MACs per PE row: two K rows for double-row, G / 4 for sparse, none for a
  // transpose (it moves bits, it does not multiply).
  function automatic logic [31:0] mm_macs(isa_te_instr_t i, seg_desc_t st);
    logic [31:0] per_row;
    per_row = i.double_row ? 32'd2 : i.transpose ? 32'd0 : 32'd1 + 32'(i.sparsity);
    return 32'(i.k) * 32'(st.m) * per_row;
  endfunction

  logic [Slots-1:0] wants, members, members_q, fire, finishing, busy_slot, streaming;
  logic             hold_q, mv_fire, can_promote;
  logic [$clog2(Slots)-1:0] promote_slot;
  logic [32:0]      mm_share_q [Slots], mm_share_d [Slots], share_now;  // Q1.32: 1 is full rate

  // Throttled, an MM of N vectors of P cycles streams ceil(N P / share) cycles and its last
  // vector goes out P cycles before the end: vector i once (cycle + P) x share >= (i + 1) P.
  // At full rate that is cycle >= i P. Products stay exact (no division).
  function automatic logic at_least(logic [15:0] cycles, logic [32:0] share, logic [15:0] units);
    return 64'(cycles) * 64'(share) >= {16'(0), units, 32'(0)};
  endfunction
  always_comb begin
    for (int unsigned j = 0; j < Slots; j++) begin
      automatic logic [15:0] p = 16'(mm_act_q[j].passes);
      wants[j] = mm_act_q[j].valid && mm_req_cnt_q[j] < mm_act_q[j].n &&
                 at_least(mm_cycle_q[j] + p, mm_share_q[j], (16'(mm_req_cnt_q[j]) + 16'd1) * p);
      streaming[j] = mm_act_q[j].valid &&
                     !at_least(mm_cycle_q[j], mm_share_q[j], 16'(mm_act_q[j].n) * p);
    end
  end

  // The throttle's state: tensor cycles, the ramp's start, and the MMs' streaming cycles over the
  // last window (one entry a cycle, ThrottleWindow at most; an entry not yet written reads 0).
  // ncore's choice: 6.8 us at trn2's 2.4 GHz, room for the published 3 us window at any
  // tensor clock up to 5.4 GHz (model::kRtlThrottleWindow refuses a longer one).
  localparam int unsigned ThrottleWindow = 16384;
  logic [31:0]      tcyc_q, ramp_from_q, mm_start;
  logic             ramp_started_q, ramp_restart;
  logic [2:0]       hist_q [ThrottleWindow];
  logic [$clog2(ThrottleWindow)-1:0] hist_ptr_q;
  logic [16:0]      used_q, used_window;
  logic [2:0]       streaming_now, hist_oldest;
  logic [31:0]      elapsed;     // cycles since the ramp began, at the MM's start
  logic [63:0]      share_wide;
  always_comb begin
    streaming_now = '0;
    for (int unsigned j = 0; j < Slots; j++) streaming_now += 3'(streaming[j]);
    hist_oldest = tcyc_q >= 32'(throttle_window_i) ? hist_q[hist_ptr_q] : '0;
    // Streaming cycles in the window that ends with this cycle (an MM promoted now starts next).
    used_window = used_q - 17'(hist_oldest) + 17'(streaming_now);
    mm_start = tcyc_q + 1'b1;
    ramp_restart = !ramp_started_q ||
                   (mm_start - ramp_from_q >= 32'(throttle_window_i) && used_window < throttle_low_i);
    elapsed = ramp_restart ? 32'd0 : mm_start - ramp_from_q;
    share_wide = 64'(throttle_start_i) + 64'(elapsed) * 64'(throttle_step_i);
    share_now = !throttle_en_i || share_wide >= 64'h1_0000_0000 ? 33'h1_0000_0000 : 33'(share_wide);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      tcyc_q <= '0;
      ramp_from_q <= '0;
      ramp_started_q <= 1'b0;
      hist_ptr_q <= '0;
      used_q <= '0;
    end else begin
      tcyc_q <= tcyc_q + 1'b1;
      used_q <= used_window;
      hist_ptr_q <= 32'(hist_ptr_q) + 1 == 32'(throttle_window_i) ? '0 : hist_ptr_q + 1'b1;
      if (can_promote && throttle_en_i && ramp_restart) begin
        ramp_started_q <= 1'b1;
        ramp_from_q <= mm_start;
      end
    end
  end
  always_ff @(posedge clk_i) hist_q[hist_ptr_q] <= streaming_now;
  // A stalled request keeps its members (and so its payload) until accepted.
  assign members = hold_q ? members_q : wants;
  assign mv_req_valid_o = members != '0;
  assign mv_fire = mv_req_valid_o && mv_req_ready_i;
  assign fire = mv_fire ? members : '0;

  always_comb begin
    mv_req_segs_o = '0;
    mv_req_reps_o = 3'd1;
    for (int unsigned s = 0; s < Segs; s++) begin
      mv_req_addr_o[s] = '0;
      mv_req_bytes_o[s] = 3'd1;
      mv_req_rep_step_o[s] = '0;
    end
    for (int unsigned j = 0; j < Slots; j++) begin
      if (members[j]) begin
        mv_req_reps_o = mm_act_q[j].reps;
        for (int unsigned s = 0; s < Segs; s++) begin
          if (mm_act_q[j].rows[s]) begin
            mv_req_segs_o[s] = 1'b1;
            mv_req_addr_o[s] = mm_act_q[j].addr;
            mv_req_bytes_o[s] = dtype_bytes(isa_d_type_e'(mm_act_q[j].dtype));
            mv_req_rep_step_o[s] = mm_act_q[j].rep_step;
          end
        end
      end
    end
  end

  always_comb begin
    for (int unsigned j = 0; j < Slots; j++) begin
      // It holds its slot max(ceil(N P / share), MinMmCycles) cycles.
      finishing[j] = mm_act_q[j].valid && mm_req_cnt_q[j] + 10'(fire[j]) == mm_act_q[j].n &&
                     mm_cycle_q[j] + 1'b1 >= 16'(MinMmCycles) &&
                     at_least(mm_cycle_q[j] + 1'b1, mm_share_q[j],
                              16'(mm_act_q[j].n) * 16'(mm_act_q[j].passes));
      busy_slot[j] = mm_act_q[j].valid && !finishing[j];
    end
  end

  // The next MM starts when its tile shares no rows or columns with a streaming MM, all
  // streaming MMs run the same PE operation, and the LS of its weights has finished. It takes
  // a free slot, or one whose MM finishes this cycle (back-to-back MMs leave no gap).
  always_comb begin
    can_promote = mm_next_q.valid && !(ls_busy_q && ls_bank_q == mm_next_q.wsel &&
                                       (ls_rows_q & mm_next_q.rows) != '0 &&
                                       (ls_cols_q & mm_next_q.cols) != '0);
    promote_slot = '0;
    for (int j = Slots - 1; j >= 0; j--) if (!busy_slot[j]) promote_slot = ($clog2(Slots))'(j);
    if (busy_slot == '1) can_promote = 1'b0;
    for (int unsigned j = 0; j < Slots; j++) begin
      if (busy_slot[j] && ((mm_act_q[j].rows & mm_next_q.rows) != '0 ||
                           (mm_act_q[j].cols & mm_next_q.cols) != '0 ||
                           mm_act_q[j].pe_op != mm_next_q.pe_op ||
                           mm_act_q[j].sparsity != mm_next_q.sparsity))
        can_promote = 1'b0;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      hold_q <= 1'b0;
      members_q <= '0;
    end else begin
      hold_q <= mv_req_valid_o && !mv_req_ready_i;
      members_q <= members;
    end
  end

  // Slot state, next values (registered whole: arrays of structs take no per-element
  // non-blocking writes in loops).
  mm_slot_t    mm_act_d [Slots];
  logic [9:0]  mm_req_cnt_d [Slots];
  logic [15:0] mm_cycle_d [Slots];
  always_comb begin
    for (int unsigned j = 0; j < Slots; j++) begin
      mm_act_d[j] = mm_act_q[j];
      mm_req_cnt_d[j] = mm_req_cnt_q[j];
      mm_cycle_d[j] = mm_cycle_q[j];
      mm_share_d[j] = mm_share_q[j];
      if (can_promote && 32'(promote_slot) == j) begin
        mm_act_d[j] = mm_next_q;
        mm_share_d[j] = share_now;
        mm_req_cnt_d[j] = '0;
        mm_cycle_d[j] = '0;
      end else if (finishing[j] || !mm_act_q[j].valid) begin
        mm_act_d[j] = '0;
        mm_req_cnt_d[j] = '0;
        mm_cycle_d[j] = '0;
      end else begin
        mm_cycle_d[j] = mm_cycle_q[j] + 1'b1;
        if (fire[j]) begin
          mm_req_cnt_d[j] = mm_req_cnt_q[j] + 1'b1;
          mm_act_d[j].addr = mm_act_q[j].addr + SbufAddrW'(mm_act_q[j].stride);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      mm_next_q <= '0;
      mm_act_q <= '{default: '0};
      mm_req_cnt_q <= '{default: '0};
      mm_cycle_q <= '{default: '0};
      mm_share_q <= '{default: 33'h1_0000_0000};
    end else begin
      mm_share_q <= mm_share_d;
      mm_act_q <= mm_act_d;
      mm_req_cnt_q <= mm_req_cnt_d;
      mm_cycle_q <= mm_cycle_d;
      if (dispatch_mm) begin
        mm_next_q <= '{
          valid: 1'b1,
          wsel: head_st.wsel,
          dtype: head.dtype,
          k: head.k,
          row_end: 9'(32'(head.row_tile) * (Rows >> head.row_split) + 32'(head.k)),
          m_limit: 9'(32'(head.col_tile) * (Cols >> head.col_split) +
                      32'(head_st.m)),
          macs: mm_macs(head, head_st),
          rows: head_rows,
          cols: head_cols,
          n: head.n,
          addr: head.sbuf_addr,
          stride: head.sbuf_stride,
          bank: head.psum_bank[BankW-1:0],
          offset: head.psum_offset,
          accumulate: head.accumulate,
          tag: head.tag,
          passes: mm_passes(head, head_st.dtype),
          reps: replicas(head),
          rep_step: SbufAddrW'(32'(head.n) * 32'(head.sbuf_stride)),
          narrow: head.transpose && dtype_bytes(isa_d_type_e'(head_st.dtype)) != 3'd4,
          pe_op: head.double_row ? PeDoubleRow : head.transpose ? PeTranspose
               : head.sparsity != TeSparsityDense ? PeSparse : PeDense,
          sparsity: head.sparsity
        };
      end else if (can_promote) begin
        mm_next_q <= '0;
      end
    end
  end

  // What enters with the data of this cycle's access (the response arrives next cycle).
  te_row_meta_t enter_row_q [Segs];
  te_col_meta_t enter_col_q [Segs];
  logic [3:0]   enter_dtype_q [Segs];
  logic [8:0]   enter_row_end_q [Segs];
  logic         enter_valid_q;
  logic [2:0]   enter_reps_q;
  logic [2:0]   enter_passes_q;
  logic [31:0]  enter_macs_q;
  te_pe_op_e    enter_op_q;
  isa_te_sparsity_e enter_sparsity_q;

  te_row_meta_t enter_row_d [Segs];
  te_col_meta_t enter_col_d [Segs];
  logic [3:0]   enter_dtype_d [Segs];
  logic [8:0]   enter_row_end_d [Segs];
  logic [2:0]   enter_passes_d;
  logic [31:0]  enter_macs_d;
  te_pe_op_e    enter_op_d;
  isa_te_sparsity_e enter_sparsity_d;
  always_comb begin
    enter_passes_d = '0;
    enter_macs_d = '0;
    enter_op_d = PeDense;
    enter_sparsity_d = TeSparsityDense;
    for (int unsigned s = 0; s < Segs; s++) begin
      enter_row_d[s] = '0;
      enter_col_d[s] = '0;
      enter_dtype_d[s] = '0;
      enter_row_end_d[s] = '0;
    end
    for (int unsigned j = 0; j < Slots; j++) begin
      if (fire[j]) begin
        if (mm_act_q[j].passes > enter_passes_d) enter_passes_d = mm_act_q[j].passes;
        enter_macs_d = enter_macs_d + mm_act_q[j].macs;
        enter_op_d = mm_act_q[j].pe_op;
        enter_sparsity_d = mm_act_q[j].sparsity;
        for (int unsigned s = 0; s < Segs; s++) begin
          if (mm_act_q[j].rows[s]) begin
            enter_row_d[s] = '{valid: 1'b1, wsel: mm_act_q[j].wsel, cols: mm_act_q[j].cols};
            enter_dtype_d[s] = mm_act_q[j].dtype;
            enter_row_end_d[s] = mm_act_q[j].row_end;
          end
          if (mm_act_q[j].cols[s]) begin
            enter_col_d[s] = '{
              valid: 1'b1,
              psum_bank: 3'(mm_act_q[j].bank),
              psum_elem: mm_act_q[j].offset + mm_req_cnt_q[j],
              narrow: mm_act_q[j].narrow,
              accumulate: mm_act_q[j].accumulate,
              m_limit: mm_act_q[j].m_limit,
              tag: mm_act_q[j].tag,
              last: mm_req_cnt_q[j] + 1'b1 == mm_act_q[j].n,
              lead: (mm_act_q[j].cols & Segs'((1 << s) - 1)) == '0
            };
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      enter_row_q <= '{default: '0};
      enter_col_q <= '{default: '0};
      enter_dtype_q <= '{default: '0};
      enter_row_end_q <= '{default: '0};
      enter_valid_q <= 1'b0;
      enter_reps_q <= '0;
      enter_passes_q <= '0;
      enter_macs_q <= '0;
      enter_op_q <= PeDense;
      enter_sparsity_q <= TeSparsityDense;
    end else begin
      enter_row_q <= enter_row_d;
      enter_col_q <= enter_col_d;
      enter_dtype_q <= enter_dtype_d;
      enter_row_end_q <= enter_row_end_d;
      enter_valid_q <= mv_fire;
      enter_reps_q <= mv_req_reps_o;
      enter_passes_q <= enter_passes_d;
      enter_macs_q <= enter_macs_d;
      enter_op_q <= enter_op_d;
      enter_sparsity_q <= enter_sparsity_d;
    end
  end

  // The arriving vector is registered as it arrives (its bits, and how to decode them) and
  // decoded at the left edge of the array, rows past each MM's K as +0. Decoding after the
  // register rather than before it keeps the timing, and the array then depends on state only:
  // a simulator decodes once per cycle, only the elements that hold data, rather than on every
  // evaluation of the inputs.
  logic [31:0]  in_raw_q [MaxReps][Rows];
  logic [3:0]   in_dtype_q [Segs];
  logic [8:0]   in_row_end_q [Segs];
  logic [2:0]   in_reps_q;
  fp_unpacked_t in_data [MaxReps][Rows];
  te_row_meta_t in_row_q [Segs];
  te_col_meta_t in_col_q [Segs];
  logic         in_valid_q;
  logic [2:0]   in_passes_q;
  logic [31:0]  in_macs_q;
  te_pe_op_e    in_op_q;
  isa_te_sparsity_e in_sparsity_q;
  always_comb begin
    for (int unsigned r = 0; r < MaxReps; r++) begin
      for (int unsigned k = 0; k < Rows; k++) begin
        automatic logic [$clog2(Segs)-1:0] s = ($clog2(Segs))'(k * Segs / Rows);
        in_data[r][k] = FpZero;
        if (in_row_q[s].valid && k < 32'(in_row_end_q[s]) && r < 32'(in_reps_q))
          in_data[r][k] = unpack_fp32(decode_to_fp32(in_dtype_q[s], in_raw_q[r][k]));
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_row_q <= '{default: '0};
      in_col_q <= '{default: '0};
      in_dtype_q <= '{default: '0};
      in_row_end_q <= '{default: '0};
      in_reps_q <= '0;
      in_valid_q <= 1'b0;
      in_passes_q <= '0;
      in_macs_q <= '0;
      in_op_q <= PeDense;
      in_sparsity_q <= TeSparsityDense;
    end else begin
      in_row_q <= enter_row_q;
      in_col_q <= enter_col_q;
      in_dtype_q <= enter_dtype_q;
      in_row_end_q <= enter_row_end_q;
      in_reps_q <= enter_reps_q;
      in_valid_q <= enter_valid_q;
      in_passes_q <= enter_passes_q;
      in_macs_q <= enter_macs_q;
      in_op_q <= enter_op_q;
      in_sparsity_q <= enter_sparsity_q;
    end
  end

  always_ff @(posedge clk_i) begin
    in_raw_q <= mv_rsp_data_i;
  end

  // ---------------------------------------------------------------------------------------
  // Array, vector bookkeeping and PSUM
  // ---------------------------------------------------------------------------------------
  logic [31:0] out_sum [Cols];

  assign arr_w_we_o = w_we;
  assign arr_w_row_en_o = w_row_en;
  assign arr_w_bank_o = ls_bank_q;
  assign arr_w_col_o = w_col;
  assign arr_w_col_data_o = w_col_data;
  assign arr_w_col_data1_o = w_col_data1;
  assign arr_w_col_aux_o = w_col_aux;
  assign arr_in_row_o = in_row_q;
  assign arr_in_op_o = in_op_q;
  assign arr_in_sparsity_o = in_sparsity_q;
  assign arr_in_data_o = in_data;
  if (ExternalArray != 0) begin : g_external_array
    assign out_sum = arr_out_sum_i;
  end else begin : g_array
    nc_systolic_array #(.Rows(Rows), .Cols(Cols)) u_array (
      .clk_i, .rst_ni, .col_base_i('0), .col_count_i('0),
      .w_we_i(w_we), .w_row_en_i(w_row_en), .w_bank_i(ls_bank_q), .w_col_i(w_col),
      .w_col_data_i(w_col_data), .w_col_data1_i(w_col_data1), .w_col_aux_i(w_col_aux),
      .in_row_i(in_row_q), .in_op_i(in_op_q), .in_sparsity_i(in_sparsity_q),
      .in_data_i(in_data),
      .out_sum_o(out_sum)
    );
    logic unused_arr_out_sum;
    always_comb begin
      unused_arr_out_sum = 1'b0;
      for (int unsigned m = 0; m < Cols; m++) unused_arr_out_sum = unused_arr_out_sum ^ (|arr_out_sum_i[m]);
    end
  end

  // Meta ring: the meta of the vector at the bottom of column m entered Rows + m cycles ago;
  // column m takes its column segment's entry.
  te_col_meta_t     ring_q [RingDepth][Segs];
  logic [RingW-1:0] ring_ptr_q;
  te_col_meta_t     col_meta [Cols];
  te_col_meta_t     exit_meta [Segs];   // the vector leaving the last column

  function automatic logic [RingW-1:0] ring_lag(int unsigned lag, logic [RingW-1:0] ptr);
    return RingW'((int'(ptr) >= int'(lag)) ? int'(ptr) - lag : int'(ptr) + RingDepth - lag);
  endfunction

  always_comb begin
    for (int unsigned m = 0; m < Cols; m++)
      col_meta[m] = ring_q[ring_lag(Rows + m, ring_ptr_q)][m * Segs / Cols];
    exit_meta = ring_q[ring_lag(Rows + Cols - 1, ring_ptr_q)];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ring_ptr_q <= '0;
    else ring_ptr_q <= (ring_ptr_q == RingW'(RingDepth - 1)) ? '0 : ring_ptr_q + 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ring_q <= '{default: '{default: '0}};
    else ring_q[ring_ptr_q] <= in_col_q;
  end

  // PSUM writes from the bottom of each column.
  logic             wr_valid [Cols];
  logic [BankW-1:0] wr_bank [Cols];
  logic [ElemW-1:0] wr_elem [Cols];
  logic [1:0]       wr_half [Cols];
  logic             wr_acc [Cols];
  logic [31:0]      wr_result [Cols];

  always_comb begin
    for (int unsigned m = 0; m < Cols; m++) begin
      wr_valid[m] = col_meta[m].valid && m < 32'(col_meta[m].m_limit);
      wr_bank[m] = BankW'(col_meta[m].psum_bank);
      // A 16-bit element e is half e % 2 of word e / 2.
      wr_elem[m] = col_meta[m].narrow ? ElemW'(col_meta[m].psum_elem >> 1)
                                      : ElemW'(col_meta[m].psum_elem);
      wr_half[m] = !col_meta[m].narrow ? 2'd0 : col_meta[m].psum_elem[0] ? 2'd2 : 2'd1;
      wr_acc[m] = col_meta[m].accumulate;
    end
  end

  // Observation copy, in a block of its own: wr_result depends on the block above.
  always_comb begin
    for (int unsigned m = 0; m < Cols; m++) begin
      psum_wr_valid_o[m] = wr_valid[m];
      psum_wr_bank_o[m] = wr_bank[m];
      psum_wr_elem_o[m] = wr_elem[m];
      psum_wr_half_o[m] = wr_half[m];
      psum_wr_data_o[m] = wr_result[m];
      psum_wr_tag_o[m] = col_meta[m].tag;
    end
  end

  // Completions (the vector leaving the last column has written in every column).
  always_comb begin
    for (int unsigned c = 0; c < Segs; c++) begin
      mm_done_valid_o[c] = exit_meta[c].valid && exit_meta[c].last && exit_meta[c].lead;
      mm_done_tag_o[c] = exit_meta[c].tag;
    end
  end
  assign ls_done_valid_o = !dispatch_ls && ls_busy_q && st_rsp_valid_i &&
                           ls_rsp_cnt_q + 9'(rsp_cols) == ls_m_q;
  assign ls_done_tag_o = ls_tag_q;

  // Vectors in flight per PSUM bank (one count per column segment a vector writes): from the
  // request until it leaves the last column.
  logic [15:0]      pending_q [Banks];
  logic [15:0]      pending_d [Banks];
  logic [Banks-1:0] pending;
  logic             psum_rd_conflict;

  always_comb begin
    for (int unsigned b = 0; b < Banks; b++) pending[b] = pending_q[b] != '0;
  end

  // Next state of the per-bank and per-segment counters, registered whole.
  always_comb begin
    for (int unsigned b = 0; b < Banks; b++) begin
      pending_d[b] = pending_q[b];
      for (int unsigned j = 0; j < Slots; j++)
        for (int unsigned c = 0; c < Segs; c++)
          if (fire[j] && mm_act_q[j].cols[c] && 32'(mm_act_q[j].bank) == b)
            pending_d[b] = pending_d[b] + 1'b1;
      for (int unsigned c = 0; c < Segs; c++)
        if (exit_meta[c].valid && 32'(exit_meta[c].psum_bank) == b)
          pending_d[b] = pending_d[b] - 1'b1;
    end
    for (int unsigned b = 0; b < 2; b++) begin
      for (int unsigned r = 0; r < Segs; r++) begin
        for (int unsigned c = 0; c < Segs; c++) begin
          drain_d[b][r][c] = (drain_q[b][r][c] != '0) ? drain_q[b][r][c] - 1'b1 : '0;
          for (int unsigned j = 0; j < Slots; j++)
            if (fire[j] && 32'(mm_act_q[j].wsel) == b && mm_act_q[j].rows[r] &&
                mm_act_q[j].cols[c])
              drain_d[b][r][c] = ($bits(drain_q[b][r][c]))'(DrainCycles);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pending_q <= '{default: '0};
      drain_q <= '{default: '{default: '{default: '0}}};
    end else begin
      pending_q <= pending_d;
      drain_q <= drain_d;
    end
  end

  nc_psum #(.Parts(Cols), .Banks(Banks), .BankElems(BankElems)) u_psum (
    .clk_i, .rst_ni,
    .init_busy_o(psum_init_busy),
    .wr_valid_i(wr_valid), .wr_bank_i(wr_bank), .wr_elem_i(wr_elem), .wr_half_i(wr_half),
    .wr_accumulate_i(wr_acc), .wr_data_i(out_sum), .wr_result_o(wr_result),
    .pending_i(pending),
    .ext_wr_valid_i(psum_ext_wr_valid_i), .ext_wr_ready_o(psum_ext_wr_ready_o),
    .ext_wr_bank_i(psum_ext_wr_bank_i), .ext_wr_elem_i(psum_ext_wr_elem_i),
    .ext_wr_byte_en_i(psum_ext_wr_byte_en_i), .ext_wr_part_mask_i(psum_ext_wr_part_mask_i),
    .ext_wr_data_i(psum_ext_wr_data_i),
    .rd_valid_i(psum_rd_valid_i), .rd_ready_o(psum_rd_ready_o),
    .rd_bank_i(psum_rd_bank_i), .rd_elem_i(psum_rd_elem_i),
    .rd_rsp_valid_o(psum_rd_rsp_valid_o), .rd_rsp_data_o(psum_rd_rsp_data_o),
    .rd_conflict_o(psum_rd_conflict)
  );

  // ---------------------------------------------------------------------------------------
  // Status and counters
  // ---------------------------------------------------------------------------------------
  logic      err_q;
  isa_te_error_e err_code_q;
  logic [63:0] cnt_busy_q, cnt_macs_q, cnt_stall_mv_q, cnt_stall_st_q, cnt_stall_mm_ls_q,
               cnt_stall_ls_bank_q, cnt_stall_psum_q, cnt_mm_q, cnt_ls_q, cnt_rej_q;
  logic any_pending, any_active;

  assign rej_valid_o = reject;
  assign rej_code_o = head_err;
  assign rej_tag_o = head.tag;
  assign err_o = err_q;
  assign err_code_o = err_code_q;
  assign any_pending = pending != '0;
  always_comb begin
    any_active = 1'b0;
    for (int unsigned j = 0; j < Slots; j++) any_active = any_active | mm_act_q[j].valid;
  end
  assign idle_o = !head_valid && !ls_busy_q && !any_active && !mm_next_q.valid &&
                  !enter_valid_q && !in_valid_q && !any_pending && !psum_init_busy;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      err_q <= 1'b0;
      err_code_q <= TeErrorNone;
      cnt_busy_q <= '0;
      cnt_macs_q <= '0;
      cnt_stall_mv_q <= '0;
      cnt_stall_st_q <= '0;
      cnt_stall_mm_ls_q <= '0;
      cnt_stall_ls_bank_q <= '0;
      cnt_stall_psum_q <= '0;
      cnt_mm_q <= '0;
      cnt_ls_q <= '0;
      cnt_rej_q <= '0;
    end else begin
      if (reject && !err_q) begin
        err_q <= 1'b1;
        err_code_q <= head_err;
      end
      if (in_valid_q) begin
        cnt_busy_q <= cnt_busy_q + 64'(in_passes_q);
        cnt_macs_q <= cnt_macs_q + 64'(in_macs_q);
      end
      cnt_stall_mv_q <= cnt_stall_mv_q + 64'(mv_req_valid_o && !mv_req_ready_i);
      cnt_stall_st_q <= cnt_stall_st_q + 64'(st_req_valid_o && !st_req_ready_i);
      cnt_stall_mm_ls_q <= cnt_stall_mm_ls_q + 64'(mm_next_q.valid && !can_promote);
      cnt_stall_ls_bank_q <= cnt_stall_ls_bank_q + 64'(head_is_ls && !dispatch_ls);
      cnt_stall_psum_q <= cnt_stall_psum_q + 64'(psum_rd_conflict);
      cnt_mm_q <= cnt_mm_q + 64'(dispatch_mm);
      cnt_ls_q <= cnt_ls_q + 64'(dispatch_ls);
      cnt_rej_q <= cnt_rej_q + 64'(reject);
    end
  end

  assign cnt_busy_o = cnt_busy_q;
  assign cnt_macs_o = cnt_macs_q;
  assign cnt_stall_sbuf_mv_o = cnt_stall_mv_q;
  assign cnt_stall_sbuf_st_o = cnt_stall_st_q;
  assign cnt_stall_mm_wait_ls_o = cnt_stall_mm_ls_q;
  assign cnt_stall_ls_wait_bank_o = cnt_stall_ls_bank_q;
  assign cnt_stall_psum_rd_o = cnt_stall_psum_q;
  assign cnt_mm_o = cnt_mm_q;
  assign cnt_ls_o = cnt_ls_q;
  assign cnt_rejected_o = cnt_rej_q;

  // ---------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------
  logic ls_hits_streaming_bank, mm_reads_loading_bank, exit_outside_bank, streams_overlap;
  logic first_col_narrow_acc, exit_uncounted;
  logic [Segs*(SbufAddrW+1)-1:0] mv_req_payload;   // segments and addresses, flattened
  always_comb begin
    for (int unsigned s = 0; s < Segs; s++)
      mv_req_payload[s*(SbufAddrW+1) +: SbufAddrW+1] = {mv_req_segs_o[s], mv_req_addr_o[s]};
  end
  always_comb begin
    ls_hits_streaming_bank = 1'b0;
    mm_reads_loading_bank = 1'b0;
    streams_overlap = 1'b0;
    for (int unsigned j = 0; j < Slots; j++) begin
      if (mm_act_q[j].valid && mm_act_q[j].wsel == ls_bank_q &&
          (mm_act_q[j].rows & ls_rows_q) != '0 && (mm_act_q[j].cols & ls_cols_q) != '0) begin
        ls_hits_streaming_bank = ls_hits_streaming_bank | (|w_we);
        mm_reads_loading_bank = mm_reads_loading_bank | (fire[j] && ls_busy_q);
      end
      for (int unsigned i = 0; i < j; i++)
        if (mm_act_q[i].valid && mm_act_q[j].valid &&
            ((mm_act_q[i].rows & mm_act_q[j].rows) != '0 ||
             (mm_act_q[i].cols & mm_act_q[j].cols) != '0))
          streams_overlap = 1'b1;
    end
    exit_outside_bank = 1'b0;
    for (int unsigned c = 0; c < Segs; c++)
      if (exit_meta[c].valid &&
          32'(exit_meta[c].psum_elem) >= (exit_meta[c].narrow ? 2 * BankElems : BankElems))
        exit_outside_bank = 1'b1;
    // Each vector leaving the array was counted into its bank's pending count when it entered.
    exit_uncounted = 1'b0;
    for (int unsigned b = 0; b < Banks; b++) begin
      logic [15:0] exits;
      exits = '0;
      for (int unsigned c = 0; c < Segs; c++)
        if (exit_meta[c].valid && 32'(exit_meta[c].psum_bank) == b) exits = exits + 1'b1;
      if (exits > pending_q[b]) exit_uncounted = 1'b1;
    end
  end
  assign first_col_narrow_acc = col_meta[0].valid && col_meta[0].narrow && col_meta[0].accumulate;

  `NC_ASSERT_HANDSHAKE(CmdPayloadStable, cmd_valid_i, cmd_ready_o, cmd_data_i)
  `NC_ASSERT_HANDSHAKE(StReqStable, st_req_valid_o, st_req_ready_i, st_req_addr_o)
  `NC_ASSERT_HANDSHAKE(MvReqStable, mv_req_valid_o, mv_req_ready_i, mv_req_payload)
  `NC_ASSERT_HANDSHAKE(PsumRdReqStable, psum_rd_valid_i, psum_rd_ready_o,
                       {psum_rd_bank_i, psum_rd_elem_i})
  `NC_ASSERT_HANDSHAKE(PsumExtWrReqStable, psum_ext_wr_valid_i, psum_ext_wr_ready_o,
                       {psum_ext_wr_bank_i, psum_ext_wr_elem_i, psum_ext_wr_byte_en_i, psum_ext_wr_part_mask_i})
  `NC_ASSERT(StRspOneCycleAfterReq, st_rsp_valid_i == st_fire_q)
  `NC_ASSERT(MvRspOneCycleAfterReq, mv_rsp_valid_i == enter_valid_q)
  // The LS never rewrites a bank an MM of an overlapping tile may still read.
  `NC_ASSERT(LsWritesOnlyAFreeBank, !ls_hits_streaming_bank)
  // An MM never streams with a bank whose load is unfinished.
  `NC_ASSERT(MmNeverReadsLoadingBank, !mm_reads_loading_bank)
  // MMs streaming at once share no PE rows and no PE columns.
  `NC_ASSERT(StreamingTilesAreDisjoint, !streams_overlap)
  `NC_ASSERT(PsumWriteInsideBank, !exit_outside_bank)
  // The PSUM bank hazard's bookkeeping: no write lands in a bank that shows none in flight
  // (a read of it would have been let through while the write was still on its way).
  `NC_ASSERT(PsumWritesInFlightAreCounted, !exit_uncounted)
  `NC_ASSERT(NoPsumWriteDuringInit, !(psum_init_busy && enter_valid_q))
  // A transpose never accumulates (check() rejects it), so half-word writes are plain stores.
  `NC_ASSERT(NarrowWriteNeverAccumulates, !first_col_narrow_acc)
endmodule
