// First stage of a NeuronCore sequencer: checks an instruction word against the queue it sits
// in and splits off the header. The checks and their order are model::decode()'s
// (model/core/core_isa.cpp); test_isa_decode_rtl compares the two on random and corrupted words.
module nc_isa_decode
  import nc_isa_pkg::*;
(
  input  logic [InstrW-1:0] instr_i,
  input  isa_queue_e        queue_i,
  output isa_decode_error_e err_o,
  output isa_header_t       header_o
);
  localparam int unsigned HeaderW = 64;  // bits [63:0] hold the header and its reserved bits

  logic [7:0]        opcode;
  logic [NumQueues-1:0] queue_mask;
  logic [InstrW-1:0] used_mask;

  assign header_o   = isa_header_t'(instr_i[IsaHeaderBits-1:0]);
  assign opcode     = instr_i[7:0];
  assign queue_mask = isa_queue_mask(opcode);
  // Header fields, then the opcode's payload from bit 64.
  assign used_mask  = {{(InstrW-IsaHeaderBits){1'b0}}, {IsaHeaderBits{1'b1}}} |
                      ((~({InstrW{1'b1}} << isa_payload_bits(opcode))) << HeaderW);

  always_comb begin
    if (queue_mask == '0)                            err_o = DecodeErrorIllegalOpcode;
    else if (!queue_mask[queue_i])                    err_o = DecodeErrorWrongQueue;
    else if ((instr_i & ~used_mask) != '0)            err_o = DecodeErrorIllegalReserved;
    // Wait/signal fields with their enable off: bits the core would ignore, so reserved too.
    else if (!header_o.wait_en && (header_o.wait_sem != '0 || header_o.wait_value != '0))
                                                      err_o = DecodeErrorIllegalReserved;
    else if (header_o.sig_op == SigOpNone && (header_o.sig_sem != '0 || header_o.sig_value != '0))
                                                      err_o = DecodeErrorIllegalReserved;
    else if (header_o.sig_op == 2'd3)                 err_o = DecodeErrorIllegalSigOp;
    else                                              err_o = DecodeErrorNone;
  end
endmodule
