// A request port from an engine in one clock domain (the requester: the vector or scalar
// engine) to a server in another (the tensor engine's PSUM ports), both divided from the core's
// base clock (nc_core_clocks). Registers here are on the base clock; en_req_i and en_srv_i say
// which base cycles end with an edge of each domain.
//
// The requester sees the server as if it were in its own domain:
//   - a request is offered to the server once, whatever the ratio of the clocks (taken_q);
//   - the requester's handshake completes at its own edge, once the server has taken the
//     request and (Response) answered it;
//   - the answer is presented to the requester in its next cycle, from a register of the
//     requester's domain, exactly as the SBUF answers a read.
// With Response, the server answers each request it takes once, one server cycle later, and the
// answer is held (held_q) until the requester's edge.
//
// bypass_i (the two domains have one divider, so their edges coincide): the bridge is wires,
// and the port behaves as it did on one clock, cycle for cycle.
module nc_core_bridge #(
  parameter bit  Response = 1'b1,
  parameter type T = logic      // the answer
) (
  input  logic clk_i,           // the base clock
  input  logic rst_ni,
  input  logic bypass_i,
  input  logic en_req_i,
  input  logic en_srv_i,
  // requester
  input  logic req_valid_i,
  output logic req_ready_o,
  output logic rsp_valid_o,
  output T     rsp_data_o,
  // server
  output logic srv_valid_o,
  input  logic srv_ready_i,     // the server takes the request if it ends this cycle with an edge
  input  logic srv_rsp_valid_i, // its answer to this requester, for one server cycle
  input  T     srv_rsp_data_i
);
  logic taken_q, held_q, rsp_valid_q, take, handshake, capture;
  T     held_data_q, rsp_data_q;

  assign srv_valid_o = req_valid_i && (bypass_i || !taken_q);
  assign take = !bypass_i && en_srv_i && srv_valid_o && srv_ready_i;
  always_comb begin
    if (bypass_i) req_ready_o = srv_ready_i;
    else if (Response) req_ready_o = taken_q && (held_q || srv_rsp_valid_i);
    else req_ready_o = taken_q || take;
  end
  assign handshake = !bypass_i && en_req_i && req_valid_i && req_ready_o;
  assign capture = Response && en_srv_i && taken_q && !held_q && srv_rsp_valid_i && !handshake;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      taken_q <= 1'b0;
      held_q <= 1'b0;
      rsp_valid_q <= 1'b0;
    end else begin
      if (handshake) taken_q <= 1'b0;
      else if (take) taken_q <= 1'b1;
      if (handshake) held_q <= 1'b0;
      else if (capture) held_q <= 1'b1;
      if (en_req_i) rsp_valid_q <= Response && handshake;
    end
  end
  always_ff @(posedge clk_i) begin
    if (capture) held_data_q <= srv_rsp_data_i;
    if (handshake) rsp_data_q <= held_q ? held_data_q : srv_rsp_data_i;
  end
  assign rsp_valid_o = bypass_i ? srv_rsp_valid_i : rsp_valid_q;
  assign rsp_data_o = bypass_i ? srv_rsp_data_i : rsp_data_q;
endmodule
