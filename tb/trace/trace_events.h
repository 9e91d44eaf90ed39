// Chrome/Perfetto trace events for ncore runs: `ncore run --trace-json` (one core) and
// `ncore tlm run --trace-json` (chips, instances) write the same tracks for each core.
// README.md in this folder has the tracks and how to open the file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/core/core_model.h"
#include "model/core/program.h"

namespace ncore::tb {

// The trailing comment of a program's source lines ("# matmul.py:27" on the lines the NKI
// compiler writes), read from the program's files once, when a trace is written.
class SourceNotes {
 public:
  const std::string& note(const model::SourceLoc& loc);

 private:
  std::map<std::string, std::vector<std::string>> files_;  // file -> each line's comment
};

class TraceEvents {
 public:
  void process(int pid, const std::string& name);
  // Names a track the first time it is used; tracks sort by tid.
  void thread(int pid, int tid, const std::string& name);
  // A complete slice ("ph": "X") from ts to ts + dur microseconds. The slices of one track come
  // in order of their start; overlapping ones go on further lanes (tid + k * kLaneTidStride).
  void slice(int pid, int tid, const std::string& name, double ts_us, double dur_us, nlohmann::json args = {});
  void counter(int pid, const std::string& name, double ts_us, nlohmann::json args);

  // One core's run: a track per instruction queue, per DMA engine it used, per queue's
  // semaphore waits and per queue's instruction-fetch stalls (tids tid_base .. tid_base + 63).
  // Slices are named by the instruction's opcode and its source note (the kernel's file:line).
  // `run` gives the timeline, fetch stalls and semaphore waits (record_timeline(true)).
  void add_core(int pid, int tid_base, const std::string& label, const model::Program& prog,
                const model::CoreResult& run, const std::function<double(uint64_t)>& us_of_cycle);

  // {"traceEvents": [...], "displayTimeUnit": "ns"}; `option` names the flag in errors.
  void write(const std::string& path, const std::string& option) const;

 private:
  static constexpr int kLaneTidStride = 1 << 20;
  nlohmann::json events_ = nlohmann::json::array();
  std::map<std::pair<int, int>, std::string> names_;          // each track's name
  std::map<std::pair<int, int>, std::vector<double>> lanes_;  // each track's lanes: their last slice's end
  SourceNotes notes_;
};

}  // namespace ncore::tb
