#pragma once
// The PE array as column slices on threads (issue 52; rtl/tensor/README.md, "Column slices").
//
// The engine is Verilated with ExternalArray (nc_tensor_engine_tb's arr_* ports carry what it
// would give its own array, and take the array's bottom row); the array is Verilated once with
// Sliced (nc_systolic_array as the top, its first column and column count set at run time) and
// instanced once per thread. A sum only moves down its column, so slices exchange nothing, and
// a slice's edge needs only what the engine gave it before the edge.
//
// One clock edge: once the engine's clock has fallen (Bench::fall(): its outputs for the cycle
// are settled, and the harness changes no input before the rise), the engine's array outputs are
// copied into every slice and each worker thread makes its own slice's edge; meanwhile the
// calling thread runs the harness's work of the cycle, makes the engine's own edge (it reads the
// bottom row of the edge before, as it would from the array's registers) and then its own,
// narrower slice's; when every slice has made its edge, their new bottom rows become the
// engine's inputs. The engine's thread takes `engine_cols` fewer columns than the others, the
// engine's evaluation counted in columns of PE work, so that the threads finish together. Each
// thread keeps its own slice, so a slice's state stays in that core's cache; but a thread with
// nothing left takes any slice not yet taken this cycle, so a worker the machine has not
// scheduled (a busy machine, more threads than cores) delays no one. Outputs and cycles are the
// same for every thread count and every split, whichever thread steps a slice
// (tests/test_rtl_fast.cpp checks them against the engine with its array inside).
//
// Threads wait for each cycle by spinning (a fork and a join per cycle is far too often to sleep
// between them), and sleep on a condition variable only after spinning a while without work
// (the engine alone between runs, or more threads than the machine has cores free): on a busy
// machine they still slow down sharply, as Verilator's own threads do.
// Waves: the engine's signals only; the slices are not traced (the probed PE is inside a slice).

#include <atomic>
#include <chrono>
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
#include "tb/tensor/te_sim.h"  // array_slice_widths

namespace ncore::tb {

template <class Engine, class Slice>
class ArraySlices final : public BesideTop {
 public:
  // `threads` slices of a `cols`-column array, one per thread (the calling thread's first),
  // split by array_slice_widths(). `context`: the engine's (Verilator keeps a thread's current
  // context, and a model's scopes leave it when the model is destroyed: one context outliving
  // every model is the safe way).
  // `watchdog_seconds`: how long after_rise waits for a cycle's slices before it reports them;
  // `never_done`: TeFault::kSliceNeverDone (the last slice is never counted, for the watchdog's
  // test).
  ArraySlices(Engine& engine, VerilatedContext& context, int cols, int threads, int engine_cols,
              double watchdog_seconds, bool never_done)
      : engine_(engine), watchdog_(watchdog_seconds), never_done_(never_done) {
    int base = 0;
    for (int width : array_slice_widths(cols, threads, engine_cols)) {
      auto slice = std::make_unique<Slice>(&context, fmt::format("slice{}", slices_.size()).c_str());
      using Col = std::remove_reference_t<decltype(slice->col_base_i)>;
      slice->col_base_i = static_cast<Col>(base);
      slice->col_count_i = static_cast<Col>(width);
      slice->clk_i = 0;
      slice->rst_ni = engine.rst_ni;
      slice->eval();  // its initial blocks here, on this thread (the fast build's environment check)
      slices_.push_back(std::move(slice));
      bases_.push_back(base);
      widths_.push_back(width);
      base += width;
    }
    taken_ = std::make_unique<std::atomic<bool>[]>(slices_.size());
    for (size_t t = 1; t < slices_.size(); ++t) workers_.emplace_back([this, t] { work(t); });
  }
  ~ArraySlices() override {
    stop_.store(true);
    release_workers();
    for (auto& w : workers_) w.join();
    for (auto& s : slices_) s->final();
  }
  ArraySlices(const ArraySlices&) = delete;
  ArraySlices& operator=(const ArraySlices&) = delete;

  // After the engine's clock fell (or before its edge): every slice takes the array inputs, and
  // the workers start their slices' edges.
  // Order matters: a slice can be taken (taken_ false) only once its inputs are in place and
  // done_ counts this cycle.
  void before_rise() override {
    for (auto& slice : slices_) take_inputs(*slice);
    done_.store(0);
    for (size_t s = 0; s < slices_.size(); ++s) taken_[s].store(false);
    release_workers();
  }
  // After the engine's edge: this thread steps its own slice and any not yet taken, waits for
  // the rest, and gives the engine every slice's bottom row.
  void after_rise() override {
    step_from(0);
    const int count = static_cast<int>(slices_.size());
    std::chrono::steady_clock::time_point waiting_since;
    for (uint64_t spins = 0; done_.load() != count; ++spins) {  // 64 bits: any watchdog length
      if (spins < kSpins) {
        spin_pause();
        continue;
      }
      std::this_thread::yield();  // a worker is not running: give it the core
      // The watchdog: a slice's edge takes well under a second even on a busy machine, so a cycle
      // still short of slices after watchdog_ was miscounted (the workers are idle, and are
      // stopped and joined as ever when the harness is destroyed).
      if (spins == kSpins) waiting_since = std::chrono::steady_clock::now();
      if (spins % kSpins == 0 && std::chrono::steady_clock::now() - waiting_since > watchdog_)
        throw Error(fmt::format("array slices: {} of {} slices made the clock edge within {} s "
                                "(the watchdog, tb/tensor/array_slices.h)",
                                done_.load(), count, watchdog_.count()));
    }
    if (failed_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::rethrow_exception(error_);  // a worker's, on the engine's thread
    }
    for (size_t s = 0; s < slices_.size(); ++s)
      for (int j = 0; j < widths_[s]; ++j) engine_.arr_out_sum_i[bases_[s] + j] = slices_[s]->out_sum_o[j];
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

  // Thread t's slice, then every other slice not yet taken this cycle, each made one edge and
  // counted done. An exception is kept for after_rise: it must not leave a worker thread.
  void step_from(size_t t) {
    const size_t count = slices_.size();
    for (size_t i = 0; i < count; ++i) {
      const size_t s = (t + i) % count;
      if (taken_[s].exchange(true)) continue;
      if (widths_[s] > 0) {  // the engine's thread's share may be the engine alone
        Slice& slice = *slices_[s];
        try {
          slice.clk_i = 0;
          slice.eval();
          slice.clk_i = 1;
          slice.eval();
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!failed_.load()) error_ = std::current_exception();
          failed_.store(true);
        }
      }
      if (never_done_ && s + 1 == slices_.size()) continue;
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

  // Worker t: its slice and any left, once per release. A worker that wakes late finds its slice
  // taken (by the engine's thread) or, once before_rise has freed it again, takes it for the new
  // cycle, whose inputs are then already in place.
  void work(size_t t) {
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
      step_from(t);
    }
  }

  static constexpr int kSpins = 20000;  // about 10-40 us of pause instructions

  Engine& engine_;
  const std::chrono::duration<double> watchdog_;
  const bool never_done_;
  std::vector<std::unique_ptr<Slice>> slices_;  // [0]: the engine's thread's
  std::vector<int> bases_, widths_;             // each slice's first column and column count
  std::vector<std::thread> workers_;            // worker t - 1 steps slice t first
  std::unique_ptr<std::atomic<bool>[]> taken_;  // per slice: stepped, or being stepped, this cycle
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0}, sleepers_{0};  // done_: slices stepped this cycle
  std::atomic<bool> stop_{false}, failed_{false};
  std::exception_ptr error_;  // the first exception a slice threw (under mutex_)
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace ncore::tb
