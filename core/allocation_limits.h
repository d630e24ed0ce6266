// Caps on what reading a file may allocate.
//
// Sizes in models, plans, tensor files and checkpoints come from the file,
// so a small corrupt or hostile file can declare terabytes. Every loader
// charges what it is about to allocate before allocating it, and fails with
// an error that names the tensor, the size and the cap:
//
//   weir::LoadBudget budget;                                 // one per model load, on this thread
//   weir::charge_allocation(bytes, "initializer 'W'");       // throws kOutOfMemory past a cap
//
// charge_allocation() checks the per-tensor cap, and the per-model cap
// against the running total of the innermost LoadBudget alive on the
// calling thread (a load runs on one thread; a nested load, such as a
// sub-model, counts on its own).
//
// The caps default to the machine's physical memory (nothing larger could
// ever be held) and can be changed for the process with the environment
// variables WEIR_MAX_TENSOR_BYTES and WEIR_MAX_MODEL_BYTES (digits with an
// optional K, M, G or T; read once) or set_allocation_limits().
#pragma once

#include <cstdint>
#include <string>

namespace weir {

struct AllocationLimits {
  uint64_t max_tensor_bytes = 0;  // one tensor (or one buffer, such as a plan's arena)
  uint64_t max_model_bytes = 0;   // everything one model, plan or checkpoint declares
};

AllocationLimits allocation_limits();
void set_allocation_limits(const AllocationLimits& limits);

// Throws weir::Error(kOutOfMemory) naming `what`, the size and the cap when
// `bytes` is over the per-tensor cap or would take the innermost LoadBudget
// of this thread over the per-model cap; otherwise adds it to that budget.
void charge_allocation(uint64_t bytes, const std::string& what);

// The running total of one load, active on its thread while it lives.
class LoadBudget {
 public:
  LoadBudget();
  ~LoadBudget();
  LoadBudget(const LoadBudget&) = delete;
  LoadBudget& operator=(const LoadBudget&) = delete;
  uint64_t charged() const { return charged_; }

 private:
  friend void charge_allocation(uint64_t bytes, const std::string& what);
  LoadBudget* outer_;
  uint64_t charged_ = 0;
};

}  // namespace weir
