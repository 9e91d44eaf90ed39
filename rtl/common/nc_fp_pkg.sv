// Floating-point arithmetic of ncore as synthesizable logic, bit-exact with model/common/numerics.h:
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
  // A NaN keeps its sign and payload and gets the quiet bit, as model/common/numerics.cpp does.
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

  // Any tensor-engine input type (nc_pkg::isa_d_type_e numbering) to FP32 bits. TF32 ignores the
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

  // IEEE binary32 quotient, round-to-nearest-even (the vector engine's divider: bn_stats and
  // bn_aggr). The significands' long division gives 27 or 28 quotient bits and a remainder,
  // which becomes the sticky bit.
  function automatic logic [31:0] fp32_div(fp_unpacked_t a, fp_unpacked_t b);
    /*verilator no_inline_task*/
    logic               sign;
    logic [50:0]        num;
    logic [27:0]        quot, q28;
    logic               rem_nz;
    logic signed [11:0] e_lead, biased;
    logic [5:0]         sh;
    logic [73:0]        ext;
    sign = a.sign ^ b.sign;
    if (a.is_nan || b.is_nan || (a.is_inf && b.is_inf) || (a.is_zero && b.is_zero))
      return Fp32CanonicalNan;
    if (a.is_inf || b.is_zero) return {sign, 8'hFF, 23'd0};
    if (a.is_zero || b.is_inf) return {sign, 31'd0};
    num = {a.sig, 27'd0};
    quot = 28'(num / {27'd0, b.sig});                   // in (2^26, 2^28)
    rem_nz = (num % {27'd0, b.sig}) != '0;
    q28 = quot[27] ? quot : quot << 1;                  // leading one at bit 27
    e_lead = 12'(a.exp) - 12'(b.exp) - 12'(!quot[27]);
    biased = e_lead + 12'sd127;
    if (biased >= 12'sd1) begin
      return round_pack(sign, biased - 12'sd1, q28[27:4], q28[3], |q28[2:0] | rem_nz);
    end
    if (biased < -12'sd25) return {sign, 31'd0};
    sh = 6'(12'sd1 - biased);
    ext = {q28, 46'd0} >> sh;
    return round_pack(sign, 12'sd0, ext[73:50], ext[49], |ext[48:0] | rem_nz);
  endfunction

  // Leading zeros of a 27-bit value, by halving steps (0 gives 27), each step a select.
  function automatic logic [4:0] lzc27(logic [26:0] x);
    logic [31:0] v;
    logic        z16, z8, z4, z2, z1;
    v = {x, 5'b11111};
    z16 = v[31:16] == '0;
    v = z16 ? v << 16 : v;
    z8 = v[31:24] == '0;
    v = z8 ? v << 8 : v;
    z4 = v[31:28] == '0;
    v = z4 ? v << 4 : v;
    z2 = v[31:30] == '0;
    v = z2 ? v << 2 : v;
    z1 = !v[31];
    return {z16, z8, z4, z2, z1};
  endfunction

  // IEEE binary32 sum, round-to-nearest-even, with guard, round and sticky bits.
  // The datapath is one path for an effective add and an effective subtract, written with
  // selects rather than branches on the data (operand swap, sign, carry, normalising shift), so
  // a PE holds one copy of it; only the rare special operands branch. (Written so for simulation
  // speed, it measured no faster than the branching form: tests/README.md, "Levers".)
  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    logic        a_nan, b_nan, a_inf, b_inf, swap, sign, eff_sub, carry;
    logic [31:0] larger, smaller;
    logic [7:0]  exp_larger, exp_smaller, d;
    logic [4:0]  d_clamped, lz, left_shift;
    logic [26:0] s1, s2_full, s2, lost_mask;
    logic [27:0] sum;
    logic [26:0] norm;
    logic [8:0]  exp_res, exp_norm;
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
    eff_sub = larger[31] ^ smaller[31];
    // Subnormals have exponent 1 and no hidden bit.
    exp_larger = larger[30:23] == '0 ? 8'd1 : larger[30:23];
    exp_smaller = smaller[30:23] == '0 ? 8'd1 : smaller[30:23];
    d = exp_larger - exp_smaller;
    s1 = {larger[30:23] != '0, larger[22:0], 3'b000};
    s2_full = {smaller[30:23] != '0, smaller[22:0], 3'b000};
    // A shift of 27 or more leaves only the sticky bit: (s2_full >> 27) is zero and the mask
    // then covers all of s2_full.
    d_clamped = d >= 8'd27 ? 5'd27 : 5'(d);
    lost_mask = ~(27'h7FF_FFFF << d_clamped);
    s2 = (s2_full >> d_clamped) | {26'd0, (s2_full & lost_mask) != '0};
    sum = eff_sub ? {1'b0, s1} - {1'b0, s2} : {1'b0, s1} + {1'b0, s2};
    exp_res = {1'b0, exp_larger};
    // Normalise: a carry out of an add shifts right one place (keeping the sticky bit);
    // otherwise shift left to the leading one, but not below the smallest exponent, where the
    // result is subnormal. After an add without a carry the leading one is already at bit 26
    // (or the larger operand is subnormal and exp_res - 1 = 0), so this shift is zero.
    carry = sum[27];
    lz = lzc27(sum[26:0]);
    left_shift = ({4'd0, lz} < exp_res - 9'd1) ? lz : 5'(exp_res - 9'd1);
    norm = carry ? {sum[27:2], sum[1] | sum[0]} : 27'(sum << left_shift);
    exp_norm = carry ? exp_res + 9'd1 : exp_res - {4'd0, left_shift};
    if (sum == '0) return 32'd0;                           // x - x = +0 under RNE
    // A result without its hidden bit is subnormal: biased exponent 0, exp_res - 1 = 0.
    return round_pack(sign, norm[26] ? 12'(exp_norm) - 12'sd1 : 12'sd0, norm[26:3], norm[2],
                      norm[1] | norm[0]);
  endfunction

  // The PE's multiply and add. The fast build (-DNCORE_FAST_PE=ON Verilates the array with
  // +define+NCORE_FAST_PE) has the host's FPU compute them through Verilator's $c
  // (rtl/common/nc_host_fp.h): simulation only, never the default, and proven equal to the logic
  // above by tests/test_host_fp.cpp. Every other build, synthesis included, uses the logic.
  function automatic logic [31:0] pe_mul(fp_unpacked_t a, fp_unpacked_t b);
`ifdef NCORE_FAST_PE
    return $c32("nc_host_fp::mul(", a, ", ", b, ")");
`else
    return fp32_mul(a, b);
`endif
  endfunction
  function automatic logic [31:0] pe_add(logic [31:0] a, logic [31:0] b);
`ifdef NCORE_FAST_PE
    return $c32("nc_host_fp::add(", a, ", ", b, ")");
`else
    return fp32_add(a, b);
`endif
  endfunction

  // The adder and multiplier as one shared unit that the simulator calls rather than copies in
  // at each call site: for the vector and scalar engines' lanes, which use them at dozens of
  // sites. The copies were most of those engines' C++ (tests/README.md, "Build time"). The PE
  // keeps the copied-in fp32_add and fp32_mul, which run faster there.
  // In the fast PE build (pe_mul above) these two run on the host FPU too: the NeuronCore's
  // vector and scalar engines then add and multiply as its array does.
  function automatic logic [31:0] fp32_add_unit(logic [31:0] a, logic [31:0] b);
    /*verilator no_inline_task*/
    return pe_add(a, b);
  endfunction
  function automatic logic [31:0] fp32_mul_unit(logic [31:0] a, logic [31:0] b);
    /*verilator no_inline_task*/
`ifdef NCORE_FAST_PE
    return $c32("nc_host_fp::mul_bits(", a, ", ", b, ")");
`else
    return fp32_mul(unpack_fp32(a), unpack_fp32(b));
`endif
  endfunction

  // ---- Casts out of FP32 and in from integers (the vector and scalar engines' edges) ----

  // Position of the highest set bit of a 32-bit value (0 when none is set).
  function automatic logic [4:0] lead_one32(logic [31:0] x);
    logic [4:0] pos;
    pos = '0;
    for (int i = 0; i < 32; i++) begin
      if (x[i]) pos = 5'(i);
    end
    return pos;
  endfunction

  // A signed 32-bit integer to FP32, round-to-nearest-even (exact below 2^24).
  function automatic logic [31:0] int32_to_fp32(logic [31:0] v);
    logic        sign;
    logic [31:0] mag;
    logic [4:0]  lead;
    logic [55:0] aligned;   // mag with its leading one at bit 55
    logic [24:0] rounded;   // 24-bit significand plus a carry
    logic        round_up;
    logic [7:0]  exp32;
    sign = v[31];
    mag = sign ? 32'(-v) : v;  // -2^31 stays 2^31 as an unsigned magnitude
    if (mag == '0) return 32'd0;
    lead = lead_one32(mag);
    aligned = {24'd0, mag} << (6'd55 - 6'(lead));
    round_up = aligned[31] && (aligned[30:0] != '0 || aligned[32]);
    rounded = {1'b0, aligned[55:32]} + 25'(round_up);
    exp32 = 8'(lead) + 8'd127 + 8'(rounded[24]);
    return {sign, exp32, rounded[24] ? rounded[23:1] : rounded[22:0]};
  endfunction

  // FP32 to a narrow float pattern (no container shift); the contract of model/common/numerics.h
  // from_fp32: one rounding (RNE, or stochastic: round away from zero iff the 32-bit truncated
  // discarded fraction plus `random` carries out), saturation or Inf/NaN on overflow, every
  // NaN the target's canonical NaN.
  function automatic logic [31:0] fp32_to_narrow(logic [31:0] x, int ExpBits, int ManBits,
                                                 int Bias, logic HasInf, logic stochastic,
                                                 logic saturate, logic [31:0] random);
    logic [31:0]       out_sign, emax, man_ones, max_pattern, nan_pattern, overflow_pattern;
    logic [7:0]        x_exp;
    logic [23:0]       sig;
    logic signed [11:0] lsb_exp, top_exp, min_normal_exp, target_lsb_exp, drop;
    logic [55:0]       wide, shifted;
    logic [6:0]        sh;
    logic [24:0]       q;
    logic [31:0]       frac32;
    logic              sticky, round_up;
    logic signed [11:0] biased_minus_one;
    logic [31:0]       pattern;
    out_sign = 32'(x[31]) << (ExpBits + ManBits);
    emax = (32'd1 << ExpBits) - 32'd1;
    man_ones = (32'd1 << ManBits) - 32'd1;
    max_pattern = HasInf ? (((emax - 32'd1) << ManBits) | man_ones)
                         : ((emax << ManBits) | (man_ones - 32'd1));
    nan_pattern = HasInf ? ((emax << ManBits) | (32'd1 << (ManBits - 1)))
                         : ((emax << ManBits) | man_ones);
    overflow_pattern = saturate ? (out_sign | max_pattern)
                                : (HasInf ? (out_sign | (emax << ManBits)) : nan_pattern);
    x_exp = x[30:23];
    if (x_exp == 8'hFF) return x[22:0] != '0 ? nan_pattern : overflow_pattern;
    if (x[30:0] == '0) return out_sign;
    sig = {x_exp != '0, x[22:0]};
    lsb_exp = (x_exp == '0 ? 12'sd1 : 12'($unsigned(x_exp))) - 12'sd150;
    top_exp = lsb_exp + (sig[23] ? 12'sd23 : 12'($unsigned(lead_one23(sig[22:0]))));
    min_normal_exp = 12'(1 - Bias);
    target_lsb_exp = (top_exp > min_normal_exp ? top_exp : min_normal_exp) - 12'(ManBits);
    drop = target_lsb_exp - lsb_exp;  // > 0 for every narrower target
    wide = {sig, 32'd0};
    sh = drop > 12'sd56 ? 7'd56 : 7'(drop);
    shifted = wide >> sh;
    sticky = (wide & ~({56{1'b1}} << sh)) != '0;
    q = {1'b0, shifted[55:32]};
    frac32 = shifted[31:0];
    // frac32 + random carries out of 32 bits exactly when frac32 > ~random
    round_up = stochastic ? (frac32 > ~random)
                          : (frac32[31] && (frac32[30:0] != '0 || sticky || q[0]));
    q = q + 25'(round_up);
    biased_minus_one = target_lsb_exp + 12'(ManBits) - min_normal_exp;
    pattern = top_exp >= min_normal_exp ? (32'(biased_minus_one) << ManBits) + 32'(q) : 32'(q);
    if (pattern > max_pattern) return overflow_pattern;
    return out_sign | pattern;
  endfunction

  // FP32 to an integer type (sign-extended patterns masked to the storage width): the
  // magnitude rounds (RNE or stochastic as above), then the sign, then clamping. NaN -> 0.
  function automatic logic [31:0] fp32_to_int(logic [31:0] x, int Bits, logic stochastic,
                                              logic [31:0] random);
    logic signed [33:0] lo, hi, r;
    logic [7:0]         x_exp;
    logic [23:0]        sig;
    logic signed [11:0] shift;   // fixed = |x| * 2^32 = sig * 2^shift
    logic [63:0]        fixed;
    logic               sticky, round_up;
    logic [32:0]        mag;
    logic [31:0]        mask;
    lo = -(34'sd1 <<< (Bits - 1));
    hi = (34'sd1 <<< (Bits - 1)) - 34'sd1;
    x_exp = x[30:23];
    if (x_exp == 8'hFF && x[22:0] != '0) return 32'd0;
    mask = Bits == 32 ? 32'hFFFF_FFFF : (32'd1 << Bits) - 32'd1;
    if (x_exp >= 8'd158) return 32'(x[31] ? lo : hi) & mask;  // |x| >= 2^31, Inf included
    sig = {x_exp != '0, x[22:0]};
    shift = (x_exp == '0 ? 12'sd1 : 12'($unsigned(x_exp))) - 12'sd150 + 12'sd32;
    if (shift >= 0) begin
      fixed = {40'd0, sig} << shift[5:0];
      sticky = 1'b0;
    end else if (shift > -12'sd25) begin
      fixed = {40'd0, sig} >> (-shift);
      sticky = ({40'd0, sig} & ~({64{1'b1}} << (-shift))) != '0;
    end else begin
      fixed = '0;
      sticky = sig != '0;
    end
    round_up = stochastic ? (fixed[31:0] > ~random)
                          : (fixed[31] && (fixed[30:0] != '0 || sticky || fixed[32]));
    mag = {1'b0, fixed[63:32]} + 33'(round_up);
    r = x[31] ? -$signed({1'b0, mag}) : $signed({1'b0, mag});
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    return 32'(r) & mask;
  endfunction

  // FP32 to any type (nc_pkg::isa_d_type_e numbering), storage bits in the low bits.
  function automatic logic [31:0] fp32_to_dtype(logic [31:0] x, logic [3:0] dtype,
                                                logic stochastic, logic saturate,
                                                logic [31:0] random);
    /*verilator no_inline_task*/
    unique case (dtype)
      4'd0: begin  // fp32: NaN canonicalises, Inf saturates when asked to
        if (x[30:23] == 8'hFF && x[22:0] != '0) return Fp32CanonicalNan;
        if (x[30:0] == 31'h7F80_0000 && saturate) return {x[31], 31'h7F7F_FFFF};
        return x;
      end
      4'd1: return fp32_to_narrow(x, 8, 10, 127, 1'b1, stochastic, saturate, random) << 13;
      4'd2: return fp32_to_narrow(x, 8, 7, 127, 1'b1, stochastic, saturate, random);
      4'd3: return fp32_to_narrow(x, 5, 10, 15, 1'b1, stochastic, saturate, random);
      4'd4: return fp32_to_narrow(x, 4, 3, 7, 1'b0, stochastic, saturate, random);
      4'd5: return fp32_to_narrow(x, 5, 2, 15, 1'b1, stochastic, saturate, random);
      4'd6: return fp32_to_int(x, 8, stochastic, random);
      4'd7: return fp32_to_int(x, 16, stochastic, random);
      4'd8: return fp32_to_int(x, 32, stochastic, random);
      default: return '0;
    endcase
  endfunction

  // Any type to FP32: the floats exactly (decode_to_fp32), the integers sign-extended and
  // converted (INT32 rounds to nearest even above 2^24).
  function automatic logic [31:0] any_to_fp32(logic [3:0] dtype, logic [31:0] bits);
    unique case (dtype)
      4'd6: return int32_to_fp32({{24{bits[7]}}, bits[7:0]});
      4'd7: return int32_to_fp32({{16{bits[15]}}, bits[15:0]});
      4'd8: return int32_to_fp32(bits);
      default: return decode_to_fp32(dtype, bits);
    endcase
  endfunction

  // FP32 max and min: a NaN operand gives the canonical NaN; -0 orders below +0.
  function automatic logic [31:0] fp32_order_key(logic [31:0] b);
    return b[31] ? ~b : {1'b1, b[30:0]};
  endfunction
  function automatic logic [31:0] fp32_max_min(logic [31:0] a, logic [31:0] b, logic is_max);
    if ((a[30:23] == 8'hFF && a[22:0] != '0) || (b[30:23] == 8'hFF && b[22:0] != '0))
      return Fp32CanonicalNan;
    return ((fp32_order_key(a) >= fp32_order_key(b)) == is_max) ? a : b;
  endfunction

endpackage
