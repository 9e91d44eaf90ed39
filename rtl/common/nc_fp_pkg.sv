// Floating-point arithmetic of ncore as synthesizable logic, bit-exact with model/numerics.h:
//   - decode of every input type to FP32 (exact),
//   - FP32 x FP32 multiply and FP32 + FP32 add, IEEE binary32 round-to-nearest-even,
//     subnormals kept, every NaN result the canonical NaN 32'h7FC0_0000.
// The multiplier takes operands unpacked at the array edge (significand normalised even for
// subnormal inputs), so a PE needs no leading-zero count on its multiply path.
package nc_fp_pkg;

  localparam logic [31:0] Fp32CanonicalNan = 32'h7FC0_0000;

  // exp is the unbiased exponent of sig[23], which is set unless the value is zero/Inf/NaN.
  typedef struct packed {
    logic               is_nan;
    logic               is_inf;
    logic               is_zero;
    logic               sign;
    logic signed [9:0]  exp;
    logic [23:0]        sig;
  } fp_unpacked_t;

  // Position of the highest set bit of a 23-bit value (0 when none is set).
  function automatic logic [4:0] lead_one23(logic [22:0] x);
    logic [4:0] pos;
    pos = '0;
    for (int i = 0; i < 23; i++) begin
      if (x[i]) pos = 5'(i);
    end
    return pos;
  endfunction

  // A narrow float (ExpBits <= 5, ManBits <= 10) to FP32; every such value is exact in FP32.
  // A NaN keeps its sign and payload and gets the quiet bit, as model/numerics.cpp does.
  function automatic logic [31:0] narrow_to_fp32(logic sign, logic [4:0] e, logic [9:0] m,
                                                 int ManBits, int Bias, logic [4:0] EMax,
                                                 logic HasInf);
    logic [9:0] man_all_ones;
    logic       is_nan, is_inf;
    logic [4:0] lead;
    logic [7:0] exp32;
    logic [22:0] frac32;
    man_all_ones = 10'((11'd1 << ManBits) - 11'd1);
    is_nan = HasInf ? (e == EMax && m != '0) : (e == EMax && m == man_all_ones);
    is_inf = HasInf && e == EMax && m == '0;
    lead = lead_one23({13'd0, m});
    if (is_nan) begin
      return {sign, 8'hFF, 23'({13'd0, m} << (23 - ManBits)) | 23'h40_0000};
    end else if (is_inf) begin
      return {sign, 8'hFF, 23'd0};
    end else if (e == '0 && m == '0) begin
      return {sign, 31'd0};
    end else if (e == '0) begin
      // subnormal: m * 2^(1 - Bias - ManBits); its leading bit becomes FP32's hidden bit
      exp32 = 8'(int'(lead) + 1 - Bias - ManBits + 127);
      frac32 = 23'({13'd0, m} << (23 - int'(lead)));
      return {sign, exp32, frac32};
    end else begin
      exp32 = 8'(int'(e) - Bias + 127);
      frac32 = 23'({13'd0, m} << (23 - ManBits));
      return {sign, exp32, frac32};
    end
  endfunction

  // Any tensor-engine input type (nc_pkg::dtype_e numbering) to FP32 bits. TF32 ignores the
  // 13 container bits below its mantissa. Integer types are not tensor-engine inputs: zero.
  function automatic logic [31:0] decode_to_fp32(logic [3:0] dtype, logic [31:0] bits);
    unique case (dtype)
      4'd0: return bits;                                   // fp32
      4'd1: return {bits[31:13], 13'd0};                   // tf32
      4'd2: return {bits[15:0], 16'd0};                    // bf16
      4'd3: return narrow_to_fp32(bits[15], bits[14:10], bits[9:0], 10, 15, 5'd31, 1'b1);
      4'd4: return narrow_to_fp32(bits[7], {1'b0, bits[6:3]}, {7'd0, bits[2:0]}, 3, 7,
                                  5'd15, 1'b0);            // e4m3: no Inf
      4'd5: return narrow_to_fp32(bits[7], bits[6:2], {8'd0, bits[1:0]}, 2, 15, 5'd31, 1'b1);
      default: return '0;
    endcase
  endfunction

  function automatic fp_unpacked_t unpack_fp32(logic [31:0] bits);
    fp_unpacked_t u;
    logic [7:0]  e;
    logic [22:0] m;
    logic [4:0]  lead;
    e = bits[30:23];
    m = bits[22:0];
    lead = lead_one23(m);
    u.sign = bits[31];
    u.is_nan = e == 8'hFF && m != '0;
    u.is_inf = e == 8'hFF && m == '0;
    u.is_zero = e == '0 && m == '0;
    if (e != '0) begin
      u.exp = 10'(signed'({2'b0, e}) - 10'sd127);
      u.sig = {1'b1, m};
    end else begin
      // subnormal m * 2^-149: normalise so that sig[23] holds the leading one
      u.exp = 10'(signed'({5'b0, lead}) - 10'sd149);
      u.sig = 24'({1'b0, m} << (23 - int'(lead)));
    end
    return u;
  endfunction

  // Back to FP32 bits (exact: an unpacked value is always an FP32 value). For waves and
  // checkers; the datapath never needs it.
  function automatic logic [31:0] pack_fp32(fp_unpacked_t u);
    logic signed [9:0] sh;
    if (u.is_nan) return Fp32CanonicalNan;
    if (u.is_inf) return {u.sign, 8'hFF, 23'd0};
    if (u.is_zero) return {u.sign, 31'd0};
    if (u.exp >= -10'sd126) return {u.sign, 8'(u.exp + 10'sd127), u.sig[22:0]};
    sh = -10'sd126 - u.exp;  // subnormal: 1..23 places right
    return {u.sign, 8'd0, 23'(u.sig >> sh)};
  endfunction

  // Rounds sign * q_ext to FP32, where q_ext holds the significand's 24 bits above a guard bit
  // and a sticky bit, and biased_minus_one is the biased exponent minus one of a normal
  // result (its hidden bit is q[23]); a subnormal result has biased_minus_one = 0 and
  // q[23] = 0. The carry of the rounding increment bumps the exponent for free.
  function automatic logic [31:0] round_pack(logic sign, logic signed [11:0] biased_minus_one,
                                             logic [23:0] q, logic guard, logic sticky);
    logic [31:0] pattern;
    logic        round_up;
    round_up = guard & (sticky | q[0]);
    if (biased_minus_one >= 12'sd254) return {sign, 8'hFF, 23'd0};  // far past the range
    pattern = {1'b0, 8'(biased_minus_one), 23'd0} + {8'd0, q} + {31'd0, round_up};
    if (pattern >= 32'h7F80_0000) return {sign, 8'hFF, 23'd0};       // overflow: Inf
    return {sign, pattern[30:0]};
  endfunction

  // IEEE binary32 product, round-to-nearest-even.
  function automatic logic [31:0] fp32_mul(fp_unpacked_t a, fp_unpacked_t b);
    logic              sign;
    logic [47:0]       prod, p48;
    logic signed [11:0] e_lead, biased;
    logic [5:0]        sh;
    logic [73:0]       ext;
    sign = a.sign ^ b.sign;
    if (a.is_nan || b.is_nan || (a.is_inf && b.is_zero) || (a.is_zero && b.is_inf))
      return Fp32CanonicalNan;
    if (a.is_inf || b.is_inf) return {sign, 8'hFF, 23'd0};
    if (a.is_zero || b.is_zero) return {sign, 31'd0};
    prod = {24'd0, a.sig} * {24'd0, b.sig};             // in [2^46, 2^48)
    p48 = prod[47] ? prod : prod << 1;                  // leading one at bit 47
    e_lead = 12'(a.exp) + 12'(b.exp) + 12'(prod[47]);   // exponent of that leading one
    biased = e_lead + 12'sd127;
    if (biased >= 12'sd1) begin
      return round_pack(sign, biased - 12'sd1, p48[47:24], p48[23], |p48[22:0]);
    end
    // Subnormal result: shift right by 1 - biased more; below 2^-150 it rounds to zero.
    if (biased < -12'sd25) return {sign, 31'd0};
    sh = 6'(12'sd1 - biased);
    ext = {p48, 26'd0} >> sh;
    return round_pack(sign, 12'sd0, ext[73:50], ext[49], |ext[48:0]);
  endfunction

  // Leading zeros of a 27-bit value, by halving steps (0 gives 27).
  function automatic logic [4:0] lzc27(logic [26:0] x);
    logic [31:0] v;
    logic [4:0]  n;
    v = {x, 5'b11111};
    n = '0;
    if (v[31:16] == '0) begin n = n + 5'd16; v = v << 16; end
    if (v[31:24] == '0) begin n = n + 5'd8;  v = v << 8;  end
    if (v[31:28] == '0) begin n = n + 5'd4;  v = v << 4;  end
    if (v[31:30] == '0) begin n = n + 5'd2;  v = v << 2;  end
    if (v[31] == 1'b0)  begin n = n + 5'd1; end
    return n;
  endfunction

  // IEEE binary32 sum, round-to-nearest-even, with guard, round and sticky bits.
  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    logic        a_nan, b_nan, a_inf, b_inf, swap, sign;
    logic [31:0] larger, smaller;
    logic [7:0]  exp_larger, exp_smaller, d;
    logic [26:0] s1, s2_full, s2, lost_mask;
    logic [27:0] sum;
    logic [8:0]  exp_res;
    logic [4:0]  lz, shift;
    a_nan = a[30:23] == 8'hFF && a[22:0] != '0;
    b_nan = b[30:23] == 8'hFF && b[22:0] != '0;
    a_inf = a[30:0] == 31'h7F80_0000;
    b_inf = b[30:0] == 31'h7F80_0000;
    if (a_nan || b_nan || (a_inf && b_inf && a[31] != b[31])) return Fp32CanonicalNan;
    if (a_inf) return a;
    if (b_inf) return b;
    if (a[30:0] == '0 && b[30:0] == '0) return {a[31] & b[31], 31'd0};
    swap = b[30:0] > a[30:0];
    larger = swap ? b : a;
    smaller = swap ? a : b;
    sign = larger[31];
    // Subnormals have exponent 1 and no hidden bit.
    exp_larger = larger[30:23] == '0 ? 8'd1 : larger[30:23];
    exp_smaller = smaller[30:23] == '0 ? 8'd1 : smaller[30:23];
    d = exp_larger - exp_smaller;
    s1 = {larger[30:23] != '0, larger[22:0], 3'b000};
    s2_full = {smaller[30:23] != '0, smaller[22:0], 3'b000};
    if (d >= 8'd27) begin
      s2 = {26'd0, s2_full != '0};
    end else begin
      lost_mask = ~(27'h7FF_FFFF << d);
      s2 = (s2_full >> d) | {26'd0, (s2_full & lost_mask) != '0};
    end
    exp_res = {1'b0, exp_larger};
    if (larger[31] == smaller[31]) begin
      sum = {1'b0, s1} + {1'b0, s2};
      if (sum[27]) begin
        sum = {1'b0, sum[27:2], sum[1] | sum[0]};
        exp_res = exp_res + 9'd1;
      end
    end else begin
      sum = {1'b0, s1} - {1'b0, s2};
      if (sum == '0) return 32'd0;                       // x - x = +0 under RNE
      lz = lzc27(sum[26:0]);
      // Normalise, but not below the smallest exponent: there the result is subnormal.
      shift = ({4'd0, lz} < exp_res - 9'd1) ? lz : 5'(exp_res - 9'd1);
      sum = sum << shift;
      exp_res = exp_res - {4'd0, shift};
    end
    // A result without its hidden bit is subnormal: biased exponent 0, exp_res - 1 = 0.
    return round_pack(sign, sum[26] ? 12'(exp_res) - 12'sd1 : 12'sd0, sum[26:3], sum[2],
                      sum[1] | sum[0]);
  endfunction

endpackage
