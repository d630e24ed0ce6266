// An example custom op plugin: SiluGate(A, B) = A * sigmoid(beta * A) * B,
// elementwise (the gated activation of GLU-style feed-forward layers), with
// a float attribute beta (default 1). Built as a shared library that
// graph-runner loads with --plugin and C++ code with weir::load_plugin.
#include <cmath>

#include "weir/plugin.hpp"

namespace {

void silu_gate(const weir::plugin::Attributes& attrs, weir::plugin::Input<float> a, weir::plugin::Input<float> b,
               weir::plugin::Output<float> y) {
  if (a.size() != b.size()) throw std::runtime_error("A and B must have the same number of elements");
  const double beta = attrs.get_float("beta");
  for (int64_t i = 0; i < y.size(); ++i) {
    const double x = a[i];
    y[i] = static_cast<float>(x / (1.0 + std::exp(-beta * x)) * b[i]);
  }
}

}  // namespace

WEIR_PLUGIN_BEGIN("silu_gate")
  weir::plugin::op<silu_gate>("SiluGate", {"A", "B"}, {"Y"}, {weir::plugin::float_attr("beta", 1.0)}),
WEIR_PLUGIN_END()
