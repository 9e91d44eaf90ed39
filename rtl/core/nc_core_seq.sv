// One instruction queue of the NeuronCore and its sequencer: an instruction buffer that the
// fetch unit (nc_core_fetch) fills from the program image in HBM, and a program counter that
// issues in order. Instruction pc sits in buffer slot pc % Depth once pc < arrived_i; before
// that the queue waits on fetch (a fetch stall, counted in cnt_fetch_stall_o).
//
// Per instruction at pc: decode (nc_isa_decode; an illegal word stops the queue, and
// decode_err_o rises once the engine has drained, so that an earlier instruction's own error
// comes first: errors are precise per queue); wait until semaphore wait_sem >= wait_value when
// wait_en (the wait does not consume); then
//   - a nop issues at once;
//   - anything else is offered to the engine (issue_valid_o) until it is taken.
// Signals (applied by the core when sig_valid_o is high):
//   - on pe, act and dve an instruction with a signal (a nop too) is a fence: the queue issues
//     nothing more until its engine has drained (drained_i: idle and nothing offered), then
//     signals. The signal therefore means "this instruction and everything before it in the
//     queue has completed", as in model::CoreModel.
//   - on sp (Fenced = 0) a nop signals at issue; a dma_copy's signal travels with the
//     descriptor (the core applies it when its DMA engine finishes), so nothing waits here.
// The queue runs on its engine's clock (issue 49: every count here is in its cycles); a fence
// also waits for the engine's pipeline to land its results (landing_i, nc_core_pipeline).
// Minimum interval (issue 49, model::EngineCosts::min_cycles; 0 in the uniform timing): an
// instruction holds its queue interval_i cycles at least from its issue (the next issues no
// earlier, and a fence does not count the engine drained before), and, with interval_tail_i (it
// also writes a reduction), interval_i cycles more once that has passed and the engine has
// drained: the nki.isa cost model's max(MIN_II, N), and max(MIN_II, N) + MIN_II for a reduction.
module nc_core_seq
  import nc_isa_pkg::*;
#(
  parameter isa_queue_e  Queue = QueuePe,
  parameter bit          Fenced = 1'b1,
  parameter int unsigned Depth = 16,        // instruction buffer slots (a power of two)
  parameter int unsigned PcW = 32,
  localparam int unsigned SlotW = $clog2(Depth),
  localparam int unsigned BeatW = $clog2(InstrW / 256)
) (
  input  logic               clk_i,        // the queue's engine's clock
  input  logic               rst_ni,
  // the fetch unit, on its own clock (the dma domain's): 32 bytes of one slot, and how many
  // instructions have arrived
  input  logic               fill_clk_i,
  input  logic               fill_valid_i,
  input  logic [SlotW-1:0]   fill_slot_i,
  input  logic [BeatW-1:0]   fill_beat_i,
  input  logic [255:0]       fill_data_i,
  input  logic [PcW-1:0]     arrived_i,
  input  logic               start_i,
  input  logic [PcW-1:0]     length_i,      // instructions in the queue
  input  logic               halt_i,        // the core stopped on an error: issue nothing
  // semaphores (current values)
  input  logic [15:0]        sems_i [32],
  // the engine
  output logic               issue_valid_o,
  input  logic               issue_ready_i,
  output logic [InstrW-1:0]  issue_word_o,
  output logic [PcW-1:0]     pc_o,
  input  logic               drained_i,     // nothing issued from this queue is still in its engine
  input  logic               landing_i,     // results of the engine's pipeline still to land (issue 49)
  input  logic [15:0]        interval_i,    // the head instruction's minimum interval (0: none)
  input  logic               interval_tail_i,  // and it pays the interval again after draining
  output logic               holding_o,     // the last instruction's interval still holds the queue
  // signal to apply this cycle
  output logic               sig_valid_o,
  output isa_header_t        sig_header_o,
  // status
  output isa_decode_error_e  decode_err_o,  // not none: the word at pc is illegal (queue stops)
  output logic               waiting_o,     // the instruction at pc waits on a semaphore
  output logic               finished_o,    // every instruction issued, no fence pending
  output logic               issued_o,      // pulse: an instruction issued
  output logic [31:0]        cnt_issued_o,
  output logic [31:0]        cnt_wait_o,    // cycles the head waited on a semaphore
  output logic [31:0]        cnt_fetch_stall_o  // cycles the head had not arrived from HBM
);
  typedef enum logic [1:0] { StIdle, StRun, StFence, StEnd } state_e;

  logic [InstrW-1:0] buf_q [Depth];
  state_e            state_q, state_d;
  logic [PcW-1:0]    pc_q, pc_d, length_q;
  logic [InstrW-1:0] word;
  isa_header_t       header, fence_header_q;
  isa_decode_error_e decode_err;
  logic              head_present, head_valid, wait_ok, is_nop, fire, fetch_stall;
  logic [31:0]       cnt_issued_q, cnt_wait_q, cnt_fetch_stall_q;
  logic [15:0]       hold_q, tail_len_q;  // cycles the last instruction still holds the queue
  logic              tail_q;              // its second interval is still to come
  logic              holding, drained;

  assign holding = hold_q != '0 || tail_q;
  assign drained = drained_i && !landing_i && !holding;
  assign holding_o = holding;

  always_ff @(posedge fill_clk_i) begin
    if (fill_valid_i) buf_q[fill_slot_i][256 * fill_beat_i +: 256] <= fill_data_i;
  end

  assign word = buf_q[pc_q[SlotW-1:0]];
  nc_isa_decode u_decode (.instr_i(word), .queue_i(Queue), .err_o(decode_err), .header_o(header));

  // The instruction at pc is in the buffer (arrived_i never passes length_q).
  assign head_present = state_q == StRun && pc_q != length_q && pc_q != arrived_i;
  assign fetch_stall = state_q == StRun && pc_q != length_q && pc_q == arrived_i && !halt_i;
  assign head_valid = head_present && !halt_i;
  assign wait_ok = !header.wait_en || sems_i[header.wait_sem] >= header.wait_value;
  assign is_nop = header.opcode == 8'(IsaNop);

  assign decode_err_o = head_valid && drained ? decode_err : DecodeErrorNone;
  // Kept after the core stops, so that a deadlock report can name the waiting queues.
  assign waiting_o = head_present && decode_err == DecodeErrorNone && !wait_ok;
  assign issue_valid_o = head_valid && decode_err == DecodeErrorNone && wait_ok && !is_nop && !holding;
  assign issue_word_o = word;
  assign pc_o = pc_q;
  // The instruction at pc leaves the queue this cycle.
  assign fire = head_valid && decode_err == DecodeErrorNone && wait_ok && !holding && (is_nop || issue_ready_i);
  assign issued_o = fire;

  always_comb begin
    state_d = state_q;
    pc_d = pc_q;
    sig_valid_o = 1'b0;
    sig_header_o = header;
    unique case (state_q)
      StIdle: if (start_i) begin
        state_d = StRun;
        pc_d = '0;
      end
      StRun: begin
        if (fire) begin
          pc_d = pc_q + 1'b1;
          if (header.sig_op != 2'(SigOpNone)) begin
            if (Fenced) state_d = StFence;
            else if (is_nop) sig_valid_o = 1'b1;
          end
        end else if (pc_q == length_q) begin
          state_d = StEnd;
        end
      end
      StFence: begin
        sig_header_o = fence_header_q;
        if (drained) begin
          sig_valid_o = !halt_i;
          state_d = StRun;
        end
      end
      StEnd: ;
      default: state_d = StIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= StIdle;
      pc_q <= '0;
      length_q <= '0;
      fence_header_q <= '0;
      cnt_issued_q <= '0;
      cnt_wait_q <= '0;
      cnt_fetch_stall_q <= '0;
      hold_q <= '0;
      tail_len_q <= '0;
      tail_q <= 1'b0;
    end else begin
      // The interval counts from the issue: the next may issue interval_i cycles later.
      if (fire) begin
        hold_q <= interval_i > 16'd1 ? interval_i - 16'd1 : '0;
        tail_len_q <= interval_i;
        tail_q <= interval_tail_i && interval_i != '0;
      end else if (hold_q != '0) begin
        hold_q <= hold_q - 16'd1;
      end else if (tail_q && drained_i) begin
        hold_q <= tail_len_q > 16'd1 ? tail_len_q - 16'd1 : '0;
        tail_q <= 1'b0;
      end
      state_q <= state_d;
      pc_q <= pc_d;
      if (start_i) length_q <= length_i;
      if (fire) fence_header_q <= header;
      if (fire) cnt_issued_q <= cnt_issued_q + 1'b1;
      if (waiting_o && !halt_i) cnt_wait_q <= cnt_wait_q + 1'b1;
      if (fetch_stall) cnt_fetch_stall_q <= cnt_fetch_stall_q + 1'b1;
    end
  end

  // The last instruction's interval ends the queue too (the golden core completes an
  // instruction when its interval has passed).
  assign finished_o = state_q == StEnd && !holding;
  assign cnt_issued_o = cnt_issued_q;
  assign cnt_wait_o = cnt_wait_q;
  assign cnt_fetch_stall_o = cnt_fetch_stall_q;
endmodule
