#include "core/allocation_limits.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace weir {
namespace {

uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{1} << 40;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

// A byte count from the environment: digits with an optional K, M, G or T
// suffix (powers of 1024). An unset or malformed variable gives `fallback`;
// a malformed one is an error at the edge, so it is reported, not ignored.
uint64_t bytes_from_env(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  int shift = 0;
  switch (*end) {
    case 'K': case 'k': shift = 10; ++end; break;
    case 'M': case 'm': shift = 20; ++end; break;
    case 'G': case 'g': shift = 30; ++end; break;
    case 'T': case 't': shift = 40; ++end; break;
    default: break;
  }
  if (end == text || *end != '\0' || value > (~0ULL >> shift)) {
    throw Error(ErrorKind::kInvalidArgument, std::string(name) + "='" + text +
                                                 "' is not a byte count (digits with an optional K, M, G or T)");
  }
  return static_cast<uint64_t>(value) << shift;
}

struct Limits {
  std::atomic<uint64_t> tensor;
  std::atomic<uint64_t> model;
  Limits() {
    uint64_t memory = physical_memory_bytes();
    tensor = bytes_from_env("WEIR_MAX_TENSOR_BYTES", memory);
    model = bytes_from_env("WEIR_MAX_MODEL_BYTES", memory);
  }
};

thread_local LoadBudget* current_budget = nullptr;

Limits& limits() {
  static Limits instance;
  return instance;
}

std::string over_limit(uint64_t bytes, const std::string& what, uint64_t limit, const char* per, const char* variable) {
  return what + " needs " + std::to_string(bytes) + " bytes, over the limit of " + std::to_string(limit) +
         " bytes per " + per + " (" + variable + ")";
}

}  // namespace

AllocationLimits allocation_limits() {
  return {limits().tensor.load(std::memory_order_relaxed), limits().model.load(std::memory_order_relaxed)};
}

void set_allocation_limits(const AllocationLimits& new_limits) {
  limits().tensor.store(new_limits.max_tensor_bytes, std::memory_order_relaxed);
  limits().model.store(new_limits.max_model_bytes, std::memory_order_relaxed);
}

void charge_allocation(uint64_t bytes, const std::string& what) {
  AllocationLimits caps = allocation_limits();
  if (bytes > caps.max_tensor_bytes) {
    throw Error(ErrorKind::kOutOfMemory, over_limit(bytes, what, caps.max_tensor_bytes, "tensor", "WEIR_MAX_TENSOR_BYTES"));
  }
  LoadBudget* budget = current_budget;
  if (budget == nullptr) return;
  if (bytes > caps.max_model_bytes - std::min(budget->charged_, caps.max_model_bytes)) {
    throw Error(ErrorKind::kOutOfMemory,
                over_limit(bytes, what + " (after " + std::to_string(budget->charged_) + " bytes declared before it)",
                           caps.max_model_bytes, "model", "WEIR_MAX_MODEL_BYTES"));
  }
  budget->charged_ += bytes;
}

LoadBudget::LoadBudget() : outer_(current_budget) { current_budget = this; }

LoadBudget::~LoadBudget() { current_budget = outer_; }

}  // namespace weir
