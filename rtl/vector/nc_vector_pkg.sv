// The vector engine's instruction and lane arithmetic (rtl/vector/README.md has the
// semantics). ALU operations and refusal codes are the ISA's (isa_alu_op_e, isa_ve_error_e).
package nc_vector_pkg;
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;

  localparam int AddrW = 18;  // byte address within a partition (SBUF up to 256 KiB)

  // The engine's control state (in the package so that the harness's register upsets can
  // name it).
  typedef enum logic [1:0] { StIdle, StCheck, StRun } ve_state_e;

  // The instruction is the ISA's (isa_ve_instr_t: the ve payload with its access patterns
  // isa_access_t, the tag echoed on completion, and the opcode).

  typedef struct packed {
    logic [31:0] busy;          // cycles with an instruction in the engine
    logic [31:0] rd_stall;      // cycles a read request waited for the port
    logic [31:0] wr_stall;      // cycles a write waited for the port
    logic [31:0] credit_stall;  // cycles reads waited for response buffer space
    logic [31:0] elements;      // elements written
    logic [31:0] executed;      // instructions completed
    logic [31:0] refused;       // instructions refused
  } ve_counters_t;

  function automatic logic is_bitwise(logic [3:0] op);
    return op >= 4'(AluOpAnd);
  endfunction

  // The lane ALU: FP32 (float class) or int32 (integer class) operands.
  function automatic logic [31:0] ve_alu(logic [3:0] op, logic [31:0] a, logic [31:0] b,
                                         logic integer_class);
    /*verilator no_inline_task*/
    if (integer_class) begin
      unique case (op)
        4'(AluOpAnd):  return a & b;
        4'(AluOpOr):   return a | b;
        4'(AluOpXor):  return a ^ b;
        4'(AluOpShl):  return a << b[4:0];
        4'(AluOpLshr): return a >> b[4:0];
        4'(AluOpAshr): return 32'($signed(a) >>> b[4:0]);
        default:     return a;
      endcase
    end
    unique case (op)
      4'(AluOpAdd): return fp32_add_unit(a, b);
      4'(AluOpSubtract): return fp32_add_unit(a, {~b[31], b[30:0]});
      4'(AluOpMultiply): return fp32_mul_unit(a, b);
      4'(AluOpMax): return fp32_max_min(a, b, 1'b1);
      4'(AluOpMin): return fp32_max_min(a, b, 1'b0);
      default:    return a;
    endcase
  endfunction

  // One tensor_scalar stage: bypass passes the tensor-side value x whatever `reverse` says.
  function automatic logic [31:0] scalar_stage(logic [3:0] op, logic reverse, logic [31:0] x,
                                               logic [31:0] s);
    if (op == 4'(AluOpBypass)) return x;
    return reverse ? ve_alu(op, s, x, 1'b0) : ve_alu(op, x, s, 1'b0);
  endfunction

  // affine_select's predicate: cmp_op(v, 0) on the signed int32 affine value.
  function automatic logic compare_with_zero(logic [2:0] op, logic [31:0] v);
    unique case (op)
      3'(CmpOpEqual):        return v == '0;
      3'(CmpOpNotEqual):     return v != '0;
      3'(CmpOpGreater):      return $signed(v) > 32'sd0;
      3'(CmpOpGreaterEqual): return $signed(v) >= 32'sd0;
      3'(CmpOpLess):         return $signed(v) < 32'sd0;
      default:               return $signed(v) <= 32'sd0;
    endcase
  endfunction

  // An element as the lane sees it: FP32, or sign-extended int32 in the integer class.
  function automatic logic [31:0] lane_value(logic [3:0] dtype, logic [31:0] raw,
                                             logic integer_class);
    /*verilator no_inline_task*/
    if (!integer_class) return any_to_fp32(dtype, raw);
    unique case (dtype)
      4'd6:    return {{24{raw[7]}}, raw[7:0]};
      4'd7:    return {{16{raw[15]}}, raw[15:0]};
      default: return raw;
    endcase
  endfunction

  // An int32 result clamped to an integer output type.
  function automatic logic [31:0] clamp_int(logic [31:0] v, logic [3:0] dtype);
    unique case (dtype)
      4'd6: begin
        if ($signed(v) > 32'sd127) return 32'h7F;
        if ($signed(v) < -32'sd128) return 32'h80;
        return {24'd0, v[7:0]};
      end
      4'd7: begin
        if ($signed(v) > 32'sd32767) return 32'h7FFF;
        if ($signed(v) < -32'sd32768) return 32'h8000;
        return {16'd0, v[15:0]};
      end
      default: return v;
    endcase
  endfunction

  function automatic logic [31:0] storage_mask(logic [3:0] dtype);
    unique case (dtype)
      4'd0, 4'd1, 4'd8: return 32'hFFFF_FFFF;
      4'd2, 4'd3, 4'd7: return 32'h0000_FFFF;
      default:          return 32'h0000_00FF;
    endcase
  endfunction

  // The per-lane stochastic-rounding generator (model/vector/vector_engine.h ve_sr_init/next).
  function automatic logic [31:0] sr_init(logic [31:0] seed, int lane);
    logic [31:0] s;
    s = seed ^ (32'(lane + 1) * 32'h9E37_79B9);
    s = s ^ (s >> 16);        // MurmurHash3's finaliser: unrelated states for
    s = s * 32'h85EB_CA6B;    // neighbouring seeds and lanes
    s = s ^ (s >> 13);
    s = s * 32'hC2B2_AE35;
    s = s ^ (s >> 16);
    return s == '0 ? 32'd1 : s;
  endfunction
  function automatic logic [31:0] sr_next(logic [31:0] x);
    logic [31:0] y;
    y = x ^ (x << 13);
    y = y ^ (y >> 17);
    return y ^ (y << 5);
  endfunction

endpackage
