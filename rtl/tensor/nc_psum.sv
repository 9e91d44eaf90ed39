// PSUM: Parts partitions x Banks banks x BankElems FP32 words, one memory per partition.
//
// Write side: each partition takes at most one write a cycle from the bottom of its array
// column. An overwrite stores the tile value; an accumulate reads the word, adds in FP32
// (nc_fp_pkg::fp32_add, one rounding; pe_add, the host's FPU in the fast PE build) and stores
// the sum, all in that cycle. A half-word
// write (a transpose's 16-bit element) replaces one half of the word and keeps the other.
// Read side: one read of (bank, element) across every partition per accepted request, data
// the next cycle. A read of a bank with writes still in flight (pending_i) is a bank
// conflict: it is held off (ready low) until the bank drains, never served stale.
// External write port (the vector and scalar engines' writes to PSUM): bytes `byte_en` of one
// word in every partition of `part_mask`, taken only when the bank has no array writes in
// flight (the same rule as reads), so it never meets an array write to its word.
// After reset the memory is cleared, one word per partition per cycle (init_busy_o), so it
// powers up as +0 like the golden model.
`include "nc_assert.svh"

module nc_psum
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;
#(
  parameter int unsigned Parts = 128,
  parameter int unsigned Banks = 8,
  parameter int unsigned BankElems = 512
) (
  input  logic                                  clk_i,
  input  logic                                  rst_ni,
  output logic                                  init_busy_o,
  // writes, one per partition
  input  logic                                  wr_valid_i [Parts],
  input  logic [$clog2(Banks)-1:0]              wr_bank_i [Parts],
  input  logic [$clog2(BankElems)-1:0]          wr_elem_i [Parts],
  input  logic [1:0]                            wr_half_i [Parts],   // 0 word, 1 low, 2 high
  input  logic                                  wr_accumulate_i [Parts],
  input  logic [31:0]                           wr_data_i [Parts],
  output logic [31:0]                           wr_result_o [Parts],  // the word written
  // banks with writes in flight (from the engine's bookkeeping)
  input  logic [Banks-1:0]                      pending_i,
  // external writes: one word address, byte enables, data already in its byte lanes
  input  logic                                  ext_wr_valid_i,
  output logic                                  ext_wr_ready_o,
  input  logic [$clog2(Banks)-1:0]              ext_wr_bank_i,
  input  logic [$clog2(BankElems)-1:0]          ext_wr_elem_i,
  input  logic [3:0]                            ext_wr_byte_en_i,
  input  logic [Parts-1:0]                      ext_wr_part_mask_i,
  input  logic [31:0]                           ext_wr_data_i [Parts],
  // reads across all partitions
  input  logic                                  rd_valid_i,
  output logic                                  rd_ready_o,
  input  logic [$clog2(Banks)-1:0]              rd_bank_i,
  input  logic [$clog2(BankElems)-1:0]          rd_elem_i,
  output logic                                  rd_rsp_valid_o,
  output logic [31:0]                           rd_rsp_data_o [Parts],
  output logic                                  rd_conflict_o         // stalled this cycle
);
  localparam int unsigned Words = Banks * BankElems;
  localparam int unsigned AddrW = $clog2(Words);

  logic [31:0]      mem_q [Parts][Words];
  logic [AddrW-1:0] init_addr_q;
  logic             init_busy_q;
  logic [AddrW-1:0] wr_addr [Parts];
  logic [AddrW-1:0] rd_addr;
  logic [31:0]      rd_data_d [Parts];
  logic [31:0]      rd_data_q [Parts];
  logic             rd_rsp_valid_q;

  assign init_busy_o = init_busy_q;
  assign rd_addr = AddrW'(rd_bank_i) * AddrW'(BankElems) + AddrW'(rd_elem_i);
  logic rd_bank_pending;
  assign rd_bank_pending = pending_i[rd_bank_i];
  assign rd_conflict_o = rd_valid_i && !init_busy_q && rd_bank_pending;
  assign rd_ready_o = !init_busy_q && !rd_bank_pending;

  logic             ext_fire;
  logic [AddrW-1:0] ext_addr;
  logic [31:0]      ext_bits;     // the bytes the external write replaces
  assign ext_wr_ready_o = !init_busy_q && !pending_i[ext_wr_bank_i];
  assign ext_fire = ext_wr_valid_i && ext_wr_ready_o;
  assign ext_addr = AddrW'(ext_wr_bank_i) * AddrW'(BankElems) + AddrW'(ext_wr_elem_i);
  assign ext_bits = {{8{ext_wr_byte_en_i[3]}}, {8{ext_wr_byte_en_i[2]}},
                     {8{ext_wr_byte_en_i[1]}}, {8{ext_wr_byte_en_i[0]}}};
  assign rd_rsp_valid_o = rd_rsp_valid_q;
  assign rd_rsp_data_o = rd_data_q;

  always_comb begin
    for (int unsigned p = 0; p < Parts; p++) begin
      wr_addr[p] = AddrW'(wr_bank_i[p]) * AddrW'(BankElems) + AddrW'(wr_elem_i[p]);
      unique case (wr_half_i[p])
        2'd1:    wr_result_o[p] = {mem_q[p][wr_addr[p]][31:16], wr_data_i[p][15:0]};
        2'd2:    wr_result_o[p] = {wr_data_i[p][15:0], mem_q[p][wr_addr[p]][15:0]};
        // pe_add: fp32_add, or in the fast PE build the host's FPU, proven equal (nc_fp_pkg).
        default: wr_result_o[p] = wr_accumulate_i[p] ? pe_add(mem_q[p][wr_addr[p]], wr_data_i[p])
                                                     : wr_data_i[p];
      endcase
      rd_data_d[p] = mem_q[p][rd_addr];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      init_addr_q <= '0;
      init_busy_q <= 1'b1;
      rd_rsp_valid_q <= 1'b0;
    end else begin
      if (init_busy_q) begin
        init_addr_q <= init_addr_q + 1'b1;
        if (init_addr_q == AddrW'(Words - 1)) init_busy_q <= 1'b0;
      end
      rd_rsp_valid_q <= rd_valid_i && rd_ready_o;
    end
  end

  always_ff @(posedge clk_i) begin
    if (rd_valid_i && rd_ready_o) rd_data_q <= rd_data_d;
  end

  // One memory write port per partition (a generate per partition, not a procedural loop:
  // each block writes one word of its own memory).
  for (genvar p = 0; p < Parts; p++) begin : g_part
    always_ff @(posedge clk_i) begin
      if (init_busy_q) mem_q[p][init_addr_q] <= '0;
      else begin
        if (wr_valid_i[p]) mem_q[p][wr_addr[p]] <= wr_result_o[p];
        if (ext_fire && ext_wr_part_mask_i[p])
          mem_q[p][ext_addr] <= (mem_q[p][ext_addr] & ~ext_bits) | (ext_wr_data_i[p] & ext_bits);
      end
    end
  end

  logic any_write, ext_meets_array, read_meets_array;
  always_comb begin
    any_write = 1'b0;
    ext_meets_array = 1'b0;
    read_meets_array = 1'b0;
    for (int unsigned p = 0; p < Parts; p++) begin
      any_write = any_write | wr_valid_i[p];
      ext_meets_array |= ext_fire && ext_wr_part_mask_i[p] && wr_valid_i[p] && wr_addr[p] == ext_addr;
      read_meets_array |= rd_valid_i && rd_ready_o && wr_valid_i[p] && wr_bank_i[p] == rd_bank_i;
    end
  end

  `NC_ASSERT(PsumNoWriteDuringInit, init_busy_q |-> !any_write)
  // The bank-conflict rule, checked against the writes themselves rather than the pending
  // flags the ready logic uses: a read is never served from a bank an array write lands in.
  `NC_ASSERT(PsumReadNeverMeetsArrayWrite, !read_meets_array)
  // An external write never lands on a word the array writes in the same cycle.
  `NC_ASSERT(PsumExtWriteNeverMeetsArrayWrite, !ext_meets_array)
endmodule
