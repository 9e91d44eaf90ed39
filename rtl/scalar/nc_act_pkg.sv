// The scalar engine's activation functions as logic, bit for bit model/vector/activation.cpp: each
// is a fixed sequence of IEEE binary32 operations (nc_fp_pkg's fp32_add / fp32_mul, round to
// nearest even) plus exponent arithmetic. The lane shares one exponential, one reciprocal and
// one reciprocal square root between the functions (nc_scalar_engine). rtl/scalar/README.md
// gives each approximation and its measured error.
package nc_act_pkg;
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;

  localparam logic [31:0] One = 32'h3F80_0000, Two = 32'h4000_0000, Half = 32'h3F00_0000;
  localparam logic [31:0] OneAndHalf = 32'h3FC0_0000, MinusTwo = 32'hC000_0000;
  localparam logic [31:0] Log2e = 32'h3FB8_AA3B, MinusLn2Hi = 32'hBF31_7200;
  localparam logic [31:0] MinusLn2Lo = 32'hB5BF_BE8E;
  localparam logic [31:0] ExpMax = 32'h42B2_0000, ExpMin = 32'hC2D0_0000;  // 89, -104
  localparam logic [7:0][31:0] ExpPoly = {32'h3950_0D01, 32'h3AB6_0B61, 32'h3C08_8889,
      32'h3D2A_AAAB, 32'h3E2A_AAAB, 32'h3F00_0000, 32'h3F80_0000, 32'h3F80_0000};
  localparam logic [31:0] RecipSeedA = 32'h4034_B4B5, RecipSeedB = 32'hBFF0_F0F1;
  localparam logic [31:0] RsqrtSeedA = 32'h3FA3_0F28, RsqrtSeedB = 32'hBE95_F61A;
  localparam logic [31:0] InvSqrt2 = 32'h3F35_04F3, TanhSmall = 32'h3E00_0000;
  localparam logic [3:0][31:0] TanhPoly = {32'h3CB3_27A4, 32'hBD5D_0DD1, 32'h3E08_8889,
      32'hBEAA_AAAB};
  localparam logic [31:0] GeluC = 32'h3D37_2713, GeluK = 32'h3FCC_422A, FarLeft = 32'h4180_0000;
  localparam logic [31:0] NegZero = 32'h8000_0000, NegInf = 32'hFF80_0000;

  typedef struct packed {
    logic [31:0]       p;
    logic signed [9:0] k;
  } exp_parts_t;

  function automatic logic [31:0] mul(logic [31:0] a, logic [31:0] b);
    return fp32_mul(unpack_fp32(a), unpack_fp32(b));
  endfunction
  function automatic logic is_nan(logic [30:0] magnitude);
    return magnitude > 31'h7F80_0000;
  endfunction
  function automatic logic [31:0] pow2(logic signed [9:0] k);  // k in [-126, 127]
    return {1'b0, 8'(k + 10'sd127), 23'd0};
  endfunction
  // y * 2^s in two steps, so s may reach beyond the normal range.
  function automatic logic [31:0] scale2(logic [31:0] y, logic signed [9:0] s);
    logic signed [9:0] s1;
    s1 = s >>> 1;
    return mul(mul(y, pow2(s1)), pow2(s - s1));
  endfunction

  function automatic exp_parts_t exp_parts(logic [31:0] a_in);
    logic [31:0] a, k_bits, kf, r, p;
    exp_parts_t out;
    a = fp32_max_min(fp32_max_min(a_in, ExpMin, 1'b1), ExpMax, 1'b0);
    k_bits = fp32_to_int(mul(a, Log2e), 32, 1'b0, 32'd0);
    kf = int32_to_fp32(k_bits);
    r = fp32_add(a, mul(kf, MinusLn2Hi));
    r = fp32_add(r, mul(kf, MinusLn2Lo));
    p = ExpPoly[7];
    for (int i = 6; i >= 0; i--) p = fp32_add(mul(p, r), ExpPoly[i]);
    out.p = is_nan(a_in[30:0]) ? Fp32CanonicalNan : p;
    out.k = is_nan(a_in[30:0]) ? 10'sd0 : 10'(k_bits);
    return out;
  endfunction

  function automatic logic [31:0] reciprocal(logic [31:0] d_in);
    logic [31:0] d, mh, y;
    logic signed [9:0] e, adjust;
    if (is_nan(d_in[30:0])) return Fp32CanonicalNan;
    if (d_in[30:0] == '0) return {d_in[31], 31'h7F80_0000};
    if (d_in[30:0] == 31'h7F80_0000) return {d_in[31], 31'd0};
    d = d_in;
    adjust = '0;
    if (d[30:23] == '0) begin  // subnormal: scale up exactly
      d = mul(d, pow2(10'sd24));
      adjust = 10'sd24;
    end
    e = 10'($unsigned(d[30:23])) - 10'sd127;
    mh = {1'b0, 8'd126, d[22:0]};  // the significand / 2, in [0.5, 1)
    y = fp32_add(RecipSeedA, mul(RecipSeedB, mh));
    for (int i = 0; i < 3; i++) y = mul(y, fp32_add(Two, mul({1'b1, mh[30:0]}, y)));
    return {d_in[31], 31'(scale2(y, adjust - (e + 10'sd1)))};
  endfunction

  function automatic logic [31:0] rsqrt(logic [31:0] x_in);
    logic [31:0] x, m, m_low, y, h;
    logic signed [9:0] e, j, adjust;
    logic odd;
    if (is_nan(x_in[30:0])) return Fp32CanonicalNan;
    if (x_in[30:0] == '0) return {x_in[31], 31'h7F80_0000};
    if (x_in[31]) return Fp32CanonicalNan;
    if (x_in[30:0] == 31'h7F80_0000) return 32'd0;
    x = x_in;
    adjust = '0;
    if (x[30:23] == '0) begin
      x = mul(x, pow2(10'sd24));
      adjust = 10'sd12;
    end
    e = 10'($unsigned(x[30:23])) - 10'sd127;
    j = e >>> 1;
    odd = e[0];
    m = {1'b0, 8'd127 + 8'(odd), x[22:0]};
    m_low = {1'b0, 8'd127, x[22:0]};
    y = fp32_add(RsqrtSeedA, mul(RsqrtSeedB, m_low));
    if (odd) y = mul(y, InvSqrt2);
    h = mul(m, Half);
    for (int i = 0; i < 3; i++) y = mul(y, fp32_add(OneAndHalf, {1'b1, 31'd0} ^ mul(mul(h, y), y)));
    return scale2(y, adjust - j);
  endfunction

  // func(t) for a pre-activation value t, as a lane computes it: the shared units are called
  // once each whatever the function (their arguments chosen by the function). Kept a function
  // in the simulator rather than inlined at every call: the inlined copies were a third of the
  // scalar engine's C++, and the engine runs GELU 2.1x faster without them (tests/README.md,
  // "Build time").
  function automatic logic [31:0] act_eval(logic [3:0] f, logic [31:0] t);
    /*verilator no_inline_task*/
    logic [31:0] abs_t, t2, t3, w, q, exp_arg, e_val, d, recip_arg, r, rs, tanh_small, res;
    logic        t_nan, far_left_sigmoid, far_left_gelu;
    exp_parts_t  ep;
    abs_t = {1'b0, t[30:0]};
    t_nan = is_nan(t[30:0]);
    t2 = mul(t, t);
    t3 = mul(t2, t);
    w = mul(GeluK, fp32_add(t, mul(GeluC, t3)));
    far_left_sigmoid = t[31] && abs_t > FarLeft;
    far_left_gelu = w[31] && {1'b0, w[30:0]} > FarLeft;
    unique case (f)
      4'(ActFuncExp):     exp_arg = t;
      4'(ActFuncTanh):    exp_arg = mul(abs_t, MinusTwo);
      4'(ActFuncSigmoid): exp_arg = far_left_sigmoid ? t : {~t[31], t[30:0]};
      4'(ActFuncGelu):    exp_arg = far_left_gelu ? w : {~w[31], w[30:0]};
      default:        exp_arg = t;
    endcase
    ep = exp_parts(exp_arg);
    e_val = scale2(ep.p, ep.k);
    d = fp32_add(One, e_val);
    recip_arg = f == 4'(ActFuncReciprocal) ? t : d;
    r = reciprocal(recip_arg);
    rs = rsqrt(t);
    q = TanhPoly[3];
    for (int i = 2; i >= 0; i--) q = fp32_add(mul(q, t2), TanhPoly[i]);
    tanh_small = fp32_add(t, mul(t3, q));
    unique case (f)
      4'(ActFuncIdentity): res = t_nan ? Fp32CanonicalNan : t;
      4'(ActFuncExp):      res = e_val;
      4'(ActFuncTanh):
        if (t_nan) res = Fp32CanonicalNan;
        else if (abs_t < TanhSmall) res = tanh_small;
        else res = {t[31], 31'(mul(fp32_add(One, {~e_val[31], e_val[30:0]}), r))};
      4'(ActFuncSigmoid):
        if (t_nan) res = Fp32CanonicalNan;
        else if (far_left_sigmoid) res = e_val;
        else res = r;
      4'(ActFuncGelu):
        if (t_nan) res = Fp32CanonicalNan;
        else if (t == NegInf) res = NegZero;
        else if (far_left_gelu && {1'b0, w[30:0]} > {1'b0, ExpMin[30:0]}) res = NegZero;
        else if (far_left_gelu) res = scale2(mul(t, ep.p), ep.k);
        else res = mul(t, r);
      4'(ActFuncRelu):     res = fp32_max_min(t, 32'd0, 1'b1);
      4'(ActFuncSqrt):
        if (t_nan || (t[31] && t[30:0] != '0)) res = Fp32CanonicalNan;
        else if (t[30:0] == '0 || t[30:0] == 31'h7F80_0000) res = t;
        else res = mul(t, rs);
      4'(ActFuncRsqrt):      res = rs;
      4'(ActFuncReciprocal): res = r;
      4'(ActFuncSquare):     res = t2;
      default:           res = Fp32CanonicalNan;
    endcase
    return res;
  endfunction

endpackage
