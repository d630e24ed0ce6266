#include "ops/tensor/indexing.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/shape.h"
#include "ops/dtype_dispatch.h"

namespace weir {

std::vector<int64_t> index_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<int64_t> values(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kInt64) {
    std::copy_n(t.data<int64_t>(), values.size(), values.begin());
  } else if (t.dtype() == DType::kInt32) {
    std::copy_n(t.data<int32_t>(), values.size(), values.begin());
  } else {
    ctx.fail(std::string(what) + " must be i32 or i64, got " + t.type_string());
  }
  return values;
}

std::vector<double> float_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<double> values(static_cast<size_t>(t.num_elements()));
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<ComputeType<T>>) {
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(load(t.data<T>()[i]));
    } else {
      ctx.fail(std::string(what) + " must be floating point, got " + t.type_string());
    }
  });
  return values;
}

std::vector<SliceAxis> resolve_slice(const std::vector<int64_t>& sizes, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                     const std::vector<int64_t>* steps, const FailFn& fail_fn) {
  auto fail = [&](const std::string& message) {
    fail_fn(message);
    throw Error(ErrorKind::kShape, message);  // fail_fn throws; this is never reached
  };
  auto rank = static_cast<int64_t>(sizes.size());
  if (starts.size() != ends.size() || (axes != nullptr && axes->size() != starts.size()) ||
      (steps != nullptr && steps->size() != starts.size())) {
    fail("starts " + format_sizes(starts) + ", ends " + format_sizes(ends) + ", axes and steps must have one entry each");
  }
  std::vector<SliceAxis> result(sizes.size());
  for (size_t a = 0; a < sizes.size(); ++a) result[a] = {0, 1, sizes[a]};
  std::vector<bool> seen(sizes.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes != nullptr ? (*axes)[i] : static_cast<int64_t>(i);
    if (axis < -rank || axis >= rank) fail("slice axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    if (seen[static_cast<size_t>(axis)]) fail("slice axis " + std::to_string(axis) + " appears twice");
    seen[static_cast<size_t>(axis)] = true;
    int64_t step = steps != nullptr ? (*steps)[i] : 1;
    if (step == 0) fail("slice step on axis " + std::to_string(axis) + " is 0");
    int64_t dim = sizes[static_cast<size_t>(axis)];
    auto clamp_index = [&](int64_t value) {
      if (value < 0) value += dim;
      return step > 0 ? std::clamp<int64_t>(value, 0, dim) : std::clamp<int64_t>(value, -1, dim - 1);
    };
    // Huge sentinels (INT64_MAX, INT64_MIN) must not overflow when a dim is added.
    int64_t start = starts[i] < -dim ? (step > 0 ? 0 : -1) : clamp_index(starts[i]);
    int64_t end = ends[i] < -dim ? (step > 0 ? 0 : -1) : clamp_index(ends[i]);
    int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    result[static_cast<size_t>(axis)] = {start, step, std::max<int64_t>(0, count)};
  }
  return result;
}

void copy_slice(const std::vector<int64_t>& sizes, const std::vector<SliceAxis>& axes, size_t element_size,
                const void* in, void* out, bool scatter) {
  size_t rank = sizes.size();
  int64_t total = 1;
  for (const SliceAxis& axis : axes) total *= axis.count;
  if (total == 0) return;
  std::vector<int64_t> strides(rank, 1);
  for (size_t a = rank; a-- > 1;) strides[a - 1] = strides[a] * sizes[a];
  std::vector<int64_t> index(rank, 0);
  const auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(out);
  for (int64_t dense = 0; dense < total; ++dense) {
    int64_t offset = 0;
    for (size_t a = 0; a < rank; ++a) offset += (axes[a].start + index[a] * axes[a].step) * strides[a];
    if (scatter) {
      std::memcpy(dst + static_cast<size_t>(offset) * element_size, src + static_cast<size_t>(dense) * element_size, element_size);
    } else {
      std::memcpy(dst + static_cast<size_t>(dense) * element_size, src + static_cast<size_t>(offset) * element_size, element_size);
    }
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < axes[a].count) break;
      index[a] = 0;
    }
  }
}

}  // namespace weir
