#include "tb/trace/trace_events.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::tb {

namespace {

// The comment of one source line: the text after a '#' outside brackets, trimmed.
std::string comment_of(const std::string& line) {
  int depth = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') depth = std::max(0, depth - 1);
    if (c == '#' && depth == 0) {
      const size_t b = line.find_first_not_of(" \t", i + 1);
      const size_t e = line.find_last_not_of(" \t\r");
      return b == std::string::npos || b > e ? std::string() : line.substr(b, e - b + 1);
    }
  }
  return {};
}

// "/work/tests/nki/matmul.py:27" -> "matmul.py:27": the slice names stay short; the args keep
// the whole note.
std::string short_note(const std::string& note) {
  const size_t slash = note.find_last_of('/');
  return slash == std::string::npos ? note : note.substr(slash + 1);
}

}  // namespace

const std::string& SourceNotes::note(const model::SourceLoc& loc) {
  static const std::string none;
  auto it = files_.find(loc.file);
  if (it == files_.end()) {
    std::vector<std::string> comments;
    std::ifstream in(loc.file);
    for (std::string line; std::getline(in, line);) comments.push_back(comment_of(line));
    it = files_.emplace(loc.file, std::move(comments)).first;
  }
  const auto& lines = it->second;
  return loc.line >= 1 && static_cast<size_t>(loc.line) <= lines.size() ? lines[static_cast<size_t>(loc.line) - 1] : none;
}

void TraceEvents::process(int pid, const std::string& name) {
  events_.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
}

void TraceEvents::thread(int pid, int tid, const std::string& name) {
  if (!names_.emplace(std::pair{pid, tid}, name).second) return;
  events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  events_.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
                     {"args", {{"sort_index", tid}}}});
}

void TraceEvents::slice(int pid, int tid, const std::string& name, double ts_us, double dur_us, nlohmann::json args) {
  // A viewer draws the slices of one track nested, so slices that overlap (an engine's
  // pipelined instructions) go on further lanes of the track, each drawn as a track of its own
  // ("core pe (2)"): the first lane whose last slice has ended takes the slice.
  std::vector<double>& lanes = lanes_[{pid, tid}];
  const double stop = ts_us + std::max(0.0, dur_us);
  size_t lane = 0;
  while (lane < lanes.size() && lanes[lane] > ts_us) ++lane;
  if (lane == lanes.size()) lanes.push_back(stop);
  lanes[lane] = stop;
  int lane_tid = tid;
  if (lane > 0) {
    lane_tid = tid + static_cast<int>(lane) * kLaneTidStride;
    const auto it = names_.find({pid, tid});
    thread(pid, lane_tid, fmt::format("{} ({})", it == names_.end() ? std::to_string(tid) : it->second, lane + 1));
  }
  nlohmann::json e = {{"ph", "X"}, {"name", name}, {"pid", pid}, {"tid", lane_tid}, {"ts", ts_us}, {"dur", stop - ts_us}};
  if (!args.is_null()) e["args"] = std::move(args);
  events_.push_back(std::move(e));
}

void TraceEvents::counter(int pid, const std::string& name, double ts_us, nlohmann::json args) {
  events_.push_back({{"ph", "C"}, {"name", name}, {"pid", pid}, {"ts", ts_us}, {"args", std::move(args)}});
}

void TraceEvents::add_core(int pid, int tid_base, const std::string& label, const model::Program& prog,
                           const model::CoreResult& run, const std::function<double(uint64_t)>& us_of_cycle) {
  // Tracks: queues at +0..+4, DMA engines at +8..+23, semaphore waits at +32..+36, fetch
  // stalls at +40..+44.
  constexpr int kDmaTrack = 8, kWaitTrack = 32, kFetchTrack = 40;
  std::vector<model::InstrTiming> order = run.timeline;
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const model::InstrTiming& t : order) {
    const model::CoreInstr& in = prog.queues[static_cast<size_t>(t.queue)][t.index];
    const std::string queue(model::queue_name(static_cast<isa::Queue>(t.queue)));
    const std::string opcode(isa::opcode_info(in.opcode)->name);
    const std::string& note = notes_.note(in.loc);
    const std::string name = note.empty() ? opcode : fmt::format("{} {}", opcode, short_note(note));
    nlohmann::json args = {{"queue", queue}, {"index", t.index}, {"line", in.loc.str()}, {"issue_cycle", t.issue},
                           {"start_cycle", t.start}, {"complete_cycle", t.complete}};
    if (!note.empty()) args["source"] = note;
    int engine = -1;
    if (in.opcode == isa::Opcode::kDmaCopy) engine = static_cast<int>(in.dma.engine);
    if (in.opcode == isa::Opcode::kDmaList) engine = static_cast<int>(in.list.engine);
    const int tid = tid_base + (engine >= 0 ? kDmaTrack + engine : t.queue);
    thread(pid, tid, engine >= 0 ? fmt::format("{} dma {}", label, engine) : fmt::format("{} {}", label, queue));
    const double ts = us_of_cycle(t.start);
    slice(pid, tid, name, ts, us_of_cycle(std::max(t.complete, t.start)) - ts, args);
  }
  // The cycles an instruction waited at its queue's head for its semaphore.
  for (const model::SemaphoreWait& w : run.sem_waits) {
    const model::CoreInstr& in = prog.queues[static_cast<size_t>(w.queue)][w.index];
    const std::string queue(model::queue_name(static_cast<isa::Queue>(w.queue)));
    const std::string& note = notes_.note(in.loc);
    const int tid = tid_base + kWaitTrack + w.queue;
    thread(pid, tid, fmt::format("{} {} semaphore waits", label, queue));
    const double ts = us_of_cycle(w.begin);
    nlohmann::json args = {{"queue", queue}, {"index", w.index}, {"line", in.loc.str()}, {"begin_cycle", w.begin},
                           {"end_cycle", w.end}};
    if (!note.empty()) args["source"] = note;
    slice(pid, tid, fmt::format("wait {} >= {}", prog.sem_name(in.wait_sem), in.wait_value), ts,
          us_of_cycle(w.end) - ts, args);
  }
  for (const model::FetchStall& f : run.fetch_stalls) {
    const int tid = tid_base + kFetchTrack + f.queue;
    const std::string queue(model::queue_name(static_cast<isa::Queue>(f.queue)));
    thread(pid, tid, fmt::format("{} {} instruction fetch", label, queue));
    const double ts = us_of_cycle(f.begin);
    slice(pid, tid, "fetch stall", ts, us_of_cycle(f.end) - ts, {{"next_instruction", f.index}});
  }
}

void TraceEvents::write(const std::string& path, const std::string& option) const {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write {}", option, path));
  out << nlohmann::json{{"traceEvents", events_}, {"displayTimeUnit", "ns"}}.dump() << "\n";
  if (!out) throw Error(fmt::format("{}: writing {} failed", option, path));
}

}  // namespace ncore::tb
