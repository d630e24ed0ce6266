#include "distributed/ps/row_rule.h"

#include <cmath>

namespace weir::ps {

RowRule::RowRule(const ParameterTableConfig& config)
    : rule_(config.rule),
      epsilon_(config.epsilon > 0 ? config.epsilon : config.rule == TableRule::kAdagrad ? 1e-6 : 1e-8),
      beta1_(config.beta1),
      beta2_(config.beta2) {}

int64_t RowRule::state_floats(int64_t width) const {
  switch (rule_) {
    case TableRule::kAdagrad: return width;
    case TableRule::kAdam: return 2 * width + 1;
    default: return 0;
  }
}

void RowRule::apply(float* values, float* state, const float* gradient, int64_t width, float lr) const {
  switch (rule_) {
    case TableRule::kSgd:
      for (int64_t i = 0; i < width; ++i) values[i] -= static_cast<float>(lr * static_cast<double>(gradient[i]));
      return;
    case TableRule::kDelta:
      for (int64_t i = 0; i < width; ++i) values[i] += gradient[i];
      return;
    case TableRule::kAdagrad:
      for (int64_t i = 0; i < width; ++i) {
        const double g = gradient[i];
        const double sum = state[i] + g * g;
        state[i] = static_cast<float>(sum);
        values[i] -= static_cast<float>(lr * g / (std::sqrt(sum) + epsilon_));
      }
      return;
    case TableRule::kAdam: {
      // Lazy Adam: a row's moments and bias correction advance only on the
      // steps that touch it (its step count is the last state float).
      float* m = state;
      float* v = state + width;
      const double step = ++state[2 * width];
      const double c1 = 1 - std::pow(beta1_, step), c2 = 1 - std::pow(beta2_, step);
      for (int64_t i = 0; i < width; ++i) {
        const double g = gradient[i];
        const double mi = beta1_ * m[i] + (1 - beta1_) * g;
        const double vi = beta2_ * v[i] + (1 - beta2_) * g * g;
        m[i] = static_cast<float>(mi);
        v[i] = static_cast<float>(vi);
        values[i] -= static_cast<float>(lr * (mi / c1) / (std::sqrt(vi / c2) + epsilon_));
      }
      return;
    }
  }
}

}  // namespace weir::ps
