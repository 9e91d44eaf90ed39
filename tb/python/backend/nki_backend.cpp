// ncore.nki._backend: the compiler passes of tb/python/ncore/nki/compiler.py whose work grows
// with the program's instructions times a window (hoisting loads) or with the bytes each
// instruction touches (synchronising the queues). compiler.py keeps their definitions in its
// docstrings; this file is their implementation, and tests/nki compares whole programs.
//
// A byte box, as compiler.py makes it (_box, _hbm_box):
//   (space, first partition, end partition, first byte, end byte[, (base, ((count, stride), ...), row)])
// space is "hbm", "sbuf" or "psum"; HBM boxes carry the walk of their byte runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

enum Space : int { kHbm = 0, kSbuf = 1, kPsum = 2 };

struct Box {
  int space = kHbm;
  int64_t p0 = 0, p1 = 0, b0 = 0, b1 = 0;
  bool has_walk = false;  // an HBM box: its byte runs are base + sum(i_k * stride_k), row bytes each
  int64_t base = 0, row = 0;
  std::vector<std::pair<int64_t, int64_t>> walks;  // (count, stride bytes)
  mutable std::vector<std::pair<int64_t, int64_t>> runs;  // sorted [first, end), made on first use
};

int space_of(const std::string& name) {
  if (name == "hbm") return kHbm;
  if (name == "sbuf") return kSbuf;
  if (name == "psum") return kPsum;
  throw py::value_error("box space '" + name + "': expected hbm, sbuf or psum");
}

Box to_box(const py::handle& h) {
  auto t = py::reinterpret_borrow<py::tuple>(h);
  Box b;
  b.space = space_of(t[0].cast<std::string>());
  b.p0 = t[1].cast<int64_t>();
  b.p1 = t[2].cast<int64_t>();
  b.b0 = t[3].cast<int64_t>();
  b.b1 = t[4].cast<int64_t>();
  if (t.size() > 5) {
    auto walk = t[5].cast<py::tuple>();
    b.has_walk = true;
    b.base = walk[0].cast<int64_t>();
    for (auto w : walk[1].cast<py::tuple>()) {
      auto cw = w.cast<py::tuple>();
      b.walks.emplace_back(cw[0].cast<int64_t>(), cw[1].cast<int64_t>());
    }
    b.row = walk[2].cast<int64_t>();
  }
  return b;
}

std::vector<Box> to_boxes(const py::handle& list) {
  std::vector<Box> out;
  for (auto h : py::reinterpret_borrow<py::list>(list)) out.push_back(to_box(h));
  return out;
}

const std::vector<std::pair<int64_t, int64_t>>& runs_of(const Box& b) {
  if (b.runs.empty()) {
    std::vector<int64_t> starts{b.base};
    for (auto [count, stride] : b.walks) {
      std::vector<int64_t> next;
      next.reserve(starts.size() * count);
      for (int64_t s : starts)
        for (int64_t i = 0; i < count; ++i) next.push_back(s + i * stride);
      starts.swap(next);
    }
    std::sort(starts.begin(), starts.end());
    for (int64_t s : starts) b.runs.emplace_back(s, s + b.row);
  }
  return b.runs;
}

// compiler._overlap: the boxes share bytes (for HBM, one of their byte runs).
bool overlap(const Box& a, const Box& b) {
  if (!(a.space == b.space && a.p0 < b.p1 && b.p0 < a.p1 && a.b0 < b.b1 && b.b0 < a.b1)) return false;
  if (!a.has_walk || !b.has_walk) return true;
  if (a.walks.empty() && b.walks.empty()) return true;  // two contiguous runs whose extents meet
  const auto &ra = runs_of(a), &rb = runs_of(b);
  size_t i = 0, j = 0;
  while (i < ra.size() && j < rb.size()) {
    if (ra[i].first < rb[j].second && rb[j].first < ra[i].second) return true;
    if (ra[i].second <= rb[j].second)
      ++i;
    else
      ++j;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Hoisting loads (Compiler.hoist_loads)

struct HoistView {
  int64_t array;  // the array's identity (tiles compare by it)
  bool written;
  bool hbm;
  Box box;  // HBM only
};

struct HoistOp {
  int kind;  // 0 other, 1 load (HBM to SBUF), 2 another DMA copy (a store)
  std::vector<HoistView> views;
  std::vector<int64_t> arrays;  // sorted, unique
};

bool conflict(const HoistOp& a, const HoistOp& b) {
  // arrays disjoint: nothing to compare
  bool shared = false;
  for (size_t i = 0, j = 0; i < a.arrays.size() && j < b.arrays.size();) {
    if (a.arrays[i] == b.arrays[j]) {
      shared = true;
      break;
    }
    if (a.arrays[i] < b.arrays[j])
      ++i;
    else
      ++j;
  }
  if (!shared) return false;
  for (const auto& va : a.views)
    for (const auto& vb : b.views) {
      if (!(va.written || vb.written) || va.array != vb.array) continue;
      if (!va.hbm || overlap(va.box, vb.box)) return true;
    }
  return false;
}

// ops: [(kind, [(array id, written, HBM box or None), ...]), ...] in program order. Returns the
// new order (indices into ops).
std::vector<int64_t> hoist_loads(const py::list& ops_in, int depth, int window) {
  std::vector<HoistOp> ops;
  ops.reserve(ops_in.size());
  for (auto h : ops_in) {
    auto t = h.cast<py::tuple>();
    HoistOp op;
    op.kind = t[0].cast<int>();
    for (auto v : t[1].cast<py::list>()) {
      auto vt = v.cast<py::tuple>();
      HoistView hv{vt[0].cast<int64_t>(), vt[1].cast<bool>(), !vt[2].is_none(), {}};
      if (hv.hbm) hv.box = to_box(vt[2]);
      op.arrays.push_back(hv.array);
      op.views.push_back(std::move(hv));
    }
    std::sort(op.arrays.begin(), op.arrays.end());
    op.arrays.erase(std::unique(op.arrays.begin(), op.arrays.end()), op.arrays.end());
    ops.push_back(std::move(op));
  }
  std::vector<int64_t> order;
  order.reserve(ops.size());
  for (size_t n = 0; n < ops.size(); ++n) {
    size_t at = order.size();
    if (ops[n].kind == 1) {
      int stores = 0;
      while (at > 0 && static_cast<int>(order.size() - at) < window) {
        const HoistOp& prev = ops[order[at - 1]];
        bool is_load = prev.kind == 1, is_store = prev.kind == 2;
        if (is_load || (is_store && stores == depth) || conflict(prev, ops[n])) break;
        stores += is_store;
        --at;
      }
    }
    order.insert(order.begin() + at, static_cast<int64_t>(n));
  }
  return order;
}

// ---------------------------------------------------------------------------------------------
// Synchronisation (Compiler.synchronise)

constexpr int kSemaphores = 20;  // pe_done act_done dve_done cc_done dma0..dma15
constexpr int kQueues = 5;       // pe act dve sp cc
const char* const kSemNames[kSemaphores] = {"pe_done", "act_done", "dve_done", "cc_done", "dma0",  "dma1",  "dma2",
                                            "dma3",    "dma4",     "dma5",     "dma6",    "dma7",  "dma8",  "dma9",
                                            "dma10",   "dma11",    "dma12",    "dma13",   "dma14", "dma15"};
using Clock = std::array<int64_t, kSemaphores>;

struct SyncInstr {
  int queue, sem;
  int64_t count = 0;
  std::vector<Box> reads, writes;
  Clock issue_vc{};
};

int queue_of(const std::string& q) {
  static const char* names[kQueues] = {"pe", "act", "dve", "sp", "cc"};
  for (int i = 0; i < kQueues; ++i)
    if (q == names[i]) return i;
  throw py::value_error("queue '" + q + "': expected pe, act, dve, sp or cc");
}

int semaphore_of(int queue, int64_t engine) {
  if (queue == 3) {
    if (engine < 0 || engine >= 16) throw py::value_error("a DMA instruction without an engine 0..15");
    return 4 + static_cast<int>(engine);
  }
  return queue == 4 ? 3 : queue;
}

bool hazard(const SyncInstr& prev, const SyncInstr& ins) {
  for (const auto& w : prev.writes) {
    for (const auto& x : ins.reads)
      if (overlap(w, x)) return true;
    for (const auto& x : ins.writes)
      if (overlap(w, x)) return true;
  }
  for (const auto& r : prev.reads)
    for (const auto& w : ins.writes)
      if (overlap(r, w)) return true;
  return false;
}

// compiler.BUCKET_BYTES and BUCKET_PARTITIONS: the granules of the index of touched bytes.
constexpr int64_t kHbmBucket = 65536, kOnChipBucket = 2048, kBucketPartitions = 16;

void add_buckets(const Box& b, std::vector<uint64_t>& keys) {
  if (b.space == kHbm) {
    for (int64_t k = b.b0 / kHbmBucket; k <= (b.b1 - 1) / kHbmBucket; ++k) keys.push_back(uint64_t(k) << 2);
    return;
  }
  for (int64_t p = b.p0 / kBucketPartitions; p <= (b.p1 - 1) / kBucketPartitions; ++p)
    for (int64_t k = b.b0 / kOnChipBucket; k <= (b.b1 - 1) / kOnChipBucket; ++k)
      keys.push_back((uint64_t(k) << 16 | uint64_t(p)) << 2 | uint64_t(b.space));
}

// The semaphores whose signal is a fence: a signalling instruction of the tensor, scalar or
// vector engine holds its queue until the engine has drained (rtl/core/README.md), so an
// instruction of theirs signals only when something waits for it (or an epoch's barrier does).
constexpr bool fenced(int sem) { return sem < 3; }

// instrs: [(queue, engine or None, reads, writes), ...] in program order; semaphore_max: what a
// semaphore counts to. Returns (per instruction: (semaphore or None, count, [(semaphore, count)
// waited for, newest first]), epochs: [(position, {semaphore: final count})]).
//
// Two passes. The first gives every instruction a count on its semaphore and finds the waits
// (each queue and DMA engine completes in order, so "count c reached" means "that instruction
// and every earlier one of its semaphore completed"). The second drops the signals of fenced
// instructions nothing waits for and counts the rest again: a wait for the n-th signalling
// instruction means the same completion as before, since the order is the same.
py::tuple synchronise(const py::list& instrs_in, int64_t semaphore_max) {
  std::vector<SyncInstr> instrs;
  instrs.reserve(instrs_in.size());
  for (auto h : instrs_in) {
    auto t = h.cast<py::tuple>();
    SyncInstr ins;
    ins.queue = queue_of(t[0].cast<std::string>());
    ins.sem = semaphore_of(ins.queue, t[1].is_none() ? -1 : t[1].cast<int64_t>());
    ins.reads = to_boxes(t[2]);
    ins.writes = to_boxes(t[3]);
    instrs.push_back(std::move(ins));
  }
  using Wait = std::pair<int, int64_t>;  // semaphore, count
  std::vector<std::vector<Wait>> waits(instrs.size());
  std::vector<size_t> epoch_at;   // where each epoch ends (the position of the next's first)
  std::vector<Clock> finals;      // each epoch's final counts
  std::vector<int> epoch_of(instrs.size());
  Clock counts{};
  std::array<Clock, kQueues> queue_vc{};
  // bucket -> per semaphore, the instructions that touched it, oldest first
  std::unordered_map<uint64_t, std::array<std::vector<int32_t>, kSemaphores>> touched;
  std::vector<uint64_t> mine;
  for (size_t seq = 0; seq < instrs.size(); ++seq) {
    SyncInstr& ins = instrs[seq];
    if (counts[ins.sem] == semaphore_max) {
      // A semaphore would pass what it counts to: a new epoch (compiler.py's queues() writes
      // the barrier), and nothing after waits for anything before.
      epoch_at.push_back(seq);
      finals.push_back(counts);
      counts = {};
      touched.clear();
      queue_vc = {};
    }
    epoch_of[seq] = static_cast<int>(epoch_at.size());
    ins.count = ++counts[ins.sem];
    Clock& vc = queue_vc[ins.queue];
    mine.clear();
    for (const auto& b : ins.reads) add_buckets(b, mine);
    for (const auto& b : ins.writes) add_buckets(b, mine);
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    std::array<int32_t, kSemaphores> newest;
    newest.fill(-1);
    for (uint64_t key : mine) {
      auto it = touched.find(key);
      if (it == touched.end()) continue;
      for (int sem = 0; sem < kSemaphores; ++sem) {
        if (sem == ins.sem) continue;
        const auto& earlier = it->second[sem];
        int64_t known = vc[sem];
        for (auto p = earlier.rbegin(); p != earlier.rend(); ++p) {
          const SyncInstr& prev = instrs[*p];
          if (prev.count <= known || (newest[sem] >= 0 && prev.count <= instrs[newest[sem]].count)) break;
          if (prev.queue == ins.queue && ins.queue != 3) break;  // one engine queue runs in order
          if (hazard(prev, ins)) {
            newest[sem] = *p;
            break;
          }
        }
      }
    }
    std::vector<int32_t> found;
    for (int s = 0; s < kSemaphores; ++s)
      if (newest[s] >= 0) found.push_back(newest[s]);
    std::sort(found.begin(), found.end(), [](int32_t a, int32_t b) { return a > b; });  // the newest first
    for (int32_t p : found) {
      const SyncInstr& prev = instrs[p];
      if (vc[prev.sem] >= prev.count) continue;
      waits[seq].emplace_back(prev.sem, prev.count);
      for (int s = 0; s < kSemaphores; ++s) vc[s] = std::max(vc[s], prev.issue_vc[s]);
      vc[prev.sem] = std::max(vc[prev.sem], prev.count);
    }
    ins.issue_vc = vc;
    for (uint64_t key : mine) touched[key][ins.sem].push_back(static_cast<int32_t>(seq));
  }

  // Second pass: which counts something waits for (a wait, or an epoch's barrier), per epoch.
  const size_t epochs_n = epoch_at.size() + 1;
  std::vector<Clock> ends = finals;  // each epoch's counts at its end
  ends.push_back(counts);
  std::vector<std::array<std::vector<char>, kSemaphores>> waited(epochs_n);
  std::vector<std::array<std::vector<int64_t>, kSemaphores>> renumbered(epochs_n);
  for (size_t e = 0; e < epochs_n; ++e)
    for (int s = 0; s < kSemaphores; ++s) {
      waited[e][s].assign(static_cast<size_t>(ends[e][s]) + 1, 0);
      renumbered[e][s].assign(static_cast<size_t>(ends[e][s]) + 1, 0);
    }
  for (size_t seq = 0; seq < instrs.size(); ++seq)
    for (const Wait& w : waits[seq]) waited[epoch_of[seq]][w.first][w.second] = 1;
  for (size_t e = 0; e < finals.size(); ++e)
    for (int s = 0; s < kSemaphores; ++s)
      if (finals[e][s]) waited[e][s][finals[e][s]] = 1;
  // renumbered[e][s][old count] = the new count (0: it does not signal)
  std::vector<Clock> new_counts(epochs_n, Clock{});
  for (size_t seq = 0; seq < instrs.size(); ++seq) {
    const SyncInstr& ins = instrs[seq];
    const int e = epoch_of[seq];
    if (!fenced(ins.sem) || waited[e][ins.sem][ins.count])
      renumbered[e][ins.sem][ins.count] = ++new_counts[e][ins.sem];
  }
  py::list result, epochs;
  for (size_t seq = 0; seq < instrs.size(); ++seq) {
    const SyncInstr& ins = instrs[seq];
    const int e = epoch_of[seq];
    const int64_t count = renumbered[e][ins.sem][ins.count];
    py::list ws;
    for (const Wait& w : waits[seq]) ws.append(py::make_tuple(kSemNames[w.first], renumbered[e][w.first][w.second]));
    if (count)
      result.append(py::make_tuple(kSemNames[ins.sem], count, ws));
    else
      result.append(py::make_tuple(py::none(), 0, ws));
  }
  for (size_t e = 0; e < finals.size(); ++e) {
    py::dict final;
    for (int s = 0; s < kSemaphores; ++s)
      if (finals[e][s]) final[kSemNames[s]] = renumbered[e][s][finals[e][s]];
    epochs.append(py::make_tuple(epoch_at[e], final));
  }
  return py::make_tuple(result, epochs);
}

// ---------------------------------------------------------------------------------------------
// Placing tiles (Compiler.place_tiles)

// tiles: [(psum?, bytes per partition rounded up to 32), ...]; op_tiles: per operation in program
// order, the tiles it touches (indices into tiles); capacity: bytes per partition of SBUF and of
// PSUM; bank: a PSUM bank's bytes. Returns (each tile's address, or -1 when nothing touches it;
// None, or the tile that did not fit and the tiles live then).
py::tuple place_tiles(const std::vector<std::pair<bool, int64_t>>& tiles,
                      const std::vector<std::vector<int32_t>>& op_tiles, int64_t sbuf_capacity,
                      int64_t psum_capacity, int64_t bank) {
  const size_t n = tiles.size();
  std::vector<int64_t> first(n, -1), last(n, -1), addr(n, -1);
  for (size_t i = 0; i < op_tiles.size(); ++i)
    for (int32_t t : op_tiles[i]) {
      if (t < 0 || static_cast<size_t>(t) >= n) throw py::index_error("an operation touches tile " + std::to_string(t));
      if (first[t] < 0) first[t] = static_cast<int64_t>(i);
      last[t] = static_cast<int64_t>(i);
    }
  for (bool psum : {false, true}) {
    const int64_t capacity = psum ? psum_capacity : sbuf_capacity;
    std::vector<int32_t> order;
    for (size_t t = 0; t < n; ++t)
      if (tiles[t].first == psum && first[t] >= 0) order.push_back(static_cast<int32_t>(t));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first[a] < first[b]; });
    std::vector<int32_t> live;
    int64_t cursor = 0;
    for (int32_t tile : order) {
      live.erase(std::remove_if(live.begin(), live.end(), [&](int32_t x) { return last[x] < first[tile]; }),
                 live.end());
      const int64_t size = tiles[tile].second;
      const int64_t tile_bank = psum && size <= bank ? bank : 0;  // a matmul writes one PSUM bank
      // The first address at or after `from` where size bytes are free (inside one bank).
      auto fit = [&](int64_t from) -> int64_t {
        int64_t at = from;
        while (at + size <= capacity) {
          if (tile_bank && at / tile_bank != (at + size - 1) / tile_bank) {
            at = (at / tile_bank + 1) * tile_bank;
            continue;
          }
          int64_t clash_end = -1;
          for (int32_t x : live)
            if (addr[x] < at + size && at < addr[x] + tiles[x].second) clash_end = std::max(clash_end, addr[x] + tiles[x].second);
          if (clash_end < 0) return at;
          at = clash_end;
        }
        return -1;
      };
      int64_t at = fit(cursor);
      if (at < 0) at = fit(0);
      if (at < 0) return py::make_tuple(addr, py::make_tuple(tile, live));
      addr[tile] = at;
      live.push_back(tile);
      cursor = at + size;
    }
  }
  return py::make_tuple(addr, py::none());
}

}  // namespace

PYBIND11_MODULE(_backend, m) {
  m.doc() = "ncore.nki's compiler passes in C++ (tb/python/backend/README.md)";
  m.def("hoist_loads", &hoist_loads, py::arg("ops"), py::arg("depth"), py::arg("window"),
        "The order after hoisting loads: see compiler.Compiler.hoist_loads");
  m.def("synchronise", &synchronise, py::arg("instrs"), py::arg("semaphore_max"),
        "Each instruction's semaphore, count and waits, and the epochs: see compiler.Compiler.synchronise");
  m.def("place_tiles", &place_tiles, py::arg("tiles"), py::arg("op_tiles"), py::arg("sbuf_capacity"),
        py::arg("psum_capacity"), py::arg("bank"),
        "Each tile's address, or the tile that does not fit: see compiler.Compiler.place_tiles");
  m.def("overlap", [](const py::handle& a, const py::handle& b) { return overlap(to_box(a), to_box(b)); },
        py::arg("a"), py::arg("b"), "Whether two byte boxes share bytes (compiler._overlap)");
}
