#pragma once
// The PE array as column slices on threads (issue 52; rtl/tensor/README.md, "Column slices").
//
// The engine is Verilated with ExternalArray (nc_tensor_engine_tb's arr_* ports carry what it
// would give its own array, and take the array's bottom row); the array is Verilated once as a
// slice of SliceCols columns (tb/tensor/nc_array_slice_tb.sv) and instanced Cols / SliceCols
// times, each with its own first column. A sum only moves down its
// column, so slices exchange nothing: every cycle each slice takes the engine's array inputs and
// makes the clock edge on its own, and N threads share the slices (slice s on thread s mod N).
// The engine's own edge follows, reading the bottom row of the edge before, as it would from the
// array's registers; then the slices' new bottom rows become its inputs. Outputs and cycles are
// the same for every N (tests/test_array_slices.cpp checks them against the engine with its
// array inside).
//
// Threads wait for each cycle by spinning (a fork and a join per cycle is far too often to sleep
// between them), and sleep on a condition variable only after spinning a while without work
// (the engine alone between runs, or more threads than the machine has cores free): on a busy
// machine they still slow down sharply, as Verilator's own threads do.
// Waves: the engine's signals only; the slices are not traced (the probed PE is inside a slice).

#include <atomic>
#include <condition_variable>
#include <cstring>
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
      slices_.push_back(std::move(slice));
    }
    threads_ = threads < 1 ? 1 : threads;  // make_te_sim refuses more threads than slices
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { work(t); });
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

  // Before the engine's edge: every slice takes the array inputs and makes its edge.
  void before_rise() override {
    done_.store(0);
    release_workers();
    step_slices(0);
    for (int spins = 0; done_.load() != threads_ - 1; ++spins) {
      if (spins < kSpins) spin_pause();
      else std::this_thread::yield();  // a worker is not running: give it the core
    }
  }
  // After it: the slices' bottom rows become the engine's inputs.
  void after_rise() override {
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

  void step_slices(int thread) {
    for (size_t s = static_cast<size_t>(thread); s < slices_.size(); s += static_cast<size_t>(threads_)) {
      Slice& slice = *slices_[s];
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
      slice.clk_i = 0;
      slice.eval();
      slice.clk_i = 1;
      slice.eval();
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

  void work(int thread) {
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
      step_slices(thread);
      done_.fetch_add(1);
    }
  }

  static constexpr int kSpins = 20000;  // about 10-40 us of pause instructions

  Engine& engine_;
  const int width_;  // columns per slice
  std::vector<std::unique_ptr<Slice>> slices_;
  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0}, sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace ncore::tb
