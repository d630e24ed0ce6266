#include "ops/quantization/quantization_common.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ops/threading.h"

namespace weir {

namespace {
std::atomic<int> forced_by_tests{0};
}  // namespace

bool quantized_reference_forced() {
  static const bool by_environment = [] {
    const char* value = std::getenv("WEIR_QUANTIZED_REFERENCE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return by_environment || forced_by_tests.load(std::memory_order_relaxed) > 0;
}

ScopedQuantizedReference::ScopedQuantizedReference() { forced_by_tests.fetch_add(1); }
ScopedQuantizedReference::~ScopedQuantizedReference() { forced_by_tests.fetch_sub(1); }

std::vector<float> scale_values(const KernelContext& ctx, const Tensor& scale, const std::string& name) {
  if (scale.dtype() != DType::kFloat32) ctx.fail(name + " must be f32, got " + scale.type_string());
  const float* data = scale.data<float>();
  return std::vector<float>(data, data + scale.num_elements());
}

std::vector<int32_t> zero_point_values(const KernelContext& ctx, const Tensor& zero_point, DType expected,
                                       const std::string& name) {
  if (zero_point.dtype() != expected) {
    ctx.fail(name + " " + zero_point.type_string() + " must have the type of its tensor, " +
             std::string(dtype_name(expected)));
  }
  std::vector<int32_t> values(static_cast<size_t>(zero_point.num_elements()));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (expected) {
      case DType::kInt8:
        values[i] = zero_point.data<int8_t>()[i];
        break;
      case DType::kUInt8:
        values[i] = zero_point.data<uint8_t>()[i];
        break;
      case DType::kInt32:
        values[i] = zero_point.data<int32_t>()[i];
        break;
      default:
        ctx.fail(name + " " + zero_point.type_string() + " must be i8, u8 or i32");
    }
  }
  return values;
}

namespace {

// A tile of the product: kRows rows by up to kColumns columns, summed in
// registers-sized blocks that stay in L1 while B's rows stream past.
constexpr int64_t kRows = 4;
constexpr int64_t kColumns = 256;

void gemm_tile(int64_t n, int64_t k, const IntGemmItem& item, int64_t row0, int64_t rows, int64_t col0, int64_t width) {
  // Unsigned sums: wrapping is defined, and the bits are int32's.
  std::array<std::array<uint32_t, kColumns>, kRows> sums{};
  for (int64_t kk = 0; kk < k; ++kk) {
    const int16_t* b_row = item.b + kk * n + col0;
    for (int64_t r = 0; r < rows; ++r) {
      auto a_value = static_cast<int32_t>(item.a[(row0 + r) * k + kk]);
      if (a_value == 0) continue;
      uint32_t* sum = sums[static_cast<size_t>(r)].data();
      for (int64_t j = 0; j < width; ++j) sum[j] += static_cast<uint32_t>(a_value * static_cast<int32_t>(b_row[j]));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* c_row = item.c + (row0 + r) * n + col0;
    const uint32_t* sum = sums[static_cast<size_t>(r)].data();
    for (int64_t j = 0; j < width; ++j) c_row[j] = static_cast<int32_t>(sum[j]);
  }
}

}  // namespace

void int_gemm(int64_t m, int64_t n, int64_t k, const std::vector<IntGemmItem>& items) {
  if (m <= 0 || n <= 0 || items.empty()) return;
  const int64_t row_blocks = (m + kRows - 1) / kRows;
  const int64_t column_blocks = (n + kColumns - 1) / kColumns;
  const int64_t tiles_per_item = row_blocks * column_blocks;
  const int64_t tiles = tiles_per_item * static_cast<int64_t>(items.size());
  // About 64K multiply-adds per thread at least.
  const int64_t tile_work = kRows * std::min(n, kColumns) * std::max<int64_t>(k, 1);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / tile_work);
  parallel_for(tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      // Consecutive tiles share a column block, so B's block is reused from cache.
      const IntGemmItem& item = items[static_cast<size_t>(t / tiles_per_item)];
      int64_t within = t % tiles_per_item;
      int64_t column_block = within / row_blocks, row_block = within % row_blocks;
      int64_t row0 = row_block * kRows, col0 = column_block * kColumns;
      gemm_tile(n, k, item, row0, std::min(kRows, m - row0), col0, std::min(kColumns, n - col0));
    }
  });
}

}  // namespace weir
