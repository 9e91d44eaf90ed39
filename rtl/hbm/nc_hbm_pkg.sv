// Types of the HBM pseudo-channel controller. Its commands and error codes are the ISA's
// (isa_hbm_cmd_e, isa_hbm_error_e); the configuration is model::HbmConfig's as ports.
package nc_hbm_pkg;
  import nc_isa_pkg::*;

  localparam int unsigned BankGroups = 4;
  localparam int unsigned BanksPerGroup = 4;
  localparam int unsigned Banks = BankGroups * BanksPerGroup;
  localparam int unsigned RowW = 14;   // 16,384 rows per bank
  localparam int unsigned ColW = 5;    // 32 bursts of 32 bytes: a 1 KiB page
  localparam int unsigned BankW = 4;
  localparam int unsigned AddrW = 32;  // byte address: up to 16 channels x 256 MiB
  localparam int unsigned DataW = 256; // one burst
  localparam int unsigned TimeW = 16;  // timing countdowns (the largest is CWL + BL + tWR)

  // Run-time configuration: HBM3 timing in clock cycles and the scheduling policy.
  typedef struct packed {
    logic [11:0] bl, cl, cwl, rcd_rd, rcd_wr, rp, ras, rc, ccd_s, ccd_l, rrd_s, rrd_l, faw;
    logic [11:0] wr, rtp, wtr_s, wtr_l, rtw, rfc, rfcpb, rrefd;
    logic [15:0] refi;
    logic        fcfs;          // 1: serve strictly the oldest request
    logic        all_bank_ref;  // 1: REFab every tREFI; 0: flexible per-bank refresh
    logic        xor_hash;      // fold row bits into the bank bits
    logic [2:0]  ch_bits;       // log2 of the channels: the channel bits sit above the bank
    logic [8:0]  wr_high, wr_low;
    logic [11:0] rd_batch;      // reads a read phase serves before the high watermark ends it
    logic [15:0] age_cap;
    logic [3:0]  max_postpone, max_pull_in;
  } hbm_cfg_t;

  // A queued request as the scheduler sees it (its id and data stay with the controller).
  typedef struct packed {
    logic               valid;
    logic [BankW-1:0]   bank;
    logic [RowW-1:0]    row;
    logic [ColW-1:0]    col;
    logic [31:0]        arrival;   // the cycle it was accepted
  } hbm_slot_t;

  // XOR of the 4-bit chunks of a row: the bank hash.
  function automatic logic [BankW-1:0] fold4(logic [RowW-1:0] row);
    logic [15:0] r;
    r = 16'(row);
    return r[3:0] ^ r[7:4] ^ r[11:8] ^ r[15:12];
  endfunction

endpackage
