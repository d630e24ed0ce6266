// Dropout and DropoutGrad on each accelerator against the CPU kernels. The
// random stream is counter-based (ops/nn/dropout.h), so in training the
// device's output and mask must equal the CPU's bit for bit, in the first
// run of a session and in later ones (the session's counter advancing), for
// every seed, ratio and dtype. Outside training both pass the input through.
#include <cmath>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_close;
using testing::expect_outputs_same_as_cpu;
using testing::Tolerance;

const Tolerance kExact{0.0, 0.0};

// The outputs of `runs` successive runs of one session of the node on `device`.
std::vector<std::vector<Tensor>> run_repeatedly(const Device& device, const std::string& op_type,
                                                const std::vector<Tensor>& inputs,
                                                const std::map<std::string, Attribute>& attributes, size_t num_outputs,
                                                int runs) {
  testing::SingleOpGraph single = testing::single_op_graph(op_type, inputs, attributes, num_outputs);
  CompileOptions options;
  options.default_device = device;
  Session session(compile(*single.graph, options));
  std::vector<std::vector<Tensor>> outputs;
  for (int run = 0; run < runs; ++run) outputs.push_back(session.run(single.feeds));
  return outputs;
}

Tensor scalar_of(DType dtype, double value) { return testing::make_tensor(dtype, {value}, {}); }
Tensor flag(bool value) { return testing::make_tensor(DType::kBool, {value ? 1.0 : 0.0}, {}); }

class DropoutOnBackend : public testing::OnBackend {};

TEST_P(DropoutOnBackend, DrawsTheCpuMaskBitForBitInTraining) {
  const std::vector<std::vector<int64_t>> shapes = {{5, 17}, {1}, {1000, 33}, {0, 3}, {2, 3, 4, 5}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : shapes) {
      for (double ratio : {0.5, 0.1, 0.9}) {
        for (int64_t node_seed : {int64_t{0}, int64_t{42}}) {
          Tensor x = testing::random_tensor(dtype, sizes, seed++);
          const std::map<std::string, Attribute> attributes = {{"seed", Attribute(node_seed)}};
          const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes) + " ratio " +
                                    std::to_string(ratio) + " seed " + std::to_string(node_seed);
          expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, ratio), flag(true)},
                                     attributes, {kExact, kExact}, label);
          // Without the mask output the kernel draws the same stream.
          expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, ratio), flag(true)},
                                     attributes, {kExact}, label + " output only");
        }
      }
    }
  }
}

TEST_P(DropoutOnBackend, FollowsTheSessionsCounterAcrossRuns) {
  Tensor x = testing::random_tensor(DType::kFloat32, {64, 65}, 5);
  const std::vector<Tensor> inputs = {x, scalar_of(DType::kFloat64, 0.3), flag(true)};
  const std::map<std::string, Attribute> attributes = {{"seed", Attribute(int64_t{7})}};
  const auto want = run_repeatedly(Device::cpu(), "Dropout", inputs, attributes, 2, 3);
  const auto got = run_repeatedly(GetParam(), "Dropout", inputs, attributes, 2, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t run = 0; run < got.size(); ++run) {
    for (size_t o = 0; o < 2; ++o) expect_close(got[run][o], want[run][o], kExact, "run " + std::to_string(run) + " output " + std::to_string(o));
  }
  // Runs draw different masks (a test that would pass on a constant mask proves nothing).
  EXPECT_FALSE(got[0][1].bitwise_equal(got[1][1]));
}

// The device's own output, checked without the CPU: about 1 - ratio of the
// elements kept, each x / (1 - ratio), the others zero.
TEST_P(DropoutOnBackend, KeepsTheExpectedShareScaled) {
  const int64_t n = 100000;
  const double ratio = 0.25;
  Tensor x = testing::make_tensor(DType::kFloat32, testing::random_values(DType::kFloat32, n, 9, 0.5, 2.0), {n});
  std::vector<Tensor> out =
      testing::run_node_on(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, ratio), flag(true)}, {}, 2);
  ASSERT_EQ(out.size(), 2u);
  const std::vector<double> in = testing::to_doubles(x), y = testing::to_doubles(out[0]), keep = testing::to_doubles(out[1]);
  int64_t kept = 0;
  const float scale = static_cast<float>(1.0 / (1.0 - ratio));
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    kept += keep[k] != 0 ? 1 : 0;
    const double expected = keep[k] != 0 ? static_cast<double>(static_cast<float>(in[k]) * scale) : 0.0;
    if (y[k] != expected) {
      ADD_FAILURE() << "element " << i << " is " << y[k] << ", expected " << expected;
      break;
    }
  }
  // Binomial(n, 0.75): standard deviation ~137; six of them either side.
  EXPECT_NEAR(static_cast<double>(kept), 0.75 * n, 6 * std::sqrt(n * ratio * (1 - ratio)));
}

TEST_P(DropoutOnBackend, PassesTheInputThroughOutsideTraining) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = testing::random_tensor(dtype, {7, 9}, 3);
    // training_mode false, training_mode absent, and ratio 0 in training.
    expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, 0.5), flag(false)}, {},
                               {kExact, kExact}, "training_mode false");
    expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, 0.5)}, {}, {kExact, kExact},
                               "training_mode absent");
    expect_outputs_same_as_cpu(GetParam(), "Dropout", {x}, {}, {kExact}, "data only");
    expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, 0.0), flag(true)}, {},
                               {kExact, kExact}, "ratio 0");
  }
  // The default ratio (0.5) in training.
  Tensor x = testing::random_tensor(DType::kFloat32, {33, 3}, 4);
  expect_outputs_same_as_cpu(GetParam(), "Dropout", {x, Tensor(), flag(true)}, {}, {kExact, kExact},
                             "default ratio");
}

TEST_P(DropoutOnBackend, RejectsARatioOutsideZeroToOne) {
  Tensor x = testing::random_tensor(DType::kFloat32, {4}, 3);
  try {
    testing::run_node_on(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, 1.0), flag(true)});
    ADD_FAILURE() << "ratio 1 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ratio must be in [0, 1), got 1"), std::string::npos) << e.what();
  }
}

TEST_P(DropoutOnBackend, GradMatchesTheCpu) {
  uint32_t seed = 50;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{5, 17}, {1000, 33}, {1}, {0, 2}}) {
      Tensor dy = testing::random_tensor(dtype, sizes, seed++);
      // A random mask: values in [-3, 3) stored as bool are true unless exactly 0, so threshold by hand.
      std::vector<double> draws = testing::random_values(DType::kFloat32, testing::count_of(sizes), seed++, 0.0, 1.0);
      for (double& d : draws) d = d < 0.6 ? 1.0 : 0.0;
      Tensor mask = testing::make_tensor(DType::kBool, draws, sizes);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes);
      for (double ratio : {0.4, 0.75}) {
        expect_outputs_same_as_cpu(GetParam(), "DropoutGrad", {dy, mask, scalar_of(DType::kFloat32, ratio), flag(true)},
                                   {}, {kExact}, label + " ratio " + std::to_string(ratio));
      }
      expect_outputs_same_as_cpu(GetParam(), "DropoutGrad", {dy, mask, scalar_of(DType::kFloat32, 0.4), flag(false)},
                                 {}, {kExact}, label + " outside training");
      expect_outputs_same_as_cpu(GetParam(), "DropoutGrad", {dy, mask}, {}, {kExact}, label + " training_mode absent");
    }
  }
}

// Dropout's mask fed to DropoutGrad on the device: dX is dY scaled where the
// mask kept, zero elsewhere, as the CPU gives it from the same mask.
TEST_P(DropoutOnBackend, GradIsConsistentWithTheMask) {
  Tensor x = testing::random_tensor(DType::kFloat32, {40, 50}, 31);
  Tensor dy = testing::random_tensor(DType::kFloat32, {40, 50}, 32);
  const std::vector<Tensor> forward =
      testing::run_node_on(GetParam(), "Dropout", {x, scalar_of(DType::kFloat32, 0.3), flag(true)}, {}, 2);
  ASSERT_EQ(forward.size(), 2u);
  const std::vector<Tensor> inputs = {dy, forward[1], scalar_of(DType::kFloat32, 0.3), flag(true)};
  const std::vector<Tensor> got = testing::run_node_on(GetParam(), "DropoutGrad", inputs);
  const std::vector<Tensor> want = testing::run_node_on(Device::cpu(), "DropoutGrad", inputs);
  expect_close(got[0], want[0], kExact, "DropoutGrad from the device's mask");
  const std::vector<double> keep = testing::to_doubles(forward[1]), dx = testing::to_doubles(got[0]);
  for (size_t i = 0; i < keep.size(); ++i) {
    if ((keep[i] == 0) != (dx[i] == 0)) {
      ADD_FAILURE() << "element " << i << ": mask " << keep[i] << " but dX " << dx[i];
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, DropoutOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
