// Weight-stationary systolic array of Rows x Cols processing elements (PEs).
//
// PE(k, m) holds two stationary weights, w[0][k][m] and w[1][k][m] (an active and a shadow
// bank, so the next stationary loads while the current one computes). Moving element
// x[k][n] enters row k at the left edge and moves one column right per cycle; the partial
// sum of output (m, n) moves one row down per cycle:
//     psum[k][m] = psum[k-1][m] + w[k][m] * x[k][n]      (psum[-1][m] = +0)
// Each PE rounds its product and its sum to FP32 (nc_fp_pkg), so column m adds its K
// products in row order 0..Rows-1 exactly as the golden model does.
//
// Inputs arrive unskewed, one whole vector (all rows) per cycle; row k uses the vector that
// entered k cycles ago, so the wavefront of vector n is the anti-diagonal k + m. The skew is
// a ring buffer of the last Rows input vectors, not a triangle of shift registers. Each
// element carries its weight-bank select, so every PE switches banks exactly when the first
// vector of the next MultiplyMoving reaches it.
//
// Output: out_sum_o[m] holds the finished sum of the vector that entered Rows + m cycles ago.
//
// The array is written as loops over state arrays (a PE function applied to every element)
// rather than Rows x Cols module instances: Verilator then builds a 128 x 128 array in a few
// minutes instead of hours.
module nc_systolic_array
  import nc_fp_pkg::*;
#(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  // One column of a weight bank per cycle (LoadStationary).
  input  logic                           w_we_i,
  input  logic                           w_bank_i,
  input  logic [$clog2(Cols)-1:0]        w_col_i,
  input  fp_unpacked_t [Rows-1:0]        w_col_data_i,
  // One moving vector per cycle, unskewed; bubbles are all-zero vectors.
  input  logic                           in_wsel_i,
  input  fp_unpacked_t [Rows-1:0]        in_data_i,
  // Bottom of each column (FP32 bits).
  output logic [31:0]                    out_sum_o [Cols]
);
  localparam int unsigned PtrW = $clog2(Rows);

  typedef struct packed {
    logic                    wsel;
    fp_unpacked_t [Rows-1:0] data;
  } skew_entry_t;

  // Weights: [bank][column] -> a packed column of Rows values, written one column a cycle.
  fp_unpacked_t [Rows-1:0] w_q [2][Cols];

  // Skew ring: entry written at ptr this cycle is read by row k, k cycles later.
  skew_entry_t     skew_q [Rows];
  logic [PtrW-1:0] ptr_q, ptr_d;

  // PE state, registered as whole arrays (next state computed in always_comb).
  fp_unpacked_t x_q [Rows][Cols];
  fp_unpacked_t x_d [Rows][Cols];
  logic         wsel_q [Rows][Cols];
  logic         wsel_d [Rows][Cols];
  logic [31:0]  ps_q [Rows][Cols];
  logic [31:0]  ps_d [Rows][Cols];

  // Left-edge input of each row: row 0 takes the entering vector, row k the one k cycles old.
  fp_unpacked_t row_x [Rows];
  logic         row_wsel [Rows];

  always_comb begin
    ptr_d = (ptr_q == PtrW'(Rows - 1)) ? '0 : ptr_q + 1'b1;
    for (int unsigned k = 0; k < Rows; k++) begin
      // Ring slot written k cycles ago (k >= 1); row 0 takes the entering vector directly.
      automatic logic [PtrW-1:0] idx = PtrW'((int'(ptr_q) >= int'(k)) ? int'(ptr_q) - k
                                                                     : int'(ptr_q) + Rows - k);
      row_x[k] = (k == 0) ? in_data_i[0] : skew_q[idx].data[k];
      row_wsel[k] = (k == 0) ? in_wsel_i : skew_q[idx].wsel;
    end
  end

  // The PE function over the whole array.
  always_comb begin
    for (int unsigned k = 0; k < Rows; k++) begin
      for (int unsigned m = 0; m < Cols; m++) begin
        automatic fp_unpacked_t x = (m == 0) ? row_x[k] : x_q[k][m-1];
        automatic logic         sel = (m == 0) ? row_wsel[k] : wsel_q[k][m-1];
        automatic logic [31:0]  above = (k == 0) ? 32'd0 : ps_q[k-1][m];
        ps_d[k][m] = fp32_add(above, fp32_mul(w_q[sel][m][k], x));
        x_d[k][m] = x;
        wsel_d[k][m] = sel;
      end
    end
  end

  always_comb begin
    for (int unsigned m = 0; m < Cols; m++) out_sum_o[m] = ps_q[Rows-1][m];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ptr_q <= '0;
    else ptr_q <= ptr_d;
  end

  always_ff @(posedge clk_i) begin
    skew_q[ptr_q] <= '{wsel: in_wsel_i, data: in_data_i};
    x_q <= x_d;
    wsel_q <= wsel_d;
    ps_q <= ps_d;
    if (w_we_i) w_q[w_bank_i][w_col_i] <= w_col_data_i;
  end
endmodule
