// Reference gradients for tests: d(loss)/d(a persistent value) of a running
// Session by central differences, in f64.
//
//   std::vector<double> dw = weir::testing::central_difference_gradient(session, "w", feeds, /*loss_output=*/0);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace weir::testing {

// The loss is graph output `loss_output` (an f64 scalar). The persistent
// value `name` (f64) is perturbed by ±h per element and restored afterwards.
inline std::vector<double> central_difference_gradient(Session& session, const std::string& name,
                                                       const std::map<std::string, Tensor>& feeds,
                                                       size_t loss_output, double h = 1e-6) {
  auto loss = [&] { return session.run(feeds).at(loss_output).data<double>()[0]; };
  const Tensor base = session.state(name).clone();
  std::vector<double> gradient;
  for (int64_t j = 0; j < base.num_elements(); ++j) {
    Tensor plus = base.clone(), minus = base.clone();
    plus.data<double>()[j] += h;
    minus.data<double>()[j] -= h;
    session.set_state(name, plus);
    const double up = loss();
    session.set_state(name, minus);
    const double down = loss();
    gradient.push_back((up - down) / (2 * h));
  }
  session.set_state(name, base);
  return gradient;
}

}  // namespace weir::testing
