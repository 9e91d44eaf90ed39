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
// Inputs arrive unskewed, one whole vector (all rows) per cycle. The vector that entered d
// cycles ago is at every PE with k + m = d (its wavefront is that anti-diagonal). No moving
// data shifts between PEs in the model, only the partial sums move: each column group keeps
// the last Rows + Cols vectors skewed, as the operand registers hold them in silicon, so that a
// column's PEs read their elements from one contiguous run (see g_col). Each element carries
// its weight-bank select, so every PE switches banks exactly when the first vector of the next
// MultiplyMoving reaches it.
//
// Output: out_sum_o[m] holds the finished sum of the vector that entered Rows + m cycles ago.
//
// Modes: each vector carries the operation every PE applies to it (nc_tensor_pkg::te_pe_op_e):
//   dense       sum + w0 * x0
//   double-row  sum + (w0 * x0 + w1 * x1)   (FP8: two K rows per PE, the pair summed first)
//   transpose   x0 nonzero ? the stationary's raw bits (w_aux) : sum   (no arithmetic)
//   sparse      sum + w0 * x, x the element its tag (w_aux[3:0]) selects among the G moving
//               rows of its group: partition 4 * (k / 4) + tag % 4, replica tag / 4; a tag
//               >= G leaves the sum unchanged.
// A vector carries up to MaxReps elements per row (replicas: the second K row of double-row,
// the G / 4 rows a sparse group's partition holds).
//
// Tiling: the array is a Segs x Segs grid of segments. A vector may carry the data of several
// MMs on disjoint tiles; each row segment's metadata says whether it holds data, its weight
// bank, and the column segments of its MM's tile. A PE takes part only when its row segment
// holds data for its column segment; otherwise it passes the sum from above unchanged, so
// each column adds exactly the products of its own MM's rows.
//
// Column slices: built with Sliced, an instance computes only the col_count_i columns from
// col_base_i on (its weights, sums and outputs are those columns', the outputs from
// out_sum_o[0]; every input is the whole array's). A simulator can then run the array as a few
// such models, each stepped by its own thread and sized at run time (tb/tensor/array_slices.h;
// rtl/tensor/README.md, "Column slices"): a sum only moves down its column, so slices exchange
// nothing. Inside the engine the one instance is whole (Sliced = 0, both inputs unused).
//
// The array is written as loops over state arrays (a PE function applied to every element)
// rather than Rows x Cols module instances: Verilator then builds a 128 x 128 array in a few
// minutes instead of hours.
module nc_systolic_array
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;
  import nc_tensor_pkg::*;
#(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128,
  parameter int unsigned Sliced = 0,
  // One PE whose operands and sums are brought out as plain signals, for waves: the big
  // state arrays are too large for a wave dump.
  parameter int unsigned ProbeRow = 0,
  parameter int unsigned ProbeCol = 0
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  // With Sliced: the first column of this slice and how many it computes (held for a whole run).
  input  logic [$clog2(Cols+1)-1:0]      col_base_i,
  input  logic [$clog2(Cols+1)-1:0]      col_count_i,
  // Up to LsCols columns of a weight bank per cycle (LoadStationary), one per lane.
  input  logic [LsCols-1:0]              w_we_i,
  input  logic                           w_row_en_i [Rows],     // rows of the LS's tile
  input  logic                           w_bank_i,
  input  logic [$clog2(Cols)-1:0]        w_col_i [LsCols],
  input  fp_unpacked_t                   w_col_data_i [LsCols][Rows],
  input  fp_unpacked_t                   w_col_data1_i [LsCols][Rows],  // double-row: second K row
  input  logic [31:0]                    w_col_aux_i [LsCols][Rows],    // transpose bits or sparse tag
  // One moving vector per cycle, unskewed; bubbles are all-zero vectors.
  input  te_row_meta_t                   in_row_i [Segs],
  input  te_pe_op_e                      in_op_i,
  input  isa_te_sparsity_e                   in_sparsity_i,
  input  fp_unpacked_t                   in_data_i [MaxReps][Rows],
  // Bottom of each column of the slice (FP32 bits); with Sliced, of column col_base_i + j at j.
  output logic [31:0]                    out_sum_o [Cols]
);
  localparam int unsigned Depth = Rows + Cols;  // oldest vector still in the array
  localparam int unsigned PtrW = $clog2(Depth);
  localparam int unsigned RowW = $clog2(Rows);
  localparam int unsigned SegW = $clog2(Segs);

  // State is kept in unpacked arrays: Verilator then reads one element where a packed
  // vector would have it copy and shift a whole row.
  // Weights: [bank][column][row], written one column a cycle; a column's rows are contiguous,
  // which is the order the PEs are evaluated in.
  // Indexed by the column within the slice (a slice keeps room for every column).
  fp_unpacked_t w_q [2][Cols][Rows];
  fp_unpacked_t w1_q [2][Cols][Rows];
  logic [31:0]  w_aux_q [2][Cols][Rows];

  logic [PtrW-1:0] ptr_q, ptr_d;  // slot of the entering vector's row 0 in the skewed rings

  // The whole array (inside the engine): column = slice column, no base to add and no count to
  // compare at run time (a simulator then computes every PE exactly as before slices existed).
  localparam bit Whole = Sliced == 0;
  // A sum only moves down its column, so columns are independent: the whole array is computed in
  // ColGroups blocks of columns (g_col[g]), each a clocked block with its own state, so that a
  // simulator built with threads can run them in parallel. A slice is one block (its count is
  // known only at run time; a simulator's threads take whole slices).
  localparam int unsigned ColGroups = (Whole && Cols >= 32 && Cols % 2 == 0) ? 2 : 1;
  localparam int unsigned GroupCols = Cols / ColGroups;
  localparam int unsigned ColW = (Cols > 1) ? $clog2(Cols) : 1;

  // What a PE needs to know about the vector passing it, besides its data: the metadata of
  // the vector's row segment and the vector's operation.
  typedef struct packed {
    te_row_meta_t     row;
    te_pe_op_e        op;
    isa_te_sparsity_e sparsity;
  } pe_ctrl_t;

  always_comb begin
    ptr_d = (ptr_q == PtrW'(Depth - 1)) ? '0 : ptr_q + 1'b1;
  end

  // An LS writes the rows of its tile and keeps the rest of each column (other tiles' weights);
  // a slice takes the lanes whose column is one of its own (w_we_mine, at w_col_mine).
  logic [LsCols-1:0] w_we_mine;
  logic [ColW-1:0]   w_col_mine [LsCols];
  always_comb begin
    for (int unsigned l = 0; l < LsCols; l++) begin
      automatic int unsigned offset = Whole ? int'(w_col_i[l])
                                            : int'(w_col_i[l]) - int'(col_base_i);  // wraps below the base
      w_we_mine[l] = w_we_i[l] && (Whole || offset < 32'(col_count_i));
      w_col_mine[l] = ColW'(offset);
    end
  end
  // Slot (a + b) mod Depth, for a, b < Depth.
  function automatic logic [PtrW-1:0] slot_add(int unsigned a, int unsigned b);
    return PtrW'((a + b >= Depth) ? a + b - Depth : a + b);
  endfunction
  // Slot (a - b) mod Depth, for a, b < Depth.
  function automatic logic [PtrW-1:0] slot_sub(int unsigned a, int unsigned b);
    return PtrW'((a >= b) ? a - b : a + Depth - b);
  endfunction

  // The new partial sum of PE(k, m), given the sum from the PE above, the PE's control, its
  // moving element x0 (replica 0 of its row) and the operand its mode adds: replica 1 for
  // double-row, the element its tag picks for sparse. This is the PE function. Every mode
  // shares one multiplier and one adder (double-row adds its second product first), so the
  // simulator holds one copy of the FP32 logic per PE rather than one per mode.
  // m is the PE's column in the array, ml in the slice.
  function automatic logic [31:0] pe_sum(logic [RowW-1:0] k, int unsigned m, logic [ColW-1:0] ml, logic [31:0] above,
                                         pe_ctrl_t ctrl, fp_unpacked_t x0, fp_unpacked_t x_mode);
    automatic logic [SegW-1:0] seg_col = SegW'(m * Segs / Cols);
    automatic logic            sel = ctrl.row.wsel;
    automatic logic [31:0]     product;
    if (!ctrl.row.valid || !ctrl.row.cols[seg_col]) return above;  // not this column's MM
    if (ctrl.op == PeTranspose) return x0.is_zero ? above : w_aux_q[sel][ml][k];
    if (ctrl.op == PeSparse) begin
      if ({1'b0, w_aux_q[sel][ml][k][3:0]} >= 5'd4 + 5'({ctrl.sparsity, 2'b00}))
        return above;  // a tag past the group adds nothing
      product = pe_mul(w_q[sel][ml][k], x_mode);
    end else begin
      product = pe_mul(w_q[sel][ml][k], x0);
    end
    if (ctrl.op == PeDoubleRow) product = pe_add(product, pe_mul(w1_q[sel][ml][k], x_mode));
    return pe_add(above, product);
  endfunction

`ifdef NCORE_FAST_PE
  // The fast build's arithmetic equals the logic's only in the default floating-point
  // environment: checked once, before the first cycle (an exception out of eval()).
  initial $c("nc_host_fp::require_environment();");
`endif

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ptr_q <= '0;
    else ptr_q <= ptr_d;
  end

  // Bubbles entered in a row, saturating at Depth. The sum at PE(k, m) belongs to the vector
  // that entered k + m cycles ago and is zero when that vector was a bubble, so once Depth
  // bubbles have entered and another is entering, every sum is zero and stays zero: the PEs
  // are then not evaluated at all (an idle array costs the simulation almost nothing).
  logic [PtrW:0] bubbles_q;
  logic          in_any_valid, array_idle;
  always_comb begin
    in_any_valid = 1'b0;
    for (int unsigned s = 0; s < Segs; s++) in_any_valid = in_any_valid | in_row_i[s].valid;
  end
  assign array_idle = bubbles_q == (PtrW + 1)'(Depth) && !in_any_valid;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) bubbles_q <= '0;
    else if (in_any_valid) bubbles_q <= '0;
    else if (bubbles_q != (PtrW + 1)'(Depth)) bubbles_q <= bubbles_q + 1'b1;
  end

  // One write per lane, spelled out (the simulator takes no delayed array writes in a loop). A
  // lane's new column (its tile's rows from the LS, the rest kept) is made in the clocked block,
  // only for a lane that writes: as an always_comb it was remade at every evaluation, for every
  // lane, in every column slice (tb/tensor/array_slices.h).
  always_ff @(posedge clk_i) begin
    fp_unpacked_t new_w [LsCols][Rows];
    fp_unpacked_t new_w1 [LsCols][Rows];
    logic [31:0]  new_aux [LsCols][Rows];
    for (int unsigned l = 0; l < LsCols; l++)
      if (w_we_mine[l])
        for (int unsigned k = 0; k < Rows; k++) begin
          new_w[l][k] = w_row_en_i[k] ? w_col_data_i[l][k] : w_q[w_bank_i][w_col_mine[l]][k];
          new_w1[l][k] = w_row_en_i[k] ? w_col_data1_i[l][k] : w1_q[w_bank_i][w_col_mine[l]][k];
          new_aux[l][k] = w_row_en_i[k] ? w_col_aux_i[l][k] : w_aux_q[w_bank_i][w_col_mine[l]][k];
        end
    if (w_we_mine[0]) begin
      w_q[w_bank_i][w_col_mine[0]] <= new_w[0];
      w1_q[w_bank_i][w_col_mine[0]] <= new_w1[0];
      w_aux_q[w_bank_i][w_col_mine[0]] <= new_aux[0];
    end
    if (w_we_mine[1]) begin
      w_q[w_bank_i][w_col_mine[1]] <= new_w[1];
      w1_q[w_bank_i][w_col_mine[1]] <= new_w1[1];
      w_aux_q[w_bank_i][w_col_mine[1]] <= new_aux[1];
    end
    if (w_we_mine[2]) begin
      w_q[w_bank_i][w_col_mine[2]] <= new_w[2];
      w1_q[w_bank_i][w_col_mine[2]] <= new_w1[2];
      w_aux_q[w_bank_i][w_col_mine[2]] <= new_aux[2];
    end
    if (w_we_mine[3]) begin
      w_q[w_bank_i][w_col_mine[3]] <= new_w[3];
      w1_q[w_bank_i][w_col_mine[3]] <= new_w1[3];
      w_aux_q[w_bank_i][w_col_mine[3]] <= new_aux[3];
    end
  end
  if (LsCols != 4) begin : g_ls_cols_spelled_out
    $error("nc_systolic_array writes LsCols = 4 lanes, spelled out above");
  end

  // Each column group is one clocked block holding its sums and its own copy of the moving
  // vectors, all static variables of the block (they hold their values from edge to edge and
  // are read only here; the bottom row and the probed PE leave the block through registers).
  //
  // Moving vectors are kept skewed, as the chain of operand registers holds them in silicon:
  // row k of the vector entering at time t is stored in slot (t + k) mod Depth, so at time T
  // every PE of column m finds its element, row k of the vector that entered T - k - m cycles
  // ago, in the one slot (T - m) mod Depth, at index k. A column's PEs then read one contiguous
  // run of memory, as they do their weights and sums. An entry lives Depth cycles, longer than
  // any vector stays in the array (k + m < Depth). The entering vector is written first, so
  // PE(0, 0) reads it like any other; the entries it overwrites are Depth cycles old.
  //
  // The PEs are evaluated in the clocked block, not in an always_comb, so the simulator runs
  // them once per clock edge with their temporaries in machine registers. Each column's sums
  // are updated in place from the bottom row up: every PE reads the sum above it before that
  // row is rewritten, which is exactly a register per PE, and no next-state copy of the array
  // is made (a simulator copies such a copy element by element).
  //
  // When the array is idle nothing is written: the last Depth vectors were bubbles, so every
  // entry already holds one.
  for (genvar g = 0; g < ColGroups; g++) begin : g_col
    logic [31:0]  bottom_q [GroupCols];
    logic [31:0]  probe_above_q, probe_own_q, probe_weight_q, probe_moving_q;
    logic         probe_wsel_q;
    te_pe_op_e    probe_op_q;
    always_ff @(posedge clk_i) begin
      logic [31:0]  ps [GroupCols][Rows];         // sums: [column in group][row]
      fp_unpacked_t xs [Depth][MaxReps][Rows];    // skewed moving elements: [slot][replica][row]
      pe_ctrl_t     cs [Depth][Rows];             // their control, skewed the same way
      logic [31:0]  bottom_d [GroupCols];
      if (!array_idle) begin
        for (int unsigned k = 0; k < Rows; k++) begin
          automatic logic [PtrW-1:0] s = slot_add(int'(ptr_q), k);
          // Replicas only for the modes that read them (double-row, sparse): a PE reads its
          // vector's replicas only under the vector's own operation, so the registers of the
          // others may keep what they held (a write per replica per row is a cache line each).
          xs[s][0][k] = in_data_i[0][k];
          if (in_op_i == PeDoubleRow || in_op_i == PeSparse)
            for (int unsigned r = 1; r < MaxReps; r++) xs[s][r][k] = in_data_i[r][k];
          cs[s][k] = '{row: in_row_i[k * Segs / Rows], op: in_op_i, sparsity: in_sparsity_i};
        end
        for (int unsigned j = 0; j < GroupCols; j++) begin
          automatic int unsigned     ml = g * GroupCols + j;
          automatic int unsigned     m = Whole ? ml : int'(col_base_i) + ml;
          automatic logic [PtrW-1:0] s = slot_sub(int'(ptr_q), m);
          if (!Whole && j >= 32'(col_count_i)) break;  // past the slice's columns
          for (int unsigned r = 0; r < Rows; r++) begin
            automatic int unsigned k = Rows - 1 - r;
            automatic pe_ctrl_t        ctrl = cs[s][k];
            automatic fp_unpacked_t    x_mode = xs[s][0][k];
            if (ctrl.op == PeDoubleRow) begin
              x_mode = xs[s][1][k];
            end else if (ctrl.op == PeSparse) begin
              // The tag picks row kt (of the PE's group of four) of the same vector, which is
              // kt - k slots along, and its replica.
              automatic logic [3:0]  tag = w_aux_q[ctrl.row.wsel][ml][k][3:0];
              automatic int unsigned kt = (k & ~32'd3) | 32'(tag[1:0]);
              x_mode = xs[slot_add(int'(slot_sub(int'(s), k)), kt)][tag[3:2]][RowW'(kt)];
            end
            ps[j][k] = pe_sum(RowW'(k), m, ColW'(ml), (k == 0) ? 32'd0 : ps[j][k-1], ctrl, xs[s][0][k],
                              x_mode);
          end
          bottom_d[j] = ps[j][Rows-1];
        end
        bottom_q <= bottom_d;
        if (Whole && ProbeCol / GroupCols == g) begin
          automatic logic [PtrW-1:0] s = slot_sub(int'(ptr_q), ProbeCol);
          automatic logic            wsel = cs[s][ProbeRow].row.wsel;
          // The inner select keeps the unused index in range when ProbeRow is 0.
          probe_above_q <= (ProbeRow == 0) ? 32'd0
                         : ps[ProbeCol % GroupCols][(ProbeRow == 0) ? 0 : ProbeRow - 1];
          probe_own_q <= ps[ProbeCol % GroupCols][ProbeRow];
          probe_weight_q <= pack_fp32(w_q[wsel][ProbeCol][ProbeRow]);
          probe_moving_q <= pack_fp32(xs[s][0][ProbeRow]);
          probe_wsel_q <= wsel;
          probe_op_q <= cs[s][ProbeRow].op;
        end
      end
    end
    for (genvar j = 0; j < GroupCols; j++) begin : g_out
      assign out_sum_o[g * GroupCols + j] = bottom_q[j];
    end
  end

  // The probed PE, as seen in waves (waves/tensor_engine.gtkw): what it used on the last clock
  // edge (weight bank, operation, weight, moving element) and the sum it made. probe_sum_in is
  // the sum the PE above made on that edge, which the probed PE adds to on the next one.
  logic [31:0] probe_weight, probe_moving, probe_sum_in, probe_sum_q;
  logic        probe_wsel;
  te_pe_op_e   probe_op;
  assign probe_wsel = g_col[ProbeCol / GroupCols].probe_wsel_q;
  assign probe_op = g_col[ProbeCol / GroupCols].probe_op_q;
  assign probe_weight = g_col[ProbeCol / GroupCols].probe_weight_q;
  assign probe_moving = g_col[ProbeCol / GroupCols].probe_moving_q;
  assign probe_sum_in = g_col[ProbeCol / GroupCols].probe_above_q;
  assign probe_sum_q = g_col[ProbeCol / GroupCols].probe_own_q;
endmodule
