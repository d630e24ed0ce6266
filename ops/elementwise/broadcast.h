// NumPy broadcasting at run time: the broadcast sizes of two operands, and a
// loop plan over the output that collapses adjacent axes wherever both
// operands stay contiguous (or both stay broadcast), so the inner loop is as
// long as possible and usually unit-stride.
//
//   auto out = broadcast_sizes(a.sizes(), b.sizes());          // nullopt if incompatible
//   BroadcastPlan plan(*out, a.sizes(), b.sizes());
//   plan.for_each([&](int64_t out_offset, int64_t a_offset, int64_t b_offset, int64_t count) {
//     for (int64_t i = 0; i < count; ++i)
//       y[out_offset + i] = x[a_offset + i * plan.inner_stride_a()] + z[b_offset + i * plan.inner_stride_b()];
//   });
//
// The same plan drives reductions to a broadcast shape (SumToShape): plan
// over the large tensor, with the small one as the broadcast operand.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace weir {

std::optional<std::vector<int64_t>> broadcast_sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

class BroadcastPlan {
 public:
  // `a` and `b` must broadcast to `out` (checked by the caller with broadcast_sizes).
  BroadcastPlan(const std::vector<int64_t>& out, const std::vector<int64_t>& a, const std::vector<int64_t>& b);

  int64_t num_elements() const { return num_elements_; }
  int64_t inner_stride_a() const { return inner_stride_a_; }  // 0 (broadcast) or 1
  int64_t inner_stride_b() const { return inner_stride_b_; }

  // Calls fn(out_offset, a_offset, b_offset, count) for each inner run, in
  // output order; element i of a run is at a_offset + i * inner_stride_a().
  template <typename Fn>
  void for_each(Fn&& fn) const { for_each_in(0, num_elements_, fn); }

  // The same, restricted to output elements [begin, end): runs are cut at
  // both ends. Disjoint ranges can run on different threads.
  template <typename Fn>
  void for_each_in(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  std::vector<int64_t> sizes_;     // collapsed outer axes (the inner axis excluded)
  std::vector<int64_t> stride_a_;  // element strides of the outer axes
  std::vector<int64_t> stride_b_;
  int64_t inner_size_ = 1;
  int64_t inner_stride_a_ = 0;
  int64_t inner_stride_b_ = 0;
  int64_t num_elements_ = 0;
};

template <typename Fn>
void BroadcastPlan::for_each_in(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end) return;
  const size_t rank = sizes_.size();
  // Position the odometer at the run that holds `begin`.
  std::vector<int64_t> index(rank, 0);
  int64_t run = begin / inner_size_;
  int64_t a_offset = 0;
  int64_t b_offset = 0;
  for (size_t axis = rank; axis-- > 0;) {
    index[axis] = run % sizes_[axis];
    run /= sizes_[axis];
    a_offset += index[axis] * stride_a_[axis];
    b_offset += index[axis] * stride_b_[axis];
  }
  int64_t within = begin % inner_size_;
  for (int64_t position = begin; position < end;) {
    int64_t count = std::min(inner_size_ - within, end - position);
    fn(position, a_offset + within * inner_stride_a_, b_offset + within * inner_stride_b_, count);
    position += count;
    within = 0;
    // Advance the outer index like an odometer, updating offsets incrementally.
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < sizes_[axis]) {
        a_offset += stride_a_[axis];
        b_offset += stride_b_[axis];
        break;
      }
      a_offset -= stride_a_[axis] * (sizes_[axis] - 1);
      b_offset -= stride_b_[axis] * (sizes_[axis] - 1);
      index[axis] = 0;
    }
  }
}

}  // namespace weir
