#pragma once
// SystemC TLM-2.0 modules of the NeuronLink fabric and the chip's memory side, loosely timed
// (b_transport with temporal decoupling).
//
// A message is one generic payload (a write) from a chip's collective engine to another chip's:
// address = destination chip << 40 | byte offset. It enters its chip's Router on the local
// tagged socket; each Router forwards it on the port dimension-ordered routing gives
// (Topology::route) through a Link to the next Router, and the destination Router hands it to
// its Endpoint. Timing is cut-through: each Link holds the message for bytes / bandwidth
// (the first free stretch of its Calendar at or after the message's head arrives, and not
// ending before its tail has arrived) and adds its hop latency. Because every Link keeps a
// calendar of reservations rather than one "busy until" time, a message issued by a process
// that runs behind in simulated time (temporal decoupling) still gets the slot it would have
// had: results do not depend on the quantum unless two messages compete for one slot.
// Flows that share a link are serialised whole (the later one waits); there is no packet
// interleaving between them.

#ifndef SC_INCLUDE_DYNAMIC_PROCESSES
#define SC_INCLUDE_DYNAMIC_PROCESSES
#endif
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/core/core_model.h"
#include "tb/tlm/system_config.h"
#include "tb/tlm/topology.h"

namespace ncore::tlmsys {

inline constexpr int kChipAddressShift = 40;  // global address = chip << 40 | local address

// Simulated time in picoseconds (SystemC's default resolution).
using Ps = uint64_t;
inline Ps ps_of(const sc_core::sc_time& t) { return t.value(); }
inline sc_core::sc_time time_of(Ps ps) { return sc_core::sc_time::from_value(ps); }
Ps transfer_ps(uint64_t bytes, double gbps);  // bytes / (GB/s), rounded up

// Busy stretches of one resource; a transfer takes the first gap of its length at or after it
// is ready.
class Calendar {
 public:
  Ps reserve(Ps earliest, Ps length);  // returns the start
  Ps busy_ps() const { return busy_total_; }
  size_t stretches() const { return busy_.size(); }
  const std::map<Ps, Ps>& busy() const { return busy_; }  // start -> end of each busy stretch
 private:
  std::map<Ps, Ps> busy_;  // start -> end, disjoint; touching stretches are merged
  Ps busy_total_ = 0;
};

// What a message carries besides the payload: its size (a payload of length 0 in timing-only
// runs still models `bytes`), the source, a tag, the time its last byte reached the current
// point, the hops taken, and labels the receiver needs (the blocks of an all-to-all message).
struct MessageExtension : ::tlm::tlm_extension<MessageExtension> {
  int src = 0;
  uint64_t tag = 0;  // the collective's instance in the high 32 bits, its step below
  uint64_t bytes = 0;
  Ps tail = 0;
  int hops = 0;
  std::vector<uint32_t> labels;
  ::tlm::tlm_extension_base* clone() const override { return new MessageExtension(*this); }
  void copy_from(const ::tlm::tlm_extension_base& e) override {
    *this = static_cast<const MessageExtension&>(e);
  }
};

class Link : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Link> in;
  tlm_utils::simple_initiator_socket<Link> out;
  Link(sc_core::sc_module_name name, const LinkConfig& config);
  uint64_t messages() const { return messages_; }
  uint64_t bytes() const { return bytes_; }
  Ps busy_ps() const { return calendar_.busy_ps(); }
  const std::map<Ps, Ps>& busy() const { return calendar_.busy(); }
  const LinkConfig& config() const { return config_; }
 private:
  void b_transport(::tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  LinkConfig config_;
  Calendar calendar_;
  uint64_t messages_ = 0, bytes_ = 0;
};

class Router : public sc_core::sc_module {
 public:
  static constexpr int kLocal = kNumPorts;  // tag of the local injection socket
  // in[p]: from the link arriving on port p (present when the topology has that port);
  // in[kLocal]: from this chip. out[p]: to the link leaving on port p; local: to the Endpoint.
  std::vector<std::unique_ptr<tlm_utils::simple_target_socket_tagged<Router>>> in;
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<Router>>> out;
  tlm_utils::simple_initiator_socket<Router> local;
  Router(sc_core::sc_module_name name, const Topology& topology, int rank);
 private:
  void b_transport(int tag, ::tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  const Topology& topology_;
  int rank_;
};

// One HBM stack as the collective engine and replayed core outputs see it (the cores' own DMA
// goes through ChipHbm, tb/tlm/chip_hbm.h): timing only, the data is in the chip's memory.
// Timing from the HBM reference scheduler: hbm_calibration() runs model::HbmChannel on the
// 16-stream DMA mix and gives the data-bus efficiency and read latency this target applies.
struct HbmCalibration {
  double efficiency = 0;  // busy data cycles / all cycles, refresh included
  double latency_ns = 0;  // mean read latency
};
const HbmCalibration& hbm_calibration();

class HbmStack : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<HbmStack> socket;
  HbmStack(sc_core::sc_module_name name, double peak_gbps, uint64_t capacity_bytes);
  // For the chip's collective engine: occupies the stack for `bytes` from `earliest`; returns
  // when the last byte is written or read.
  Ps occupy(Ps earliest, uint64_t bytes);
 private:
  void b_transport(::tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  double gbps_;  // peak x efficiency
  Ps latency_;
  uint64_t capacity_;
  Calendar calendar_;
};

// Decodes a chip's local address to its stack: stacks are interleaved every 4 KiB.
inline constexpr uint64_t kStackInterleave = 4096;

// A received message waiting for its collective process.
struct Message {
  Ps arrival = 0;
  uint64_t bytes = 0;
  uint64_t address = 0;
  int hops = 0;
  std::vector<uint8_t> data;     // empty in timing-only runs
  std::vector<uint32_t> labels;
};

// The receiving side of a chip's collective engine: messages wait here (in the receive buffer
// their address names) until a process takes them. A message streams into the chip's HBM as it
// arrives and can be taken once it is written: by default the stacks' calendars (HbmStack)
// time that write; in a system run with cores, land_through() hands it to the chip's ChipHbm
// instead, so it contends with the cores' DMA on the pseudo-channels.
class Endpoint : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Endpoint> socket;
  Endpoint(sc_core::sc_module_name name, std::vector<HbmStack*> stacks);
  bool has(int src, uint64_t tag) const { return mailbox_.count({src, tag}) != 0; }
  Message take(int src, uint64_t tag);
  const sc_core::sc_event& arrived() const { return arrived_; }
  size_t waiting() const { return mailbox_.size(); }
  // write(addr, bytes, start, landed): write `bytes` at `addr` from simulated time `start` on
  // (in a process of its own), then call landed().
  using Landing = std::function<void(uint64_t addr, uint64_t bytes, Ps start, std::function<void()> landed)>;
  void land_through(Landing write) { land_ = std::move(write); }
 private:
  void b_transport(::tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  void deliver(std::pair<int, uint64_t> key, Message msg);
  std::vector<HbmStack*> stacks_;
  std::map<std::pair<int, uint64_t>, Message> mailbox_;
  std::set<std::pair<int, uint64_t>> landing_;  // arrived, still being written
  Landing land_;
  sc_core::sc_event arrived_;
};

}  // namespace ncore::tlmsys
