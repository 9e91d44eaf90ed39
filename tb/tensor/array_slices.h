#pragma once
// The PE array as column slices on threads (issue 52; rtl/tensor/README.md, "Column slices").
//
// The engine is Verilated with ExternalArray (nc_tensor_engine_tb's arr_* ports carry what it
// would give its own array, and take the array's bottom row); the array is Verilated once as a
// slice of SliceCols columns (nc_systolic_array as the top) and instanced Cols / SliceCols
// times, each with its own first column. A sum only moves down its column, so slices exchange
// nothing, and a slice's edge needs only what the engine gave it before the edge.
//
// One clock edge: the engine's array outputs are copied into every slice; the workers start
// taking slices, one at a time, and making their edges; meanwhile the calling thread makes the
// engine's own edge (it reads the bottom row of the edge before, as it would from the array's
// registers), then takes slices too until none is left; when every slice has made its edge,
// their new bottom rows become the engine's inputs. So the engine's evaluation overlaps the
// slices' instead of adding to them, and slices smaller than a thread's share (more slices than
// threads) balance the threads' work. Outputs and cycles are the same for every thread count,
// whichever thread steps a slice (tests/test_rtl_fast.cpp checks them against the engine with
// its array inside).
//
// Threads wait for each cycle by spinning (a fork and a join per cycle is far too often to sleep
// between them), and sleep on a condition variable only after spinning a while without work
// (the engine alone between runs, or more threads than the machine has cores free): on a busy
// machine they still slow down sharply, as Verilator's own threads do.
// Waves: the engine's signals only; the slices are not traced (the probed PE is inside a slice).

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <verilated.h>

#include "tb/common/bench.h"

namespace ncore::tb {

template <class Engine, class Slice>
class ArraySlices final : public BesideTop {
 public:
  // `slices` models of cols / slices columns each, stepped by `threads` threads (1..slices).
  // `context`: the engine's (Verilator keeps a thread's current context, and a model's scopes
  // leave it when the model is destroyed: one context outliving every model is the safe way).
  ArraySlices(Engine& engine, VerilatedContext& context, int cols, int slices, int threads)
      : engine_(engine), width_(cols / slices) {
    for (int s = 0; s < slices; ++s) {
      auto slice = std::make_unique<Slice>(&context, fmt::format("slice{}", s).c_str());
      slice->col_base_i = static_cast<std::remove_reference_t<decltype(slice->col_base_i)>>(s * width_);
      slice->clk_i = 0;
      slice->rst_ni = engine.rst_ni;
      slice->eval();  // its initial blocks here, on this thread (the fast build's environment check)
      slices_.push_back(std::move(slice));
    }
    threads_ = threads < 1 ? 1 : threads;  // make_te_sim refuses more threads than slices
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ArraySlices() override {
    stop_.store(true);
    release_workers();
    for (auto& w : workers_) w.join();
    for (auto& s : slices_) s->final();
  }
  ArraySlices(const ArraySlices&) = delete;
  ArraySlices& operator=(const ArraySlices&) = delete;

  int threads() const { return threads_; }

  // Before the engine's edge: every slice takes the array inputs, and the workers start the
  // slices' edges.
  void before_rise() override {
    for (auto& slice : slices_) take_inputs(*slice);
    done_.store(0);
    next_.store(0);  // after the inputs: a worker that takes a slice sees them
    release_workers();
  }
  // After the engine's edge: this thread steps what slices are left, waits for the rest, and
  // gives the engine their bottom rows.
  void after_rise() override {
    step_slices();
    for (int spins = 0; done_.load() != static_cast<int>(slices_.size()); ++spins) {
      if (spins < kSpins) spin_pause();
      else std::this_thread::yield();  // a worker is not running: give it the core
    }
    if (failed_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::rethrow_exception(error_);  // a worker's, on the engine's thread
    }
    for (size_t s = 0; s < slices_.size(); ++s)
      for (int j = 0; j < width_; ++j) engine_.arr_out_sum_i[static_cast<int>(s) * width_ + j] = slices_[s]->out_sum_o[j];
  }

 private:
  // A port of the engine to the same port of a slice: the same SystemVerilog type, so the same
  // C++ type (a top's unpacked array is a C array, copied whole).
  template <class To, class From>
  static void copy_port(To& to, const From& from) {
    static_assert(std::is_same_v<std::remove_cv_t<To>, std::remove_cv_t<From>>, "ports of different types");
    std::memcpy(&to, &from, sizeof to);
  }

  static void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // The engine's array outputs of this cycle into a slice's inputs (before the engine's edge
  // changes them).
  void take_inputs(Slice& slice) {
    slice.rst_ni = engine_.rst_ni;
    // Weights only when some lane writes (a slice reads them for nothing else).
    slice.w_we_i = engine_.arr_w_we_o;
    if (engine_.arr_w_we_o) {
      copy_port(slice.w_row_en_i, engine_.arr_w_row_en_o);
      slice.w_bank_i = engine_.arr_w_bank_o;
      copy_port(slice.w_col_i, engine_.arr_w_col_o);
      copy_port(slice.w_col_data_i, engine_.arr_w_col_data_o);
      copy_port(slice.w_col_data1_i, engine_.arr_w_col_data1_o);
      copy_port(slice.w_col_aux_i, engine_.arr_w_col_aux_o);
    }
    copy_port(slice.in_row_i, engine_.arr_in_row_o);
    slice.in_op_i = engine_.arr_in_op_o;
    slice.in_sparsity_i = engine_.arr_in_sparsity_o;
    copy_port(slice.in_data_i, engine_.arr_in_data_o);
  }

  // Takes slices not yet taken this cycle and makes their edges. A worker still here from the
  // cycle before takes nothing (next_ is past the end) or, once next_ is reset, a slice of the
  // new cycle, whose inputs are already in place.
  void step_slices() {
    const int count = static_cast<int>(slices_.size());
    for (int s = next_.fetch_add(1); s < count; s = next_.fetch_add(1)) {
      Slice& slice = *slices_[static_cast<size_t>(s)];
      try {
        slice.clk_i = 0;
        slice.eval();
        slice.clk_i = 1;
        slice.eval();
      } catch (...) {  // kept for after_rise: an exception must not leave a worker thread
        std::lock_guard<std::mutex> lock(mutex_);
        if (!failed_.load()) error_ = std::current_exception();
        failed_.store(true);
      }
      done_.fetch_add(1);
    }
  }

  // A new cycle (or the end) for the workers; wakes those asleep. A worker counts itself in
  // sleepers_ before it checks the generation under the mutex, so none misses a release.
  void release_workers() {
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      wake_.notify_all();
    }
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      for (int spins = 0; generation_.load() == seen; ++spins) {
        if (spins < kSpins) {
          spin_pause();
          continue;
        }
        sleepers_.fetch_add(1);
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load() != seen; });
        }
        sleepers_.fetch_sub(1);
      }
      seen = generation_.load();
      if (stop_.load()) return;
      step_slices();
    }
  }

  static constexpr int kSpins = 20000;  // about 10-40 us of pause instructions

  Engine& engine_;
  const int width_;  // columns per slice
  std::vector<std::unique_ptr<Slice>> slices_;
  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> next_{0}, done_{0}, sleepers_{0};  // next_: the next slice to take
  std::atomic<bool> stop_{false}, failed_{false};
  std::exception_ptr error_;  // the first exception a slice threw (under mutex_)
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace ncore::tb
