// The optimizer rule a parameter-server table applies to one row (a sparse
// table's row, or a dense table's slice): the same formulas as the graph's
// update ops (ops/optimizer), so a table trained through the servers
// follows the same path as the parameter trained in the graph.
//
//   weir::ps::RowRule rule(config);                   // from the table's configuration
//   std::vector<float> state(rule.state_floats(width));
//   rule.apply(row, state.data(), gradient, width, lr);
#pragma once

#include <cstdint>

#include "core/parameter_client.h"

namespace weir::ps {

class RowRule {
 public:
  explicit RowRule(const ParameterTableConfig& config);

  // Floats of optimizer state per row of `width`: SGD and delta none,
  // Adagrad the accumulator, Adam m, v and the row's own step count.
  int64_t state_floats(int64_t width) const;

  // Updates `values` (and `state`) by `gradient` at learning rate `lr`;
  // kDelta adds `gradient` and ignores lr.
  void apply(float* values, float* state, const float* gradient, int64_t width, float lr) const;

 private:
  TableRule rule_;
  double epsilon_, beta1_, beta2_;
};

}  // namespace weir::ps
