// The tensor engine: instruction queue, LoadStationary and MultiplyMoving sequencers, SBUF
// read ports, the systolic array, PSUM, error status and counters. See README.md beside
// this file for the theory of operation.
`include "nc_assert.svh"

module nc_tensor_engine
  import nc_pkg::*;
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
  parameter int unsigned Fp32Passes = 4       // cycles per moving vector when FP32 is involved
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // Instructions (valid/ready).
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  te_instr_t             cmd_data_i,
  // SBUF read port for the stationary: per accepted request, `reps` elements per partition
  // (replica r at addr + r * rep_step) and the uint16 at tag_addr, returned the next cycle.
  output logic                  st_req_valid_o,
  input  logic                  st_req_ready_i,
  output logic [SbufAddrW-1:0]  st_req_addr_o,
  output logic [2:0]            st_req_bytes_o,
  output logic [2:0]            st_req_reps_o,
  output logic [SbufAddrW-1:0]  st_req_rep_step_o,
  output logic [SbufAddrW-1:0]  st_req_tag_addr_o,
  input  logic                  st_rsp_valid_i,
  input  logic [31:0]           st_rsp_data_i [MaxReps][Rows],
  input  logic [15:0]           st_rsp_tag_i [Rows],
  // SBUF read port for the moving tile (replicas as above).
  output logic                  mv_req_valid_o,
  input  logic                  mv_req_ready_i,
  output logic [SbufAddrW-1:0]  mv_req_addr_o,
  output logic [2:0]            mv_req_bytes_o,
  output logic [2:0]            mv_req_reps_o,
  output logic [SbufAddrW-1:0]  mv_req_rep_step_o,
  input  logic                  mv_rsp_valid_i,
  input  logic [31:0]           mv_rsp_data_i [MaxReps][Rows],
  // PSUM read port (all partitions of one bank element), data the next cycle.
  input  logic                  psum_rd_valid_i,
  output logic                  psum_rd_ready_o,
  input  logic [$clog2(Banks)-1:0]     psum_rd_bank_i,
  input  logic [$clog2(BankElems)-1:0] psum_rd_elem_i,
  output logic                  psum_rd_rsp_valid_o,
  output logic [31:0]           psum_rd_rsp_data_o [Cols],
  // Every PSUM write as it happens, for checkers and waves.
  output logic                  psum_wr_valid_o [Cols],
  output logic [$clog2(Banks)-1:0]     psum_wr_bank_o [Cols],
  output logic [$clog2(BankElems)-1:0] psum_wr_elem_o [Cols],
  output logic [1:0]            psum_wr_half_o [Cols],   // 0 word, 1 low half, 2 high half
  output logic [31:0]           psum_wr_data_o [Cols],   // the whole word after the write
  output logic [7:0]            psum_wr_tag_o [Cols],
  // A rejected instruction: one pulse per rejection. err_o stays set from the first.
  output logic                  rej_valid_o,
  output te_error_e             rej_code_o,
  output logic [7:0]            rej_tag_o,
  output logic                  err_o,
  output te_error_e             err_code_o,
  output logic                  idle_o,
  // Counters since reset.
  output logic [63:0]           cnt_busy_o,            // cycles the array streams real work
  output logic [63:0]           cnt_macs_o,
  output logic [63:0]           cnt_stall_sbuf_mv_o,   // MM wanted moving data, port not ready
  output logic [63:0]           cnt_stall_sbuf_st_o,   // LS wanted stationary data, not ready
  output logic [63:0]           cnt_stall_mm_wait_ls_o,   // next MM waits for its LS
  output logic [63:0]           cnt_stall_ls_wait_bank_o, // LS waits for its weight bank
  output logic [63:0]           cnt_stall_psum_rd_o,   // PSUM read held off: bank conflict
  output logic [63:0]           cnt_mm_o,
  output logic [63:0]           cnt_ls_o,
  output logic [63:0]           cnt_rejected_o
);
  localparam int unsigned ColW = $clog2(Cols);
  localparam int unsigned BankW = $clog2(Banks);
  localparam int unsigned ElemW = $clog2(BankElems);
  localparam int unsigned RingDepth = Rows + Cols;  // meta read Rows..Rows+Cols-1 cycles late
  localparam int unsigned RingW = $clog2(RingDepth);
  localparam int unsigned DrainCycles = Rows + Cols + 3;  // request to last PE use, + margin
  localparam fp_unpacked_t FpZero = '{is_zero: 1'b1, default: '0};

  // ---------------------------------------------------------------------------------------
  // Instruction queue and in-order dispatch
  // ---------------------------------------------------------------------------------------
  logic      head_valid, head_pop;
  te_instr_t head;

  nc_fifo #(.T(te_instr_t), .Depth(CmdDepth)) u_cmd_fifo (
    .clk_i, .rst_ni,
    .in_valid_i(cmd_valid_i), .in_ready_o(cmd_ready_o), .in_data_i(cmd_data_i),
    .out_valid_o(head_valid), .out_ready_i(head_pop), .out_data_o(head)
  );

  // Program-order state, updated at dispatch.
  logic       st_valid_q;        // a stationary has been dispatched
  logic [8:0] st_k_q, st_m_q;    // its K and M
  logic [3:0] st_dtype_q;
  logic       st_double_row_q, st_transpose_q;
  te_sparsity_e st_sparsity_q;
  logic       cur_bank_q;        // weight bank of the latest LS: the one MMs use
  logic       ls_target_bank_q;  // bank the next LS writes

  // Elements per partition an access of this instruction reads: 2 for double-row, G / 4 for
  // a sparse MM's moving tile (a sparse stationary is the compressed tile), else 1.
  function automatic logic [2:0] replicas(te_instr_t i);
    if (i.double_row) return 3'd2;
    return (i.opcode == OpMultiplyMoving) ? 3'd1 + 3'(i.sparsity) : 3'd1;
  endfunction

  function automatic logic is_fp8(logic [3:0] t);
    return t == 4'(DtE4m3) || t == 4'(DtE5m2);
  endfunction

  // The same checks, in the same order, as model/tensor_engine.cpp TensorEngine::check.
  function automatic te_error_e check(te_instr_t i, logic st_valid, logic [8:0] st_k,
                                      logic st_double_row, logic st_transpose,
                                      te_sparsity_e st_sparsity, logic [3:0] st_dtype);
    logic        is_ls, sparse;
    logic [31:0] bytes, count, last_byte, elements, tag_end;
    is_ls = i.opcode == OpLoadStationary;
    sparse = i.sparsity != SpDense;
    bytes = 32'(dtype_bytes(dtype_e'(i.dtype)));
    count = (is_ls ? 32'(i.m) : 32'(i.n)) * 32'(replicas(i));
    last_byte = 32'(i.sbuf_addr) + (count - 1) * 32'(i.sbuf_stride) + bytes;
    tag_end = 32'(i.tag_addr) + 2 * ((32'(i.m) + 3) / 4);
    // A transpose of a 16- or 8-bit stationary writes 16-bit elements: twice as many per bank.
    elements = (i.transpose && dtype_bytes(dtype_e'(st_dtype)) != 3'd4) ? 2 * BankElems
                                                                       : BankElems;
    if (!is_ls && i.opcode != OpMultiplyMoving) return ErrOpcode;
    if (!is_float_dtype(i.dtype)) return ErrDtype;
    if ((i.double_row && (i.transpose || sparse)) || (i.transpose && sparse) ||
        (!is_ls && i.transpose && i.accumulate))
      return ErrModeCombo;
    if (i.double_row && !is_fp8(i.dtype)) return ErrModeType;
    if (i.k == '0 || 32'(i.k) > Rows || (sparse && i.k[1:0] != 2'b00)) return ErrK;
    if (is_ls) begin
      if (i.m == '0 || 32'(i.m) > Cols) return ErrM;
    end else begin
      if (i.n == '0 || 32'(i.n) > BankElems) return ErrN;
      if (32'(i.psum_bank) >= Banks) return ErrPsumBank;
      if (!st_valid) return ErrNoStationary;
      if (i.k != st_k) return ErrKMismatch;
      if (i.double_row != st_double_row || i.transpose != st_transpose ||
          i.sparsity != st_sparsity)
        return ErrModeMismatch;
      if (32'(i.psum_offset) + 32'(i.n) > elements) return ErrPsumRange;
    end
    if ((32'(i.sbuf_addr) % bytes) != 0 || (32'(i.sbuf_stride) % bytes) != 0)
      return ErrSbufAlign;
    if (is_ls && sparse && i.tag_addr[0]) return ErrSbufAlign;
    if (last_byte > SbufBytes) return ErrSbufRange;
    if (is_ls && sparse && tag_end > SbufBytes) return ErrSbufRange;
    return ErrNone;
  endfunction

  te_error_e head_err;
  logic      head_is_ls, head_is_mm, dispatch_ls, dispatch_mm, reject;
  logic      psum_init_busy;
  logic      bank_free [2];

  // LoadStationary unit state.
  logic                 ls_busy_q;
  logic                 ls_bank_q;
  logic [3:0]           ls_dtype_q;
  logic [8:0]           ls_k_q, ls_m_q, ls_req_cnt_q, ls_rsp_cnt_q;
  logic [SbufAddrW-1:0] ls_addr_q;
  logic [15:0]          ls_stride_q;
  logic [2:0]           ls_reps_q;
  logic [SbufAddrW-1:0] ls_rep_step_q;
  logic [SbufAddrW-1:0] ls_tag_addr_q;
  logic                 ls_transpose_q;
  logic                 ls_sparse_q;

  // MultiplyMoving: a waiting slot (next) and the streaming one (act).
  typedef struct packed {
    logic                 valid;
    logic                 wsel;
    logic [3:0]           dtype;
    logic [8:0]           k;
    logic [8:0]           m_limit;
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
    te_sparsity_e         sparsity;
  } mm_slot_t;
  mm_slot_t mm_next_q, mm_act_q;
  logic [9:0]  mm_req_cnt_q;     // moving vectors requested so far
  logic [15:0] mm_cycle_q;       // cycles since the streaming MM started

  assign head_err = check(head, st_valid_q, st_k_q, st_double_row_q, st_transpose_q,
                          st_sparsity_q, st_dtype_q);
  assign head_is_ls = head_valid && head_err == ErrNone && head.opcode == OpLoadStationary;
  assign head_is_mm = head_valid && head_err == ErrNone && head.opcode == OpMultiplyMoving;
  assign reject = head_valid && head_err != ErrNone;
  assign dispatch_ls = head_is_ls && !ls_busy_q && bank_free[ls_target_bank_q];
  assign dispatch_mm = head_is_mm && !mm_next_q.valid && !psum_init_busy;
  assign head_pop = reject || dispatch_ls || dispatch_mm;

  // A weight bank is free to reload once no MM holds it and its last vector has drained.
  logic [$clog2(DrainCycles+1)-1:0] drain_q [2];
  always_comb begin
    for (int b = 0; b < 2; b++) begin
      bank_free[b] = !(mm_act_q.valid && mm_act_q.wsel == 1'(b)) &&
                     !(mm_next_q.valid && mm_next_q.wsel == 1'(b)) && drain_q[b] == '0;
    end
  end

  // ---------------------------------------------------------------------------------------
  // LoadStationary: M requests, one column of the chosen weight bank per response.
  // ---------------------------------------------------------------------------------------
  logic                        st_fire, st_fire_q;
  logic                        w_we;
  fp_unpacked_t                w_col_data [Rows];
  fp_unpacked_t                w_col_data1 [Rows];
  logic [31:0]                 w_col_aux [Rows];
  logic [31:0]                 st_bytes_mask;

  assign st_req_valid_o = ls_busy_q && ls_req_cnt_q < ls_m_q;
  assign st_req_addr_o = ls_addr_q;
  assign st_req_bytes_o = dtype_bytes(dtype_e'(ls_dtype_q));
  assign st_req_reps_o = ls_reps_q;
  assign st_req_rep_step_o = ls_rep_step_q;
  assign st_req_tag_addr_o = ls_tag_addr_q;
  assign st_fire = st_req_valid_o && st_req_ready_i;
  assign w_we = st_rsp_valid_i;
  assign st_bytes_mask = (st_req_bytes_o == 3'd4) ? 32'hFFFF_FFFF
                       : (st_req_bytes_o == 3'd2) ? 32'h0000_FFFF : 32'h0000_00FF;

  always_comb begin
    for (int unsigned k = 0; k < Rows; k++) begin
      // Rows at or past K hold +0, so they add nothing to the column sums.
      automatic logic live = k < 32'(ls_k_q);
      w_col_data[k] = live ? unpack_fp32(decode_to_fp32(ls_dtype_q, st_rsp_data_i[0][k]))
                           : FpZero;
      w_col_data1[k] = (live && ls_reps_q == 3'd2)
                     ? unpack_fp32(decode_to_fp32(ls_dtype_q, st_rsp_data_i[1][k])) : FpZero;
      // Transpose keeps the element's bits; sparse keeps the column's tag.
      w_col_aux[k] = !live          ? 32'd0
                   : ls_transpose_q ? st_rsp_data_i[0][k] & st_bytes_mask
                   : ls_sparse_q    ? 32'(st_rsp_tag_i[k][{ls_rsp_cnt_q[1:0], 2'b00} +: 4])
                                    : 32'd0;
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
      ls_addr_q <= '0;
      ls_stride_q <= '0;
      ls_reps_q <= 3'd1;
      ls_rep_step_q <= '0;
      ls_tag_addr_q <= '0;
      ls_transpose_q <= 1'b0;
      ls_sparse_q <= 1'b0;
      st_fire_q <= 1'b0;
      st_valid_q <= 1'b0;
      st_k_q <= '0;
      st_m_q <= '0;
      st_dtype_q <= '0;
      st_double_row_q <= 1'b0;
      st_transpose_q <= 1'b0;
      st_sparsity_q <= SpDense;
      cur_bank_q <= 1'b0;
      ls_target_bank_q <= 1'b0;
    end else begin
      st_fire_q <= st_fire;
      if (dispatch_ls) begin
        ls_busy_q <= 1'b1;
        ls_bank_q <= ls_target_bank_q;
        ls_dtype_q <= head.dtype;
        ls_k_q <= head.k;
        ls_m_q <= head.m;
        ls_req_cnt_q <= '0;
        ls_rsp_cnt_q <= '0;
        ls_addr_q <= head.sbuf_addr;
        ls_stride_q <= head.sbuf_stride;
        ls_reps_q <= replicas(head);
        ls_rep_step_q <= SbufAddrW'(32'(head.m) * 32'(head.sbuf_stride));
        ls_tag_addr_q <= head.tag_addr;
        ls_transpose_q <= head.transpose;
        ls_sparse_q <= head.sparsity != SpDense;
        st_valid_q <= 1'b1;
        st_k_q <= head.k;
        st_m_q <= head.m;
        st_dtype_q <= head.dtype;
        st_double_row_q <= head.double_row;
        st_transpose_q <= head.transpose;
        st_sparsity_q <= head.sparsity;
        cur_bank_q <= ls_target_bank_q;
        ls_target_bank_q <= !ls_target_bank_q;
      end else begin
        if (st_fire) begin
          ls_req_cnt_q <= ls_req_cnt_q + 1'b1;
          ls_addr_q <= ls_addr_q + SbufAddrW'(ls_stride_q);
          // Four tags per uint16: the next word after every fourth column.
          if (ls_req_cnt_q[1:0] == 2'b11) ls_tag_addr_q <= ls_tag_addr_q + SbufAddrW'(2);
        end
        if (st_rsp_valid_i) begin
          ls_rsp_cnt_q <= ls_rsp_cnt_q + 1'b1;
          if (ls_rsp_cnt_q + 1'b1 == ls_m_q) ls_busy_q <= 1'b0;
        end
      end
    end
  end

  // ---------------------------------------------------------------------------------------
  // MultiplyMoving: paced requests of moving vectors; each response enters the array.
  // ---------------------------------------------------------------------------------------
  logic         mv_fire, mm_all_requested, mm_finishing, mm_can_promote;
  logic [15:0]  mm_min_cycles;
  te_vec_meta_t enter_meta_q;    // meta of the vector whose data arrives this cycle
  logic [8:0]   enter_k_q;
  logic [3:0]   enter_dtype_q;
  logic [2:0]   enter_passes_q;
  logic [2:0]   enter_reps_q;

  assign mv_req_valid_o = mm_act_q.valid && mm_req_cnt_q < mm_act_q.n &&
                          mm_cycle_q >= 16'(mm_req_cnt_q) * 16'(mm_act_q.passes);
  assign mv_req_addr_o = mm_act_q.addr;
  assign mv_req_bytes_o = dtype_bytes(dtype_e'(mm_act_q.dtype));
  assign mv_req_reps_o = mm_act_q.reps;
  assign mv_req_rep_step_o = mm_act_q.rep_step;
  assign mv_fire = mv_req_valid_o && mv_req_ready_i;
  assign mm_all_requested = mm_req_cnt_q + 10'(mv_fire) == mm_act_q.n;
  assign mm_min_cycles = (16'(mm_act_q.n) * 16'(mm_act_q.passes) > 16'(MinMmCycles))
                       ? 16'(mm_act_q.n) * 16'(mm_act_q.passes) : 16'(MinMmCycles);
  assign mm_finishing = mm_act_q.valid && mm_all_requested && mm_cycle_q + 1'b1 >= mm_min_cycles;

  // Cycles per moving vector. FP32 arithmetic takes Fp32Passes; an FP32 transpose moves each
  // 32-bit element as two halves (2 cycles, twice as fast as an identity matmul); the rest 1.
  function automatic logic [2:0] mm_passes(te_instr_t i, logic [3:0] st_dtype);
    logic fp32;
    fp32 = i.dtype == 4'(DtFp32) || st_dtype == 4'(DtFp32);
    if (i.transpose) return (st_dtype == 4'(DtFp32)) ? 3'd2 : 3'd1;
    if (i.double_row) return 3'd1;
    return fp32 ? 3'(Fp32Passes) : 3'd1;
  endfunction
  // The next MM may start once the LS that loaded its bank has written every column.
  assign mm_can_promote = mm_next_q.valid && !(ls_busy_q && ls_bank_q == mm_next_q.wsel);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      mm_next_q <= '0;
      mm_act_q <= '0;
      mm_req_cnt_q <= '0;
      mm_cycle_q <= '0;
      enter_meta_q <= '0;
      enter_k_q <= '0;
      enter_dtype_q <= '0;
      enter_passes_q <= '0;
      enter_reps_q <= '0;
    end else begin
      if (!mm_act_q.valid || mm_finishing) begin
        mm_act_q <= mm_can_promote ? mm_next_q : '0;
        mm_req_cnt_q <= '0;
        mm_cycle_q <= '0;
      end else begin
        mm_cycle_q <= mm_cycle_q + 1'b1;
        if (mv_fire) begin
          mm_req_cnt_q <= mm_req_cnt_q + 1'b1;
          mm_act_q.addr <= mm_act_q.addr + SbufAddrW'(mm_act_q.stride);
        end
      end
      if (dispatch_mm) begin
        mm_next_q <= '{
          valid: 1'b1,
          wsel: cur_bank_q,
          dtype: head.dtype,
          k: head.k,
          m_limit: st_m_q,
          n: head.n,
          addr: head.sbuf_addr,
          stride: head.sbuf_stride,
          bank: head.psum_bank[BankW-1:0],
          offset: head.psum_offset,
          accumulate: head.accumulate,
          tag: head.tag,
          passes: mm_passes(head, st_dtype_q),
          reps: replicas(head),
          rep_step: SbufAddrW'(32'(head.n) * 32'(head.sbuf_stride)),
          narrow: head.transpose && dtype_bytes(dtype_e'(st_dtype_q)) != 3'd4,
          pe_op: head.double_row ? PeDoubleRow : head.transpose ? PeTranspose
               : head.sparsity != SpDense ? PeSparse : PeDense,
          sparsity: head.sparsity
        };
      end else if ((!mm_act_q.valid || mm_finishing) && mm_can_promote) begin
        mm_next_q <= '0;
      end
      enter_meta_q <= '{
        valid: mv_fire,
        wsel: mm_act_q.wsel,
        psum_bank: 3'(mm_act_q.bank),
        psum_elem: mm_act_q.offset + mm_req_cnt_q,
        narrow: mm_act_q.narrow,
        accumulate: mm_act_q.accumulate,
        pe_op: mm_act_q.pe_op,
        sparsity: mm_act_q.sparsity,
        m_limit: mm_act_q.m_limit,
        tag: mm_act_q.tag
      };
      enter_k_q <= mm_act_q.k;
      enter_dtype_q <= mm_act_q.dtype;
      enter_passes_q <= mm_act_q.passes;
      enter_reps_q <= mm_act_q.reps;
    end
  end

  // The arriving vector, decoded at the left edge (rows at or past K as +0) and registered:
  // the array then depends on state only, so a simulator evaluates the PEs once per cycle.
  fp_unpacked_t in_data [MaxReps][Rows];
  fp_unpacked_t in_data_q [MaxReps][Rows];
  te_vec_meta_t in_meta_q;       // meta of the vector entering the array this cycle
  logic [8:0]   in_k_q;
  logic [2:0]   in_passes_q;
  always_comb begin
    for (int unsigned r = 0; r < MaxReps; r++) begin
      for (int unsigned k = 0; k < Rows; k++) begin
        in_data[r][k] = (enter_meta_q.valid && k < 32'(enter_k_q) && r < 32'(enter_reps_q))
                      ? unpack_fp32(decode_to_fp32(enter_dtype_q, mv_rsp_data_i[r][k])) : FpZero;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_meta_q <= '0;
      in_k_q <= '0;
      in_passes_q <= '0;
    end else begin
      in_meta_q <= enter_meta_q;
      in_k_q <= enter_k_q;
      in_passes_q <= enter_passes_q;
    end
  end

  always_ff @(posedge clk_i) begin
    in_data_q <= in_data;
  end

  // ---------------------------------------------------------------------------------------
  // Array, vector bookkeeping and PSUM
  // ---------------------------------------------------------------------------------------
  logic [31:0] out_sum [Cols];

  nc_systolic_array #(.Rows(Rows), .Cols(Cols)) u_array (
    .clk_i, .rst_ni,
    .w_we_i(w_we), .w_bank_i(ls_bank_q), .w_col_i(ColW'(ls_rsp_cnt_q)),
    .w_col_data_i(w_col_data), .w_col_data1_i(w_col_data1), .w_col_aux_i(w_col_aux),
    .in_wsel_i(in_meta_q.wsel), .in_op_i(in_meta_q.pe_op), .in_sparsity_i(in_meta_q.sparsity),
    .in_data_i(in_data_q),
    .out_sum_o(out_sum)
  );

  // Meta ring: the meta of the vector at the bottom of column m entered Rows + m cycles ago.
  te_vec_meta_t     ring_q [RingDepth];
  logic [RingW-1:0] ring_ptr_q;
  te_vec_meta_t     col_meta [Cols];

  always_comb begin
    for (int unsigned m = 0; m < Cols; m++) begin
      automatic int unsigned lag = Rows + m;
      automatic logic [RingW-1:0] idx =
          RingW'((int'(ring_ptr_q) >= int'(lag)) ? int'(ring_ptr_q) - lag
                                                 : int'(ring_ptr_q) + RingDepth - lag);
      col_meta[m] = ring_q[idx];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ring_ptr_q <= '0;
    else ring_ptr_q <= (ring_ptr_q == RingW'(RingDepth - 1)) ? '0 : ring_ptr_q + 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ring_q <= '{default: '0};
    else ring_q[ring_ptr_q] <= in_meta_q;
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

  // Vectors in flight per PSUM bank: from request to the bottom of the last column.
  logic [15:0]      pending_q [Banks];
  logic [Banks-1:0] pending;
  logic             psum_rd_conflict;
  // The vector leaving the last column: its last possible PSUM write is this cycle.
  logic             exit_valid;
  logic [2:0]       exit_bank;
  logic [9:0]       exit_elem;
  logic             exit_narrow;
  assign exit_valid = col_meta[Cols-1].valid;
  assign exit_bank = col_meta[Cols-1].psum_bank;
  assign exit_elem = col_meta[Cols-1].psum_elem;
  assign exit_narrow = col_meta[Cols-1].narrow;

  always_comb begin
    for (int unsigned b = 0; b < Banks; b++) pending[b] = pending_q[b] != '0;
  end

  // Next state of the per-bank counters, computed here and registered whole (Verilator does
  // not take non-blocking writes to array elements inside loops).
  logic [15:0]                      pending_d [Banks];
  logic [$clog2(DrainCycles+1)-1:0] drain_d [2];
  always_comb begin
    for (int unsigned b = 0; b < Banks; b++) begin
      pending_d[b] = pending_q[b] + 16'(mv_fire && 32'(mm_act_q.bank) == b)
                   - 16'(exit_valid && 32'(exit_bank) == b);
    end
    for (int b = 0; b < 2; b++) begin
      if (mv_fire && mm_act_q.wsel == 1'(b)) drain_d[b] = ($bits(drain_q[b]))'(DrainCycles);
      else if (drain_q[b] != '0) drain_d[b] = drain_q[b] - 1'b1;
      else drain_d[b] = '0;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pending_q <= '{default: '0};
      drain_q <= '{default: '0};
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
    .rd_valid_i(psum_rd_valid_i), .rd_ready_o(psum_rd_ready_o),
    .rd_bank_i(psum_rd_bank_i), .rd_elem_i(psum_rd_elem_i),
    .rd_rsp_valid_o(psum_rd_rsp_valid_o), .rd_rsp_data_o(psum_rd_rsp_data_o),
    .rd_conflict_o(psum_rd_conflict)
  );

  // ---------------------------------------------------------------------------------------
  // Status and counters
  // ---------------------------------------------------------------------------------------
  logic      err_q;
  te_error_e err_code_q;
  logic [63:0] cnt_busy_q, cnt_macs_q, cnt_stall_mv_q, cnt_stall_st_q, cnt_stall_mm_ls_q,
               cnt_stall_ls_bank_q, cnt_stall_psum_q, cnt_mm_q, cnt_ls_q, cnt_rej_q;
  logic any_pending;
  // Dense-equivalent MACs per PE row: two K rows for double-row, G / 4 for sparse, none for a
  // transpose (it moves bits, it does not multiply).
  logic [63:0] macs_per_row;
  always_comb begin
    unique case (in_meta_q.pe_op)
      PeDoubleRow: macs_per_row = 64'd2;
      PeTranspose: macs_per_row = 64'd0;
      PeSparse:    macs_per_row = 64'd1 + 64'(in_meta_q.sparsity);
      default:     macs_per_row = 64'd1;
    endcase
  end

  assign rej_valid_o = reject;
  assign rej_code_o = head_err;
  assign rej_tag_o = head.tag;
  assign err_o = err_q;
  assign err_code_o = err_code_q;
  assign any_pending = pending != '0;
  assign idle_o = !head_valid && !ls_busy_q && !mm_act_q.valid && !mm_next_q.valid &&
                  !enter_meta_q.valid && !in_meta_q.valid && !any_pending && !psum_init_busy;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      err_q <= 1'b0;
      err_code_q <= ErrNone;
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
      if (in_meta_q.valid) begin
        cnt_busy_q <= cnt_busy_q + 64'(in_passes_q);
        cnt_macs_q <= cnt_macs_q + 64'(in_k_q) * 64'(in_meta_q.m_limit) * macs_per_row;
      end
      cnt_stall_mv_q <= cnt_stall_mv_q + 64'(mv_req_valid_o && !mv_req_ready_i);
      cnt_stall_st_q <= cnt_stall_st_q + 64'(st_req_valid_o && !st_req_ready_i);
      cnt_stall_mm_ls_q <= cnt_stall_mm_ls_q +
                           64'((!mm_act_q.valid || mm_finishing) && mm_next_q.valid &&
                               !mm_can_promote);
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
  `NC_ASSERT_HANDSHAKE(CmdPayloadStable, cmd_valid_i, cmd_ready_o, cmd_data_i)
  `NC_ASSERT_HANDSHAKE(StReqStable, st_req_valid_o, st_req_ready_i, st_req_addr_o)
  `NC_ASSERT_HANDSHAKE(MvReqStable, mv_req_valid_o, mv_req_ready_i, mv_req_addr_o)
  `NC_ASSERT_HANDSHAKE(PsumRdReqStable, psum_rd_valid_i, psum_rd_ready_o,
                       {psum_rd_bank_i, psum_rd_elem_i})
  `NC_ASSERT(StRspOneCycleAfterReq, st_rsp_valid_i == st_fire_q)
  `NC_ASSERT(MvRspOneCycleAfterReq, mv_rsp_valid_i == enter_meta_q.valid)
  // The LS never rewrites a bank an MM may still read.
  `NC_ASSERT(LsWritesOnlyAFreeBank, w_we |-> !(mm_act_q.valid && mm_act_q.wsel == ls_bank_q))
  // An MM never streams with a bank whose load is unfinished.
  `NC_ASSERT(MmNeverReadsLoadingBank,
             mv_fire |-> !(ls_busy_q && ls_bank_q == mm_act_q.wsel))
  `NC_ASSERT(PsumWriteInsideBank,
             !exit_valid || 32'(exit_elem) < (exit_narrow ? 2 * BankElems : BankElems))
  // A transpose never accumulates (check() rejects it), so half-word writes are plain stores.
  logic first_col_narrow_acc;
  assign first_col_narrow_acc = col_meta[0].valid && col_meta[0].narrow && col_meta[0].accumulate;
  `NC_ASSERT(NarrowWriteNeverAccumulates, !first_col_narrow_acc)
  `NC_ASSERT(NoPsumWriteDuringInit, !(psum_init_busy && enter_meta_q.valid))
endmodule
