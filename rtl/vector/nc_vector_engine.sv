// The vector engine: Lanes lanes, lane l streams partition l of SBUF or PSUM. One instruction
// at a time: checked in one cycle (refused with a code, or run), then a read sequencer walks
// the source patterns through one read port (one element of every partition per request) and a
// lane sequencer consumes the responses in order, computes, and pushes writes. Theory of
// operation, timing and arithmetic: rtl/vector/README.md.
`include "nc_assert.svh"

module nc_vector_engine
  import nc_isa_pkg::*;
  import nc_vector_pkg::*;
  import nc_fp_pkg::*;
  import nc_act_pkg::act_eval;
#(
  // 0: the vector engine (ALU lanes, every opcode but activation); 1: the scalar engine
  // (activation lanes, activation only; rtl/scalar/nc_scalar_engine.sv)
  parameter bit Scalar = 1'b0,
  parameter int unsigned Lanes = 128,
  parameter int unsigned SbufBytes = 229376,
  parameter int unsigned PsumBytes = 16384,
  parameter int unsigned RspDepth = 4   // read responses in flight (the response buffer)
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Performance mode (a pair of 16-bit elements a step; NeuronCore-v3 only, the trn1 preset
  // turns it off: model::EngineCosts::performance_mode). It changes the time, never the results.
  input  logic                   perf_mode_en_i,
  // instructions
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  isa_ve_instr_t              cmd_i,
  output logic                   done_valid_o,  // one per instruction: completed or refused
  output logic [7:0]             done_tag_o,
  output isa_ve_error_e              done_error_o,
  // read port: the element at rd_addr_o of every partition; responses in order, any latency
  // of at least a cycle, never back-pressured (the engine never has more than RspDepth out)
  output logic                   rd_valid_o,
  input  logic                   rd_ready_i,
  output logic                   rd_space_o,
  output logic [AddrW-1:0]       rd_addr_o,
  output logic [2:0]             rd_bytes_o,
  input  logic                   rd_rsp_valid_i,
  input  logic [Lanes-1:0][31:0] rd_rsp_data_i,   // element bits, zero-extended
  // write port: one element into every partition of wr_mask_o
  output logic                   wr_valid_o,
  input  logic                   wr_ready_i,
  output logic                   wr_space_o,
  output logic [AddrW-1:0]       wr_addr_o,
  output logic [2:0]             wr_bytes_o,
  output logic [Lanes-1:0]       wr_mask_o,
  output logic [Lanes-1:0][31:0] wr_data_o,
  // status
  output logic                   idle_o,
  output isa_ve_error_e              err_o,         // first refusal since reset (sticky)
  output ve_counters_t           counters_o
);
  localparam int unsigned Quad = Lanes / 4;  // partitions of a quadrant (32 at 128 lanes)
  localparam int unsigned QuadW = $clog2(Quad);
  localparam int unsigned InflightW = $clog2(RspDepth + 1);
  localparam logic [31:0] MaxSbufFree = 32'd65536;
  localparam logic [31:0] MaxPsumFree = 32'd4096;
  localparam logic [31:0] BnStatsMaxElements = 32'd512;   // NKI's bn_stats_fmax
  // Cycles the lanes' divider takes per division (bn_stats, bn_aggr): the engine holds its
  // operands for DivCycles cycles (a multicycle path) and then captures the quotient.
  localparam int unsigned DivCycles = 8;
  // iota and affine_select model GpSimd's software start-up (NKI: about 150 + N cycles): the
  // engine waits this long before the first element, so that each costs exactly 150 + N.
  localparam logic [7:0] AffineStartup = 8'd144;
  localparam logic [7:0] IotaStartup = 8'd146;

  typedef logic [Lanes-1:0][31:0] lanes_t;
  typedef logic [3:0][15:0] idx_t;
  typedef struct packed {
    logic             space;
    logic [2:0]       bytes;
    logic [AddrW-1:0] addr;
    lanes_t           data;
  } wr_entry_t;

  // What the next read (and the next response consumed) is.
  typedef enum logic [1:0] { PhScalar0, PhScalar1, PhElements, PhDone } phase_e;
  // bn_stats / bn_aggr after their last element: two divisions, then the outputs.
  typedef enum logic [1:0] { BnOff, BnDiv1, BnDiv2, BnOut } bn_phase_e;
  // Per lane: bn_stats (shift, sum, sum of squares) of the even then the odd elements;
  // bn_aggr (count of this triple, shift, count, A, B, M2 sum).
  typedef logic [Lanes-1:0][5:0][31:0] bn_regs_t;

  // ---------------------------------------------------------------------------------------
  // Instruction check: model/vector/vector_engine.cpp ve_check's rules, in the same order
  // ---------------------------------------------------------------------------------------
  function automatic logic [2:0] dtype_bytes(logic [3:0] t);
    return 3'(nc_pkg::dtype_bytes(isa_d_type_e'(t)));
  endfunction
  function automatic logic uses_src1(isa_opcode_e op);
    return op == IsaTensorTensor || op == IsaTensorTensorScan || op == IsaScalarTensorTensor;
  endfunction
  // memset and iota read nothing: they generate their elements
  function automatic logic generates(isa_opcode_e op);
    return op == IsaMemset || op == IsaIota;
  endfunction
  function automatic logic uses_op0(isa_opcode_e op);
    return op == IsaTensorTensor || op == IsaTensorScalar || op == IsaTensorReduce
        || op == IsaTensorTensorScan || op == IsaScalarTensorTensor || op == IsaTensorScalarReduce;
  endfunction
  function automatic logic uses_op1(isa_opcode_e op);
    return op == IsaTensorScalar || op == IsaTensorTensorScan || op == IsaScalarTensorTensor
        || op == IsaTensorScalarReduce;
  endfunction
  // the opcodes whose operations may be bitwise (the integer class); the others are float only
  function automatic logic allows_integer(isa_opcode_e op);
    return op == IsaTensorTensor || op == IsaTensorScalar || op == IsaTensorReduce
        || op == IsaTensorTensorScan;
  endfunction
  function automatic logic moves_bits(isa_opcode_e op);
    return op == IsaTranspose || op == IsaShuffle;
  endfunction
  function automatic logic is_stats(isa_opcode_e op);
    return op == IsaBnStats || op == IsaBnAggr;
  endfunction
  function automatic logic uses_s0(isa_opcode_e op);
    return op == IsaTensorScalar || op == IsaActivation || op == IsaTensorTensorScan
        || op == IsaScalarTensorTensor || op == IsaTensorScalarReduce;
  endfunction
  function automatic logic uses_s1(isa_opcode_e op);
    return op == IsaTensorScalar || op == IsaActivation;
  endfunction
  function automatic logic writes_acc(isa_ve_instr_t i);
    return (i.opcode == IsaActivation || i.opcode == IsaTensorScalarReduce) && i.acc_enable;
  endfunction
  function automatic logic integer_class(isa_ve_instr_t i);
    return allows_integer(i.opcode)
        && ((uses_op0(i.opcode) && is_bitwise(i.op0)) || (uses_op1(i.opcode) && is_bitwise(i.op1)));
  endfunction
  function automatic logic op_ok(isa_ve_instr_t i, logic [3:0] op);
    if (op > 4'(AluOpAshr)) return 1'b0;
    if (!allows_integer(i.opcode)) return !is_bitwise(op);
    return !integer_class(i) || op == 4'(AluOpBypass) || is_bitwise(op);
  endfunction
  // elements streamed (src0's, or dst's for memset and iota) and written to dst
  function automatic logic [31:0] source_elements(isa_ve_instr_t i);
    return generates(i.opcode) ? elements(i.dst) : elements(i.src0);
  endfunction
  function automatic logic [31:0] dst_elements(isa_ve_instr_t i);
    unique case (i.opcode)
      IsaTensorReduce: return source_elements(i) / 32'(i.src0.count[0]);
      IsaBnStats:      return 32'd6;
      IsaBnAggr:       return 32'd2;
      default:         return source_elements(i);
    endcase
  endfunction
  function automatic logic [31:0] elements(isa_access_t a);
    logic [63:0] n;
    n = 64'(a.count[0]) * 64'(a.count[1]) * 64'(a.count[2]) * 64'(a.count[3]);
    return n > 64'hFFFF_FFFF ? 32'hFFFF_FFFF : n[31:0];
  endfunction
  function automatic logic shape_ok(isa_access_t a);
    for (int d = 0; d < 4; d++) begin
      if (a.count[d] == '0) return 1'b0;
    end
    return elements(a) <= (a.space ? MaxPsumFree : MaxSbufFree);
  endfunction
  function automatic logic access_ok(isa_access_t a, logic [2:0] bytes);
    logic signed [39:0] lo, hi, span, limit, base, eb;
    base = 40'(a.addr);
    eb = 40'(bytes);
    lo = '0;
    hi = '0;
    for (int d = 0; d < 4; d++) begin
      span = 40'($signed(a.stride[d])) * 40'($signed({1'b0, a.count[d]} - 17'd1));
      if (span < 0) lo = lo + span;
      else hi = hi + span;
    end
    limit = a.space ? 40'(PsumBytes) : 40'(SbufBytes);
    return (a.addr[1:0] & 2'(bytes - 3'd1)) == '0
        && base + eb * lo >= 40'sd0
        && base + eb * (hi + 40'sd1) <= limit;
  endfunction
  function automatic logic scalar_ok(logic per_partition, logic [31:0] value);
    return !per_partition || (value[1:0] == '0 && value + 32'd4 <= 32'(SbufBytes));
  endfunction

  function automatic isa_ve_error_e check(isa_ve_instr_t i);
    logic        src0, src1, intc, start_ok;
    logic [31:0] n;
    logic [7:0]  p, s;
    if (isa_format_of(i.opcode) != FormatVe) return VeErrorOpcode;
    if ((i.opcode == IsaActivation) != Scalar) return VeErrorOpcode;
    src0 = !generates(i.opcode);
    src1 = uses_src1(i.opcode);
    intc = integer_class(i);
    if (i.in0 > 4'd8 || i.in1 > 4'd8 || i.out > 4'd8) return VeErrorDtype;
    if (moves_bits(i.opcode) && i.in0 != i.out) return VeErrorDtype;
    if (intc && (nc_pkg::is_float_dtype(i.in0) || nc_pkg::is_float_dtype(i.out)
                 || (src1 && nc_pkg::is_float_dtype(i.in1)))) return VeErrorDtype;
    if (i.opcode == IsaAffineSelect && (i.in0 == 4'(DTypeInt32) || i.out == 4'(DTypeInt32)))
      return VeErrorDtype;
    if (is_stats(i.opcode) && !nc_pkg::is_float_dtype(i.out)) return VeErrorDtype;
    if (uses_op0(i.opcode) && !op_ok(i, i.op0)) return VeErrorAluOp;
    if (uses_op1(i.opcode) && !op_ok(i, i.op1)) return VeErrorAluOp;
    if (i.opcode == IsaActivation && i.act_func > 4'(ActFuncSquare)) return VeErrorAluOp;
    if (i.opcode == IsaTensorTensor && i.op0 == 4'(AluOpBypass)) return VeErrorAluOp;
    if (i.opcode == IsaScalarTensorTensor && i.op1 == 4'(AluOpBypass)) return VeErrorAluOp;
    if (i.opcode == IsaTensorReduce) begin
      if (intc ? !(i.op0 == 4'(AluOpAnd) || i.op0 == 4'(AluOpOr) || i.op0 == 4'(AluOpXor))
               : !(i.op0 == 4'(AluOpAdd) || i.op0 == 4'(AluOpMax) || i.op0 == 4'(AluOpMin)))
        return VeErrorAluOp;
    end
    if (i.opcode == IsaTensorScalarReduce && i.op1 == 4'(AluOpBypass)) return VeErrorAluOp;
    if (i.opcode == IsaAffineSelect && i.cmp_op > 3'(CmpOpLessEqual)) return VeErrorAluOp;
    p = i.partitions;
    s = {1'b0, i.start_partition};
    if (p == '0 || 32'(p) > Lanes || 32'(s) + 32'(p) > Lanes) return VeErrorPartitions;
    if (32'(p) > 2 * Quad) start_ok = s == '0;
    else if (32'(p) > Quad) start_ok = s == '0 || 32'(s) == 2 * Quad;
    else start_ok = 32'(s) % Quad == 0;
    if (!start_ok) return VeErrorPartitions;
    if (moves_bits(i.opcode) && 32'(p) % Quad != 0) return VeErrorPartitions;
    if (i.opcode == IsaShuffle) begin
      for (int q = 0; q < int'(Quad); q++) begin
        if (32'(i.shuffle[q]) >= Quad) return VeErrorPartitions;
      end
    end
    if ((src0 && !shape_ok(i.src0)) || (src1 && !shape_ok(i.src1)) || !shape_ok(i.dst))
      return VeErrorShape;
    n = source_elements(i);
    if (src1 && elements(i.src1) != n) return VeErrorShape;
    if (i.opcode == IsaBnStats && n > BnStatsMaxElements) return VeErrorShape;
    if (i.opcode == IsaBnAggr && n % 3 != 0) return VeErrorShape;
    if (elements(i.dst) != dst_elements(i)) return VeErrorShape;
    if (i.opcode == IsaTranspose && n % Quad != 0) return VeErrorShape;
    if (src0 && !access_ok(i.src0, dtype_bytes(i.in0))) return VeErrorAddress;
    if (src1 && !access_ok(i.src1, dtype_bytes(i.in1))) return VeErrorAddress;
    if (!access_ok(i.dst, dtype_bytes(i.out))) return VeErrorAddress;
    if (uses_s0(i.opcode) && !scalar_ok(i.s0_per_partition, i.s0)) return VeErrorAddress;
    if (uses_s1(i.opcode) && !scalar_ok(i.s1_per_partition, i.s1)) return VeErrorAddress;
    if (writes_acc(i) && (i.acc_addr[1:0] != '0 || 32'(i.acc_addr) + 32'd4 > 32'(SbufBytes)))
      return VeErrorAddress;
    if (i.opcode == IsaScalarTensorTensor && i.src0.space && i.src1.space) return VeErrorAddress;
    if (i.opcode == IsaMemset && (i.value & ~storage_mask(i.out)) != '0) return VeErrorValue;
    return VeErrorNone;
  endfunction

  // Performance mode (model/vector/vector_engine.h ve_perf_mode): 16-bit float copy/tensor_scalar,
  // SBUF to SBUF, unit innermost stride, even rows on 4-byte boundaries: a pair per request.
  function automatic logic paired(isa_access_t a);
    logic ok;
    ok = !a.space && a.stride[0] == 16'd1 && !a.count[0][0] && a.addr[1:0] == '0;
    for (int d = 1; d < 4; d++) ok = ok && !a.stride[d][0];
    return ok;
  endfunction
  function automatic logic perf_mode(isa_ve_instr_t i);
    return (i.opcode == IsaTensorCopy || i.opcode == IsaTensorScalar)
        && (i.in0 == 4'(DTypeBf16) || i.in0 == 4'(DTypeFp16))
        && (i.out == 4'(DTypeBf16) || i.out == 4'(DTypeFp16))
        && paired(i.src0) && paired(i.dst) && i.src0.count[0] == i.dst.count[0];
  endfunction

  function automatic phase_e first_phase(isa_ve_instr_t i);
    if (uses_s0(i.opcode) && i.s0_per_partition) return PhScalar0;
    return after_scalar0(i);
  endfunction
  function automatic phase_e after_scalar0(isa_ve_instr_t i);
    return (uses_s1(i.opcode) && i.s1_per_partition) ? PhScalar1 : PhElements;
  endfunction

  // ---------------------------------------------------------------------------------------
  // Access-pattern walkers: a 4-D index and the byte address it names
  // ---------------------------------------------------------------------------------------
  // The index `pair ? 2 : 1` elements on (a pair never straddles a row: rows are even).
  function automatic idx_t next_idx(idx_t idx, isa_access_t a, logic pair);
    idx_t n;
    logic carry;
    n = idx;
    carry = 1'b1;
    for (int d = 0; d < 4; d++) begin
      if (carry) begin
        if (n[d] == a.count[d] - ((d == 0 && pair) ? 16'd2 : 16'd1)) n[d] = '0;
        else begin
          n[d] = n[d] + ((d == 0 && pair) ? 16'd2 : 16'd1);
          carry = 1'b0;
        end
      end
    end
    return n;
  endfunction
  function automatic logic [AddrW-1:0] walk_addr(idx_t idx, isa_access_t a, logic [2:0] bytes);
    logic signed [39:0] off;
    off = '0;
    for (int d = 0; d < 4; d++) begin
      off = off + 40'($signed(a.stride[d])) * 40'($signed({1'b0, idx[d]}));
    end
    return AddrW'(40'(a.addr) + 40'(bytes) * off);
  endfunction

  // ---------------------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------------------
  ve_state_e         state_q;
  isa_ve_instr_t         in_q;            // the instruction being executed
  logic              intc_q, two_q;   // integer class; two tensor inputs
  logic              perf_q;          // performance mode: a pair of 16-bit elements per step
  logic [31:0]       elem_step;       // elements per read, per lane step and per write
  logic [31:0]       n_src_q, n_dst_q;
  lanes_t            s0_q, s1_q;      // scalar operands per lane
  // read sequencer
  phase_e            rd_phase_q;
  logic              rd_second_q;     // next element read is src1
  logic [31:0]       rd_elem_q;
  idx_t              rd_idx0_q, rd_idx1_q;
  logic [InflightW-1:0] inflight_q;   // reads accepted and not yet consumed
  // lane sequencer
  phase_e            cn_phase_q;
  logic              cn_second_q;     // src0 of this element captured in a_q, src1 next
  lanes_t            a_q;
  logic [31:0]       cn_elem_q;
  logic [15:0]       row_pos_q;       // position in the innermost row (reduce, scan)
  lanes_t            acc_q;
  logic [Lanes-1:0][Quad-1:0][31:0] tbuf_q;  // transpose block: [lane][element in block]
  logic [QuadW-1:0]  tp_pos_q;        // element of the block being captured
  logic              emit_q;          // emitting a transposed block
  logic [QuadW-1:0]  emit_j_q;
  logic [31:0]       produced_q;      // dst elements pushed
  idx_t              wr_idx_q;
  lanes_t            sr_q;            // stochastic-rounding state per lane
  lanes_t            act_acc_q;       // activation's FP32 sum, tensor_scalar_reduce's fold
  logic              acc_pending_q;   // the sum or fold is still to be written
  logic              gen_q;           // memset, iota: elements generated, nothing read
  logic [7:0]        wait_q;          // start-up cycles left (iota, affine_select)
  lanes_t            lane_off_q;      // iota, affine_select: channel_multiplier x partition index
  bn_regs_t          bn_q;
  logic [1:0]        bn_t_q;          // bn_aggr: position in the (count, mean, M2) triple
  bn_phase_e         bn_phase_q;
  logic [3:0]        bn_cnt_q;        // division cycles left
  lanes_t            quot1_q, quot2_q;
  isa_ve_error_e         err_q;
  ve_counters_t      cnt_q;

  // response buffer and write buffer
  logic   rsp_valid, rsp_pop, rsp_in_ready;
  lanes_t rsp_data;
  logic   wrf_push, wrf_ready, wrf_valid;
  wr_entry_t wrf_in, wrf_out;

  nc_fifo #(.T(lanes_t), .Depth(RspDepth)) u_rsp_fifo (
    .clk_i, .rst_ni,
    .in_valid_i(rd_rsp_valid_i), .in_ready_o(rsp_in_ready), .in_data_i(rd_rsp_data_i),
    .out_valid_o(rsp_valid), .out_ready_i(rsp_pop), .out_data_o(rsp_data));

  nc_fifo #(.T(wr_entry_t), .Depth(2)) u_wr_fifo (
    .clk_i, .rst_ni,
    .in_valid_i(wrf_push), .in_ready_o(wrf_ready), .in_data_i(wrf_in),
    .out_valid_o(wrf_valid), .out_ready_i(wr_ready_i), .out_data_o(wrf_out));

  // ---------------------------------------------------------------------------------------
  // Read sequencer
  // ---------------------------------------------------------------------------------------
  logic rd_fire;
  always_comb begin
    rd_valid_o = state_q == StRun && rd_phase_q != PhDone && 32'(inflight_q) < RspDepth
              && wait_q == '0;
    rd_space_o = 1'b0;
    rd_bytes_o = 3'd4;
    rd_addr_o = '0;
    unique case (rd_phase_q)
      PhScalar0: rd_addr_o = AddrW'(in_q.s0);
      PhScalar1: rd_addr_o = AddrW'(in_q.s1);
      default: begin
        if (rd_second_q) begin
          rd_space_o = in_q.src1.space;
          rd_bytes_o = dtype_bytes(in_q.in1);
          rd_addr_o = walk_addr(rd_idx1_q, in_q.src1, rd_bytes_o);
        end else begin
          rd_space_o = in_q.src0.space;
          rd_bytes_o = dtype_bytes(in_q.in0);
          rd_addr_o = walk_addr(rd_idx0_q, in_q.src0, rd_bytes_o);
          if (perf_q) rd_bytes_o = 3'd4;
        end
      end
    endcase
  end
  assign rd_fire = rd_valid_o && rd_ready_i;

  // ---------------------------------------------------------------------------------------
  // Lane sequencer: what the response at the head means and what it produces
  // ---------------------------------------------------------------------------------------
  assign elem_step = perf_q ? 32'd2 : 32'd1;

  logic   row_first, row_last, block_last, cn_produce, cn_step;
  lanes_t raw0, raw1, result, wdata;
  logic [31:0] affine_base;  // iota, affine_select: offset + sum(step[d] * i[d]) of this element
  always_comb begin
    row_first = row_pos_q == '0;
    row_last = row_pos_q == in_q.src0.count[0] - 16'd1;
    block_last = tp_pos_q == QuadW'(Quad - 1);
    // Consume the head response when it is there (or generate the next element) and a write,
    // if this step makes one, fits.
    cn_step = state_q == StRun && !emit_q && wait_q == '0 && wrf_ready
           && (gen_q ? cn_elem_q != n_src_q : rsp_valid);
    cn_produce = 1'b0;
    if (cn_phase_q == PhElements) begin
      unique case (in_q.opcode)
        IsaTensorTensor, IsaTensorTensorScan, IsaScalarTensorTensor: cn_produce = cn_second_q;
        IsaTensorReduce: cn_produce = row_last;
        IsaTranspose, IsaBnStats, IsaBnAggr: cn_produce = 1'b0;
        default:            cn_produce = 1'b1;
      endcase
    end
    raw0 = two_q ? a_q : rsp_data;
    raw1 = rsp_data;
    // the element produced is dst's element wr_idx_q (one write per element consumed)
    affine_base = 32'(in_q.offset);
    for (int d = 0; d < 4; d++)
      affine_base = affine_base + 32'($signed(in_q.step[d])) * 32'(wr_idx_q[d]);
  end
  assign rsp_pop = cn_step && !gen_q;

  // ---------------------------------------------------------------------------------------
  // Statistics (bn_stats, bn_aggr): per-element update, the divider, the outputs
  // ---------------------------------------------------------------------------------------
  // rtl/vector/README.md "Statistics" has the order of the FP32 operations (the model's too).
  logic        bn_update;
  bn_regs_t    bn_next;
  lanes_t      div_out, bn_out;
  logic [31:0] n_even, n_odd;   // FP32 counts of bn_stats's even and odd elements
  assign n_even = int32_to_fp32((n_src_q + 32'd1) >> 1);
  assign n_odd = int32_to_fp32(n_src_q >> 1);
  assign bn_update = is_stats(in_q.opcode) && cn_step && cn_phase_q == PhElements;

  function automatic logic [31:0] fp32_sub(logic [31:0] a, logic [31:0] b);
    return fp32_add_unit(a, {~b[31], b[30:0]});
  endfunction

  always_comb begin
    logic [31:0] v, k, d, cd;
    logic        first;
    bn_next = bn_q;
    {v, k, d, cd, first} = '0;
    if (bn_update) begin
      for (int l = 0; l < int'(Lanes); l++) begin
        v = lane_value(in_q.in0, rsp_data[l] & storage_mask(in_q.in0), 1'b0);
        if (in_q.opcode == IsaBnStats) begin
          first = cn_elem_q < 32'd2;
          k = first ? v : bn_q[l][cn_elem_q[0] ? 3 : 0];
          d = fp32_sub(v, k);
          bn_next[l][cn_elem_q[0] ? 3 : 0] = k;
          bn_next[l][cn_elem_q[0] ? 4 : 1] =
              fp32_add_unit(first ? '0 : bn_q[l][cn_elem_q[0] ? 4 : 1], d);
          bn_next[l][cn_elem_q[0] ? 5 : 2] =
              fp32_add_unit(first ? '0 : bn_q[l][cn_elem_q[0] ? 5 : 2], fp32_mul_unit(d, d));
        end else begin
          first = cn_elem_q < 32'd3;
          unique case (bn_t_q)
            2'd0: bn_next[l][0] = v;
            2'd1: begin
              k = first ? v : bn_q[l][1];
              d = fp32_sub(v, k);
              cd = fp32_mul_unit(bn_q[l][0], d);
              bn_next[l][1] = k;
              bn_next[l][2] = fp32_add_unit(first ? '0 : bn_q[l][2], bn_q[l][0]);
              bn_next[l][3] = fp32_add_unit(first ? '0 : bn_q[l][3], cd);
              bn_next[l][4] = fp32_add_unit(first ? '0 : bn_q[l][4], fp32_mul_unit(cd, d));
            end
            default: bn_next[l][5] = fp32_add_unit(first ? '0 : bn_q[l][5], v);
          endcase
        end
      end
    end
  end

  always_comb begin
    logic [31:0] num, den;
    div_out = '0;
    num = '0;
    den = '0;
    if (bn_phase_q == BnDiv1 || bn_phase_q == BnDiv2) begin
      for (int l = 0; l < int'(Lanes); l++) begin
        if (in_q.opcode == IsaBnStats) begin
          num = bn_phase_q == BnDiv1 ? bn_q[l][1] : bn_q[l][4];
          den = bn_phase_q == BnDiv1 ? n_even : n_odd;
        end else begin
          num = bn_phase_q == BnDiv1 ? bn_q[l][3]
              : fp32_add_unit(bn_q[l][5],
                              fp32_sub(bn_q[l][4], fp32_mul_unit(bn_q[l][3], quot1_q[l])));
          den = bn_q[l][2];
        end
        div_out[l] = fp32_div(unpack_fp32(num), unpack_fp32(den));
      end
    end
  end

  always_comb begin
    bn_out = '0;
    if (bn_phase_q == BnOut) begin
      for (int l = 0; l < int'(Lanes); l++) begin
        if (in_q.opcode == IsaBnAggr) begin
          bn_out[l] = produced_q[0] ? quot2_q[l] : fp32_add_unit(bn_q[l][1], quot1_q[l]);
        end else begin
          unique case (produced_q[2:0])
            3'd0: bn_out[l] = n_even;
            3'd1: bn_out[l] = fp32_add_unit(bn_q[l][0], quot1_q[l]);
            3'd2: bn_out[l] = fp32_sub(bn_q[l][2], fp32_mul_unit(bn_q[l][1], quot1_q[l]));
            3'd3: bn_out[l] = n_odd;
            // no odd elements (one element in all): zero count, mean and M2
            3'd4: bn_out[l] = n_src_q < 32'd2 ? '0 : fp32_add_unit(bn_q[l][3], quot2_q[l]);
            default: bn_out[l] = n_src_q < 32'd2 ? '0
                                 : fp32_sub(bn_q[l][5], fp32_mul_unit(bn_q[l][4], quot2_q[l]));
          endcase
        end
      end
    end
  end

  // The lanes: decode, two ALUs, the output cast. Each lane is the same function of its
  // operands (written as a loop so that Verilator builds Lanes copies of one block).
  // Their result is used only on a cycle that steps, emits a transposed block or writes a
  // statistic; on any other cycle the loop is skipped (zeros), which is what keeps an idle
  // engine cheap to simulate.
  logic lanes_used;
  assign lanes_used = cn_step || emit_q || bn_phase_q == BnOut;
  always_comb begin
    logic [31:0] v0, v1, ax, ay, a_res, bx, by, b_res, r, start, rnd, hi_v, hi_a, hi_r, affine;
    logic [31:0] cast_lo;
    logic [15:0] cast_hi;
    logic        active;
    {v0, v1, ax, ay, a_res, bx, by, b_res, r, start, rnd, hi_v, hi_a, hi_r, affine} = '0;
    {cast_lo, cast_hi, active} = '0;
    result = '0;
    wdata = '0;
    if (lanes_used) for (int l = 0; l < int'(Lanes); l++) begin
      v0 = lane_value(in_q.in0, raw0[l] & storage_mask(in_q.in0), intc_q);  // low half in perf mode
      v1 = lane_value(in_q.in1, raw1[l] & storage_mask(in_q.in1), intc_q);
      affine = '0;
      if (Scalar) begin
        // activation lane: func(x * scale + bias)
        r = act_eval(in_q.act_func, fp32_add_unit(fp32_mul_unit(v0, s0_q[l]), s1_q[l]));
      end else begin
        start = row_first ? s0_q[l] : acc_q[l];
        ax = v0;
        ay = v1;
        bx = '0;
        by = '0;
        unique case (in_q.opcode)
          IsaTensorScalar, IsaScalarTensorTensor, IsaTensorScalarReduce: begin
            ax = (in_q.reverse0 && in_q.op0 != 4'(AluOpBypass)) ? s0_q[l] : v0;
            ay = (in_q.reverse0 && in_q.op0 != 4'(AluOpBypass)) ? v0 : s0_q[l];
          end
          IsaTensorReduce: begin
            ax = acc_q[l];
            ay = v0;
          end
          IsaTensorTensorScan: begin
            ax = start;
            ay = v0;
          end
          default: ;
        endcase
        a_res = ve_alu(in_q.op0, ax, ay, intc_q);
        if (in_q.opcode == IsaTensorScalar) begin
          bx = (in_q.reverse1 && in_q.op1 != 4'(AluOpBypass)) ? s1_q[l] : a_res;
          by = (in_q.reverse1 && in_q.op1 != 4'(AluOpBypass)) ? a_res : s1_q[l];
        end else if (in_q.opcode == IsaScalarTensorTensor) begin
          bx = in_q.reverse1 ? v1 : a_res;
          by = in_q.reverse1 ? a_res : v1;
        end else begin
          bx = a_res;
          by = v1;
        end
        b_res = ve_alu(in_q.op1, bx, by, intc_q);
        affine = affine_base + lane_off_q[l];
        unique case (in_q.opcode)
          IsaTensorTensor, IsaTensorScalarReduce: r = a_res;
          IsaTensorScalar, IsaTensorTensorScan, IsaScalarTensorTensor: r = b_res;
          IsaTensorReduce:                    r = row_first ? v0 : a_res;
          IsaIota:                            r = int32_to_fp32(affine);
          IsaAffineSelect:                    r = compare_with_zero(in_q.cmp_op, affine) ? v0
                                                                                     : in_q.value;
          IsaBnStats, IsaBnAggr:              r = bn_out[l];
          default:                               r = v0;
        endcase
      end
      result[l] = r;
      active = 32'(l) >= 32'(in_q.start_partition)
            && 32'(l) < 32'(in_q.start_partition) + 32'(in_q.partitions);
      rnd = sr_next(sr_q[l]);
      cast_lo = fp32_to_dtype(r, in_q.out, in_q.stochastic, in_q.saturate, rnd);
      // Performance mode: the odd element of the pair, in the upper half of the word, through a
      // second tensor_scalar datapath (copy: both operations bypass). Evaluated only in that
      // mode, so a simulator does not run the second datapath for every other instruction.
      cast_hi = '0;
      if (perf_q) begin
        hi_v = lane_value(in_q.in0, {16'd0, raw0[l][31:16]}, 1'b0);
        hi_a = in_q.opcode == IsaTensorScalar
               ? scalar_stage(in_q.op0, in_q.reverse0, hi_v, s0_q[l]) : hi_v;
        hi_r = in_q.opcode == IsaTensorScalar
               ? scalar_stage(in_q.op1, in_q.reverse1, hi_a, s1_q[l]) : hi_a;
        cast_hi = 16'(fp32_to_dtype(hi_r, in_q.out, in_q.stochastic, in_q.saturate,
                                    sr_next(rnd)));
      end
      if (!active) wdata[l] = '0;
      else if (perf_q) wdata[l] = {cast_hi, cast_lo[15:0]};
      else if (in_q.opcode == IsaShuffle)
        wdata[l] = rsp_data[(l / int'(Quad)) * int'(Quad) + int'(in_q.shuffle[l % int'(Quad)])]
                   & storage_mask(in_q.out);
      else if (in_q.opcode == IsaTranspose)
        wdata[l] = tbuf_q[(l / int'(Quad)) * int'(Quad) + int'(emit_j_q)][l % int'(Quad)];
      else if (in_q.opcode == IsaMemset) wdata[l] = in_q.value;
      else if (intc_q || (in_q.opcode == IsaIota && !nc_pkg::is_float_dtype(in_q.out)))
        wdata[l] = clamp_int(intc_q ? r : affine, in_q.out);
      else wdata[l] = cast_lo;
    end
  end

  // An element write (from the lanes or a transposed block), or the activation's sum after the
  // last element.
  logic   wrf_push_elem, wrf_push_acc;
  lanes_t acc_data;
  assign wrf_push_elem = (cn_step && cn_produce) || (emit_q && wrf_ready)
      || (bn_phase_q == BnOut && produced_q != n_dst_q && wrf_ready);
  assign wrf_push_acc = state_q == StRun && acc_pending_q && produced_q == n_dst_q && wrf_ready;
  assign wrf_push = wrf_push_elem || wrf_push_acc;
  always_comb begin
    for (int l = 0; l < int'(Lanes); l++) acc_data[l] = wr_mask_o[l] ? act_acc_q[l] : '0;
  end
  assign wrf_in = wrf_push_acc
      ? '{space: 1'b0, bytes: 3'd4, addr: in_q.acc_addr, data: acc_data}
      : '{space: in_q.dst.space, bytes: perf_q ? 3'd4 : dtype_bytes(in_q.out),
          addr: walk_addr(wr_idx_q, in_q.dst, dtype_bytes(in_q.out)), data: wdata};

  // ---------------------------------------------------------------------------------------
  // Sequential logic
  // ---------------------------------------------------------------------------------------
  isa_ve_error_e check_err;
  logic      finish;
  assign check_err = check(in_q);
  assign finish = state_q == StRun && produced_q == n_dst_q && !acc_pending_q && !wrf_valid;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= StIdle;
      in_q <= '0;
      intc_q <= 1'b0;
      two_q <= 1'b0;
      perf_q <= 1'b0;
      n_src_q <= '0;
      n_dst_q <= '0;
      rd_phase_q <= PhDone;
      rd_second_q <= 1'b0;
      rd_elem_q <= '0;
      rd_idx0_q <= '0;
      rd_idx1_q <= '0;
      inflight_q <= '0;
      cn_phase_q <= PhDone;
      cn_second_q <= 1'b0;
      cn_elem_q <= '0;
      row_pos_q <= '0;
      tp_pos_q <= '0;
      emit_q <= 1'b0;
      emit_j_q <= '0;
      produced_q <= '0;
      wr_idx_q <= '0;
      acc_pending_q <= 1'b0;
      gen_q <= 1'b0;
      wait_q <= '0;
      bn_t_q <= '0;
      bn_phase_q <= BnOff;
      bn_cnt_q <= '0;
      err_q <= VeErrorNone;
      cnt_q <= '0;
    end else begin
      inflight_q <= inflight_q + InflightW'(rd_fire) - InflightW'(rsp_pop);
      if (state_q != StIdle) cnt_q.busy <= cnt_q.busy + 32'd1;
      if (rd_valid_o && !rd_ready_i) cnt_q.rd_stall <= cnt_q.rd_stall + 32'd1;
      if (wr_valid_o && !wr_ready_i) cnt_q.wr_stall <= cnt_q.wr_stall + 32'd1;
      if (state_q == StRun && rd_phase_q != PhDone && 32'(inflight_q) >= RspDepth)
        cnt_q.credit_stall <= cnt_q.credit_stall + 32'd1;
      if (wr_valid_o && wr_ready_i) cnt_q.elements <= cnt_q.elements + 32'd1;

      unique case (state_q)
        StIdle: if (cmd_valid_i) begin
          in_q <= cmd_i;
          state_q <= StCheck;
        end
        StCheck: begin
          intc_q <= integer_class(in_q);
          two_q <= uses_src1(in_q.opcode);
          perf_q <= perf_mode_en_i && perf_mode(in_q);
          gen_q <= generates(in_q.opcode);
          n_src_q <= source_elements(in_q);
          n_dst_q <= dst_elements(in_q);
          if (check_err != VeErrorNone) begin
            state_q <= StIdle;
            cnt_q.refused <= cnt_q.refused + 32'd1;
            if (err_q == VeErrorNone) err_q <= check_err;
          end else begin
            state_q <= StRun;
            // Per-partition scalars are read first, in order, then the elements.
            rd_phase_q <= generates(in_q.opcode) ? PhDone : first_phase(in_q);
            cn_phase_q <= first_phase(in_q);
            wait_q <= in_q.opcode == IsaIota ? IotaStartup
                    : in_q.opcode == IsaAffineSelect ? AffineStartup : '0;
            bn_t_q <= '0;
            bn_phase_q <= BnOff;
            rd_second_q <= 1'b0;
            rd_elem_q <= '0;
            rd_idx0_q <= '0;
            rd_idx1_q <= '0;
            cn_second_q <= 1'b0;
            cn_elem_q <= '0;
            row_pos_q <= '0;
            tp_pos_q <= '0;
            emit_q <= 1'b0;
            emit_j_q <= '0;
            produced_q <= '0;
            wr_idx_q <= '0;
            acc_pending_q <= writes_acc(in_q);
          end
        end
        StRun: begin
          if (wait_q != '0) wait_q <= wait_q - 8'd1;
          // statistics: the two divisions after the last element, then the outputs
          unique case (bn_phase_q)
            BnOff: if (is_stats(in_q.opcode) && cn_elem_q == n_src_q) begin
              bn_phase_q <= BnDiv1;
              bn_cnt_q <= 4'(DivCycles - 1);
            end
            BnDiv1, BnDiv2: begin
              bn_cnt_q <= bn_cnt_q - 4'd1;
              if (bn_cnt_q == '0) begin
                bn_phase_q <= bn_phase_q == BnDiv1 ? BnDiv2 : BnOut;
                bn_cnt_q <= 4'(DivCycles - 1);
              end
            end
            default: ;
          endcase
          if (bn_update && in_q.opcode == IsaBnAggr) bn_t_q <= bn_t_q == 2'd2 ? 2'd0 : bn_t_q + 2'd1;
          // read sequencer
          if (rd_fire) begin
            unique case (rd_phase_q)
              PhScalar0: rd_phase_q <= after_scalar0(in_q);
              PhScalar1: rd_phase_q <= PhElements;
              default: begin
                if (two_q && !rd_second_q) begin
                  rd_second_q <= 1'b1;
                end else begin
                  rd_second_q <= 1'b0;
                  rd_idx0_q <= next_idx(rd_idx0_q, in_q.src0, perf_q);
                  rd_idx1_q <= next_idx(rd_idx1_q, in_q.src1, 1'b0);
                  rd_elem_q <= rd_elem_q + elem_step;
                  if (rd_elem_q + elem_step == n_src_q) rd_phase_q <= PhDone;
                end
              end
            endcase
          end
          // lane sequencer
          if (cn_step) begin
            unique case (cn_phase_q)
              PhScalar0: cn_phase_q <= after_scalar0(in_q);
              PhScalar1: cn_phase_q <= PhElements;
              default: begin
                if (two_q && !cn_second_q) begin
                  cn_second_q <= 1'b1;
                end else begin
                  cn_second_q <= 1'b0;
                  cn_elem_q <= cn_elem_q + elem_step;
                  row_pos_q <= row_last ? '0 : row_pos_q + 16'd1;
                  if (in_q.opcode == IsaTranspose) begin
                    tp_pos_q <= block_last ? '0 : tp_pos_q + QuadW'(1);
                    if (block_last) emit_q <= 1'b1;
                  end
                end
              end
            endcase
          end
          if (emit_q && wrf_ready) begin
            emit_j_q <= emit_j_q + QuadW'(1);
            if (emit_j_q == QuadW'(Quad - 1)) emit_q <= 1'b0;
          end
          if (wrf_push_elem) begin
            produced_q <= produced_q + elem_step;
            wr_idx_q <= next_idx(wr_idx_q, in_q.dst, perf_q);
          end
          if (wrf_push_acc) acc_pending_q <= 1'b0;
          if (finish) begin
            state_q <= StIdle;
            rd_phase_q <= PhDone;
            cn_phase_q <= PhDone;
            bn_phase_q <= BnOff;
            cnt_q.executed <= cnt_q.executed + 32'd1;
          end
        end
        default: state_q <= StIdle;
      endcase
    end
  end

  // Lane registers without reset (loaded before use in every instruction).
  always_ff @(posedge clk_i) begin
    if (state_q == StCheck) begin
      for (int l = 0; l < int'(Lanes); l++) begin
        s0_q[l] <= in_q.s0;
        s1_q[l] <= in_q.s1;
        sr_q[l] <= sr_init(in_q.seed, l);
        lane_off_q[l] <= (32'(l) - 32'(in_q.start_partition)) * 32'(in_q.channel_multiplier);
      end
    end
    if (bn_update) bn_q <= bn_next;
    if (bn_phase_q == BnDiv1 && bn_cnt_q == '0) quot1_q <= div_out;
    if (bn_phase_q == BnDiv2 && bn_cnt_q == '0) quot2_q <= div_out;
    if (cn_step) begin
      if (cn_phase_q == PhScalar0) s0_q <= rsp_data;
      if (cn_phase_q == PhScalar1) s1_q <= rsp_data;
      if (cn_phase_q == PhElements) begin
        if (two_q && !cn_second_q) a_q <= rsp_data;
        else acc_q <= result;
        if (Scalar) begin
          for (int l = 0; l < int'(Lanes); l++)
            act_acc_q[l] <= cn_elem_q == '0 ? result[l] : fp32_add_unit(act_acc_q[l], result[l]);
        end else if (in_q.opcode == IsaTensorScalarReduce) begin
          for (int l = 0; l < int'(Lanes); l++)
            act_acc_q[l] <= cn_elem_q == '0 ? result[l] : ve_alu(in_q.op1, act_acc_q[l], result[l], 1'b0);
        end
        if (in_q.opcode == IsaTranspose) begin
          for (int l = 0; l < int'(Lanes); l++) tbuf_q[l][tp_pos_q] <= rsp_data[l];
        end
      end
    end
    if (wrf_push_elem) begin
      for (int l = 0; l < int'(Lanes); l++)
        sr_q[l] <= perf_q ? sr_next(sr_next(sr_q[l])) : sr_next(sr_q[l]);
    end
  end

  // ---------------------------------------------------------------------------------------
  // Outputs
  // ---------------------------------------------------------------------------------------
  assign cmd_ready_o = state_q == StIdle;
  assign done_valid_o = (state_q == StCheck && check_err != VeErrorNone) || finish;
  assign done_tag_o = in_q.tag;
  assign done_error_o = state_q == StCheck ? check_err : VeErrorNone;
  assign wr_valid_o = wrf_valid;
  assign wr_space_o = wrf_out.space;
  assign wr_addr_o = wrf_out.addr;
  assign wr_bytes_o = wrf_out.bytes;
  assign wr_data_o = wrf_out.data;
  always_comb begin
    for (int l = 0; l < int'(Lanes); l++) begin
      wr_mask_o[l] = 32'(l) >= 32'(in_q.start_partition)
                  && 32'(l) < 32'(in_q.start_partition) + 32'(in_q.partitions);
    end
  end
  assign idle_o = state_q == StIdle;
  assign err_o = err_q;
  assign counters_o = cnt_q;

  // Lane 0 as seen in waves (waves/vector_engine.gtkw, scalar_engine.gtkw): its operands as
  // FP32/int32, its scalar operands (scale and bias), the result before the output cast, and
  // the element it writes.
  logic [31:0] probe_v0, probe_v1, probe_s0, probe_s1, probe_result, probe_wdata;
  assign probe_s0 = s0_q[0];
  assign probe_s1 = s1_q[0];
  assign probe_v0 = lane_value(in_q.in0, raw0[0] & storage_mask(in_q.in0), intc_q);
  assign probe_v1 = lane_value(in_q.in1, raw1[0] & storage_mask(in_q.in1), intc_q);
  assign probe_result = result[0];
  assign probe_wdata = wdata[0];

  // ---------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------
  `NC_ASSERT_HANDSHAKE(VeCmdStable, cmd_valid_i, cmd_ready_o, cmd_i)
  `NC_ASSERT_HANDSHAKE(VeRdReqStable, rd_valid_o, rd_ready_i,
                       {rd_space_o, rd_addr_o, rd_bytes_o})
  `NC_ASSERT_HANDSHAKE(VeWrStable, wr_valid_o, wr_ready_i,
                       {wr_space_o, wr_addr_o, wr_bytes_o, wr_data_o})
  // A response only for a request in flight; the response buffer then always has room.
  `NC_ASSERT(VeRspHasRequest, rd_rsp_valid_i |-> inflight_q != '0 && rsp_in_ready)
  `NC_ASSERT(VeInflightBound, 32'(inflight_q) <= RspDepth)
  `NC_ASSERT(VeNoWriteWhenIdle, state_q == StIdle |-> !wrf_valid && !rd_valid_o)
  `NC_ASSERT(VeProducedBound, state_q == StRun |-> produced_q <= n_dst_q)
endmodule
