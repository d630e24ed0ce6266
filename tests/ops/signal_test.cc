// The signal ops: Fft and DFT against the O(n^2) definition on random
// signals of power-of-two and other lengths (primes included), inverse(DFT(x))
// == x, dft_length padding and truncation, onesided output and every axis;
// STFT against frames transformed by the definition; the three windows
// against their cosine sums and the periodic = first points of the longer
// symmetric window identity; MelWeightMatrix against a per-element reference;
// static shapes from constant inputs; malformed inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/signal/fft.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::error_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using Complex = std::complex<double>;

// Runs one `op_type` node whose undefined inputs are absent optional inputs;
// with `constant`, every input is a constant (visible to shape inference),
// and the inferred output type is returned through `inferred`.
Tensor run_node(const std::string& op_type, const std::vector<Tensor>& inputs, std::map<std::string, Attribute> attributes,
                bool constant = false, TensorType* inferred = nullptr) {
  Graph g("one_" + op_type);
  std::vector<Value*> values;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
    } else if (constant) {
      values.push_back(g.add_constant(name, inputs[i]));
    } else {
      values.push_back(g.add_input(name, {inputs[i].dtype(), inputs[i].shape()}));
      feeds[name] = inputs[i];
    }
  }
  Node* node = g.add_node(op_type, values, 1, std::move(attributes), "op");
  g.add_output(node->output(0));
  infer_graph_types(g, default_op_registry());
  if (inferred != nullptr) *inferred = node->output(0)->type();
  return evaluate_graph(g, feeds)[0];
}

std::string node_error(const std::string& op_type, const std::vector<Tensor>& inputs, std::map<std::string, Attribute> attributes = {},
                       bool constant = false) {
  try {
    run_node(op_type, inputs, std::move(attributes), constant);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// X[k] = sum_j x[j] e^{-+2 pi i jk / n}, straight from the definition.
std::vector<Complex> definition(const std::vector<Complex>& x, bool inverse) {
  auto n = static_cast<int64_t>(x.size());
  std::vector<Complex> out(x.size());
  for (int64_t k = 0; k < n; ++k) {
    Complex sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double angle = (inverse ? 2.0 : -2.0) * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      sum += x[static_cast<size_t>(j)] * Complex(std::cos(angle), std::sin(angle));
    }
    out[static_cast<size_t>(k)] = sum;
  }
  return out;
}

std::vector<Complex> random_signal(int64_t n, uint32_t seed) {
  std::vector<double> values = random_values(DType::kFloat64, 2 * n, seed);
  std::vector<Complex> x(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = {values[2 * i], values[2 * i + 1]};
  return x;
}

TEST(Fft, MatchesTheDefinitionForEveryKindOfLength) {
  std::vector<Complex> scratch;
  for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 64, 100, 128, 997, 1000, 1024}) {
    for (bool inverse : {false, true}) {
      std::vector<Complex> x = random_signal(n, static_cast<uint32_t>(n) + (inverse ? 7u : 0u));
      std::vector<Complex> expected = definition(x, inverse);
      Fft fft(n);
      fft.transform(x.data(), inverse, scratch);
      double scale = std::sqrt(static_cast<double>(n));  // |X| grows like sqrt(n) for random x
      for (size_t k = 0; k < x.size(); ++k) {
        ASSERT_NEAR(x[k].real(), expected[k].real(), 1e-12 * scale * std::log2(2.0 * static_cast<double>(n)) * 4) << "n " << n << " bin " << k;
        ASSERT_NEAR(x[k].imag(), expected[k].imag(), 1e-12 * scale * std::log2(2.0 * static_cast<double>(n)) * 4) << "n " << n << " bin " << k;
      }
    }
  }
  EXPECT_THROW(Fft(0), Error);
}

// A [outer, length, inner, components] tensor's line (o, i) as complex values.
std::vector<Complex> line_of(const std::vector<double>& values, const std::vector<int64_t>& sizes, size_t axis, int64_t flat_outer,
                             int64_t flat_inner) {
  int64_t length = sizes[axis], components = sizes.back(), inner = 1;
  for (size_t a = axis + 1; a + 1 < sizes.size(); ++a) inner *= sizes[a];
  std::vector<Complex> line(static_cast<size_t>(length));
  for (int64_t k = 0; k < length; ++k) {
    auto at = static_cast<size_t>(((flat_outer * length + k) * inner + flat_inner) * components);
    line[static_cast<size_t>(k)] = {values[at], components == 2 ? values[at + 1] : 0.0};
  }
  return line;
}

struct DftCase {
  std::vector<int64_t> sizes;
  int64_t axis;
  int64_t dft_length;  // 0: none given
  bool inverse, onesided;
};

TEST(DftKernels, EveryAxisLengthAndModeAgainstTheDefinition) {
  const std::vector<DftCase> cases = {
      {{2, 12, 1}, 1, 0, false, false},   {{2, 12, 2}, 1, 0, true, false},    {{1, 10, 10, 1}, 1, 0, false, false},
      {{1, 10, 10, 1}, 2, 0, false, false}, {{1, 10, 10, 2}, -2, 0, true, false}, {{3, 7, 4, 2}, 1, 0, false, false},
      {{3, 7, 4, 1}, 2, 0, false, true},  {{3, 7, 4, 1}, 1, 0, false, true},  {{2, 9, 1}, 1, 16, false, false},
      {{2, 9, 2}, 1, 5, false, false},    {{2, 9, 1}, 1, 13, false, true},    {{4, 3, 2}, 0, 0, false, false},
      {{2, 5, 3, 2}, -3, 8, true, false}, {{1, 17, 1}, 1, 0, false, true},
  };
  uint32_t seed = 1;
  for (const DftCase& c : cases) {
    SCOPED_TRACE("sizes " + format_sizes(c.sizes) + " axis " + std::to_string(c.axis) + " dft_length " +
                 std::to_string(c.dft_length) + (c.inverse ? " inverse" : "") + (c.onesided ? " onesided" : ""));
    std::vector<double> values = random_values(DType::kFloat64, count_of(c.sizes), seed++);
    std::vector<Tensor> inputs = {make_tensor(DType::kFloat64, values, c.sizes)};
    if (c.dft_length > 0) inputs.push_back(Tensor::scalar<int64_t>(c.dft_length));
    Tensor y = run_op("DFT", inputs, {{"axis", Attribute(c.axis)}, {"inverse", Attribute(int64_t{c.inverse})},
                                      {"onesided", Attribute(int64_t{c.onesided})}})[0];
    auto rank = static_cast<int64_t>(c.sizes.size());
    auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
    int64_t n = c.dft_length > 0 ? c.dft_length : c.sizes[axis];
    int64_t bins = c.onesided ? n / 2 + 1 : n;
    std::vector<int64_t> out_sizes = c.sizes;
    out_sizes[axis] = bins;
    out_sizes.back() = 2;
    ASSERT_EQ(y.sizes(), out_sizes);
    std::vector<double> got = to_doubles(y);
    int64_t outer = 1, inner = 1;
    for (size_t a = 0; a < axis; ++a) outer *= c.sizes[a];
    for (size_t a = axis + 1; a + 1 < c.sizes.size(); ++a) inner *= c.sizes[a];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<Complex> line = line_of(values, c.sizes, axis, o, i);
        line.resize(static_cast<size_t>(n), Complex(0, 0));  // pads with zeros or truncates
        std::vector<Complex> expected = definition(line, c.inverse);
        for (int64_t k = 0; k < bins; ++k) {
          Complex e = expected[static_cast<size_t>(k)] / (c.inverse ? static_cast<double>(n) : 1.0);
          auto at = static_cast<size_t>(((o * bins + k) * inner + i) * 2);
          ASSERT_NEAR(got[at], e.real(), 1e-12) << "line " << o << "," << i << " bin " << k;
          ASSERT_NEAR(got[at + 1], e.imag(), 1e-12) << "line " << o << "," << i << " bin " << k;
        }
      }
    }
  }
}

TEST(DftKernels, InverseUndoesTheTransform) {
  for (int64_t n : {1, 2, 6, 8, 11, 60, 64, 243}) {
    std::vector<double> values = random_values(DType::kFloat64, 3 * n * 2, static_cast<uint32_t>(n));
    Tensor x = make_tensor(DType::kFloat64, values, {3, n, 2});
    Tensor spectrum = run_op("DFT", {x})[0];
    std::vector<double> back = to_doubles(run_op("DFT", {spectrum}, {{"inverse", Attribute(int64_t{1})}})[0]);
    ASSERT_EQ(back.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(back[i], values[i], 1e-12) << "n " << n << " element " << i;
  }
}

TEST(DftKernels, LowPrecisionTypesAndRealInputOfOneComponent) {
  std::vector<double> values = random_values(DType::kFloat64, 2 * 20, 77, -1, 1);
  std::vector<double> reference = to_doubles(run_op("DFT", {make_tensor(DType::kFloat64, values, {2, 20, 1})})[0]);
  for (auto [dtype, tolerance] : {std::pair{DType::kFloat32, 1e-5}, {DType::kFloat16, 2e-2}, {DType::kBFloat16, 1.5e-1}}) {
    // The reference transforms the same rounded inputs.
    Tensor x = make_tensor(dtype, values, {2, 20, 1});
    std::vector<double> rounded = to_doubles(x);
    std::vector<double> expected = to_doubles(run_op("DFT", {make_tensor(DType::kFloat64, rounded, {2, 20, 1})})[0]);
    Tensor y = run_op("DFT", {x})[0];
    ASSERT_EQ(y.dtype(), dtype);
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], tolerance * (1 + std::fabs(expected[i]))) << dtype_name(dtype);
  }
  // The real part of a transform of [re] equals the one of [re, 0].
  std::vector<double> padded(values.size() * 2, 0.0);
  for (size_t i = 0; i < values.size(); ++i) padded[2 * i] = values[i];
  std::vector<double> complex_input = to_doubles(run_op("DFT", {make_tensor(DType::kFloat64, padded, {2, 20, 2})})[0]);
  for (size_t i = 0; i < reference.size(); ++i) ASSERT_NEAR(reference[i], complex_input[i], 1e-12);
}

TEST(DftKernels, RejectsMalformedInput) {
  Tensor real = Tensor(DType::kFloat32, {2, 8, 1});
  Tensor complex = Tensor(DType::kFloat32, {2, 8, 2});
  EXPECT_NE(error_of("DFT", {Tensor(DType::kFloat32, {2, 8, 3})}).find("must end in 1 (real) or 2 (complex) components"), std::string::npos);
  EXPECT_NE(error_of("DFT", {Tensor(DType::kFloat32, {8})}).find("needs [batch, signal..., 1 or 2]"), std::string::npos);
  EXPECT_NE(error_of("DFT", {real}, {{"axis", Attribute(int64_t{2})}}).find("axis 2 is out of range [-3, -2] or [0, 1]"), std::string::npos);
  EXPECT_NE(error_of("DFT", {real}, {{"axis", Attribute(int64_t{-1})}}).find("axis -1 is out of range"), std::string::npos);
  EXPECT_NE(error_of("DFT", {complex}, {{"onesided", Attribute(int64_t{1})}}).find("onesided output needs a real input"), std::string::npos);
  EXPECT_NE(error_of("DFT", {real}, {{"onesided", Attribute(int64_t{1})}, {"inverse", Attribute(int64_t{1})}}).find("forward transform only"),
            std::string::npos);
  EXPECT_NE(error_of("DFT", {real, Tensor::scalar<int64_t>(0)}).find("at least 1, got 0"), std::string::npos);
  EXPECT_NE(error_of("DFT", {real, Tensor::from_vector<int64_t>({4, 4}, {2})}).find("dft_length must be a scalar"), std::string::npos);
  EXPECT_NE(error_of("DFT", {Tensor(DType::kFloat32, {2, 0, 1})}).find("at least 1, got 0"), std::string::npos);
}

// STFT's frames transformed one by one through the definition.
std::vector<double> reference_stft(const std::vector<double>& signal, int64_t batch, int64_t length, int64_t components,
                                   int64_t step, int64_t n, const std::vector<double>& window, bool onesided) {
  int64_t frames = (length - n) / step + 1, bins = onesided ? n / 2 + 1 : n;
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      std::vector<Complex> frame(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) {
        auto at = static_cast<size_t>((b * length + f * step + k) * components);
        Complex value(signal[at], components == 2 ? signal[at + 1] : 0.0);
        frame[static_cast<size_t>(k)] = value * (window.empty() ? 1.0 : window[static_cast<size_t>(k)]);
      }
      std::vector<Complex> spectrum = definition(frame, false);
      for (int64_t k = 0; k < bins; ++k) {
        out.push_back(spectrum[static_cast<size_t>(k)].real());
        out.push_back(spectrum[static_cast<size_t>(k)].imag());
      }
    }
  }
  return out;
}

TEST(StftKernels, FramesAgainstTheDefinition) {
  struct Case {
    int64_t batch, length, components, step, n;
    bool with_window, with_length, onesided;
  };
  const std::vector<Case> cases = {
      {1, 128, 1, 8, 16, false, true, true},  {1, 128, 1, 8, 16, true, false, true}, {2, 50, 1, 7, 12, true, true, true},
      {2, 50, 1, 3, 15, true, false, false},  {3, 40, 2, 5, 10, true, true, false},  {1, 9, 1, 4, 9, false, true, true},
      {2, 33, 2, 1, 6, false, true, false},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE("length " + std::to_string(c.length) + " n " + std::to_string(c.n) + " step " + std::to_string(c.step));
    std::vector<double> signal = random_values(DType::kFloat64, c.batch * c.length * c.components, seed++);
    std::vector<double> window = c.with_window ? random_values(DType::kFloat64, c.n, seed++, 0, 1) : std::vector<double>{};
    std::vector<Tensor> inputs = {make_tensor(DType::kFloat64, signal, {c.batch, c.length, c.components}), Tensor::scalar<int64_t>(c.step)};
    inputs.push_back(c.with_window ? make_tensor(DType::kFloat64, window, {c.n}) : Tensor());
    if (c.with_length) inputs.push_back(Tensor::scalar<int32_t>(static_cast<int32_t>(c.n)));
    Tensor y = run_node("STFT", inputs, {{"onesided", Attribute(int64_t{c.onesided})}});
    int64_t frames = (c.length - c.n) / c.step + 1, bins = c.onesided ? c.n / 2 + 1 : c.n;
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{c.batch, frames, bins, 2}));
    std::vector<double> expected = reference_stft(signal, c.batch, c.length, c.components, c.step, c.n, window, c.onesided);
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-11) << "element " << i;
  }
}

TEST(StftKernels, RejectsMalformedInput) {
  Tensor signal(DType::kFloat32, {1, 32, 1});
  Tensor step = Tensor::scalar<int64_t>(4);
  Tensor window(DType::kFloat32, {8});
  EXPECT_NE(node_error("STFT", {signal, step}).find("needs a window or a frame_length"), std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, step, window, Tensor::scalar<int64_t>(6)}).find("frame_length 6 differs from the window's length 8"),
            std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, Tensor::scalar<int64_t>(0), window}).find("frame_step must be at least 1, got 0"), std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, step, Tensor(), Tensor::scalar<int64_t>(40)}).find("frame length 40 is longer than the signal"),
            std::string::npos);
  EXPECT_NE(node_error("STFT", {Tensor(DType::kFloat32, {1, 32, 2}), step, window}).find("onesided output needs a real signal"),
            std::string::npos);
  EXPECT_NE(node_error("STFT", {Tensor(DType::kFloat32, {32, 1}), step, window}).find("must be [batch, length, 1 or 2]"), std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, step, Tensor(DType::kFloat32, {2, 4})}).find("window f32[2,4] must have rank 1"), std::string::npos);
  // Constant inputs let inference see the same mistakes.
  EXPECT_NE(node_error("STFT", {signal, step, Tensor(), Tensor::scalar<int64_t>(0)}, {}, true).find("frame_length must be at least 1"),
            std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, step, Tensor(), Tensor::scalar<int64_t>(40)}, {}, true).find("frame length 40 is longer"),
            std::string::npos);
  EXPECT_NE(node_error("STFT", {signal, Tensor::scalar<int64_t>(-1), window}, {}, true).find("frame_step must be at least 1, got -1"),
            std::string::npos);
}

// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), written out per window.
double window_value(const std::string& op, int64_t n, double period) {
  double x = 2 * std::numbers::pi * static_cast<double>(n) / period;
  if (op == "HannWindow") return 0.5 - 0.5 * std::cos(x);
  if (op == "HammingWindow") return 25.0 / 46 - 21.0 / 46 * std::cos(x);
  return 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
}

TEST(WindowKernels, CosineSumsPeriodicAndSymmetric) {
  for (const std::string op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    for (int64_t size : {2, 5, 10, 33}) {
      for (DType size_type : {DType::kInt32, DType::kInt64}) {
        Tensor size_tensor = make_tensor(size_type, {static_cast<double>(size)}, {});
        std::vector<double> periodic = to_doubles(run_op(op, {size_tensor}, {{"output_datatype", Attribute(int64_t{11})}})[0]);
        std::vector<double> symmetric = to_doubles(
            run_op(op, {size_tensor}, {{"output_datatype", Attribute(int64_t{11})}, {"periodic", Attribute(int64_t{0})}})[0]);
        std::vector<double> longer = to_doubles(run_op(op, {make_tensor(size_type, {static_cast<double>(size + 1)}, {})},
                                                       {{"output_datatype", Attribute(int64_t{11})}, {"periodic", Attribute(int64_t{0})}})[0]);
        ASSERT_EQ(periodic.size(), static_cast<size_t>(size));
        ASSERT_EQ(symmetric.size(), static_cast<size_t>(size));
        for (int64_t n = 0; n < size; ++n) {
          auto i = static_cast<size_t>(n);
          ASSERT_NEAR(periodic[i], window_value(op, n, static_cast<double>(size)), 1e-15) << op << " " << size << " n " << n;
          ASSERT_NEAR(symmetric[i], window_value(op, n, static_cast<double>(size - 1)), 1e-15) << op << " " << size << " n " << n;
          // A periodic window is the first points of the symmetric one a point longer,
          ASSERT_NEAR(periodic[i], longer[i], 1e-15) << op << " " << size << " n " << n;
          // and a symmetric window is symmetric.
          ASSERT_NEAR(symmetric[i], symmetric[static_cast<size_t>(size - 1 - n)], 1e-15) << op << " " << size << " n " << n;
        }
      }
    }
  }
  // The symmetric windows' ends and middle: Hann 0 and 1, Hamming 4/46 and 1, Blackman 0 and 1.
  std::vector<double> hann = to_doubles(run_op("HannWindow", {Tensor::scalar<int64_t>(5)}, {{"periodic", Attribute(int64_t{0})}})[0]);
  EXPECT_EQ(hann, (std::vector<double>{0, 0.5, 1, 0.5, 0}));
  std::vector<double> hamming = to_doubles(run_op("HammingWindow", {Tensor::scalar<int64_t>(3)}, {{"periodic", Attribute(int64_t{0})}})[0]);
  EXPECT_NEAR(hamming[0], 4.0 / 46, 1e-7);
  EXPECT_NEAR(hamming[1], 1.0, 1e-7);
}

TEST(WindowKernels, OutputTypesEdgeSizesAndErrors) {
  Tensor y = run_op("BlackmanWindow", {Tensor::scalar<int32_t>(8)})[0];
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(run_op("HannWindow", {Tensor::scalar<int64_t>(8)}, {{"output_datatype", Attribute(int64_t{16})}})[0].dtype(), DType::kBFloat16);
  // Integer outputs truncate: Hann's values below 1 become 0, its peak 1.
  std::vector<double> integers = to_doubles(
      run_op("HannWindow", {Tensor::scalar<int64_t>(4)}, {{"output_datatype", Attribute(int64_t{7})}})[0]);
  EXPECT_EQ(integers, (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(run_op("HammingWindow", {Tensor::scalar<int64_t>(0)})[0].sizes(), std::vector<int64_t>{0});
  EXPECT_EQ(to_doubles(run_op("HannWindow", {Tensor::scalar<int64_t>(1)}, {{"periodic", Attribute(int64_t{0})}})[0]),
            std::vector<double>{1});
  EXPECT_EQ(to_doubles(run_op("HannWindow", {Tensor::scalar<int64_t>(1)})[0]), std::vector<double>{0});
  EXPECT_NE(error_of("HannWindow", {Tensor::scalar<int64_t>(-2)}).find("size must not be negative, got -2"), std::string::npos);
  EXPECT_NE(error_of("HannWindow", {Tensor::from_vector<int64_t>({2, 3}, {2})}).find("size must be a scalar"), std::string::npos);
  EXPECT_NE(error_of("HannWindow", {Tensor::scalar<int64_t>(4)}, {{"output_datatype", Attribute(int64_t{9})}}).find("output_datatype 9"),
            std::string::npos);
  EXPECT_NE(error_of("HannWindow", {Tensor::scalar<int64_t>(4)}, {{"output_datatype", Attribute(int64_t{8})}}).find("output_datatype 8"),
            std::string::npos);
}

// MelWeightMatrix element by element: the triangle edges as bins, then
// column i's value at row j from where j lies among edges i, i+1, i+2.
std::vector<double> reference_mel(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, double lower, double upper) {
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double step = (mel(upper) - mel(lower)) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge;
  for (int64_t e = 0; e < mel_bins + 2; ++e) {
    double hz = 700 * (std::pow(10, (mel(lower) + static_cast<double>(e) * step) / 2595) - 1);
    edge.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate))));
  }
  int64_t rows = dft_length / 2 + 1;
  std::vector<double> out(static_cast<size_t>(rows * mel_bins));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t i = 0; i < mel_bins; ++i) {
      int64_t low = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)], high = edge[static_cast<size_t>(i + 2)];
      double value = 0;
      if (j >= center && j < high) value = static_cast<double>(high - j) / static_cast<double>(high - center);
      else if (j == center) value = 1;  // the peak of a triangle with no falling side
      else if (j >= low && j < center) value = static_cast<double>(j - low) / static_cast<double>(center - low);
      out[static_cast<size_t>(j * mel_bins + i)] = value;
    }
  }
  return out;
}

TEST(MelWeightMatrixKernels, TrianglesOnTheMelScale) {
  struct Case {
    int64_t mel_bins, dft_length, sample_rate;
    double lower, upper;
  };
  for (const Case& c : std::vector<Case>{{8, 16, 8192, 0, 4096}, {10, 64, 16000, 20, 8000}, {40, 512, 16000, 125, 7600},
                                         {5, 1024, 44100, 300, 3000}, {3, 15, 8000, 0, 4000},
                                         {4, 20, 1000, 100, 2000}}) {
    SCOPED_TRACE(std::to_string(c.mel_bins) + " bins, dft " + std::to_string(c.dft_length));
    for (DType t1 : {DType::kInt32, DType::kInt64}) {
      std::vector<Tensor> inputs = {make_tensor(t1, {static_cast<double>(c.mel_bins)}, {}),
                                    make_tensor(t1, {static_cast<double>(c.dft_length)}, {}),
                                    make_tensor(t1, {static_cast<double>(c.sample_rate)}, {}), Tensor::scalar<double>(c.lower),
                                    Tensor::scalar<double>(c.upper)};
      Tensor y = run_op("MelWeightMatrix", inputs, {{"output_datatype", Attribute(int64_t{11})}})[0];
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{c.dft_length / 2 + 1, c.mel_bins}));
      std::vector<double> expected = reference_mel(c.mel_bins, c.dft_length, c.sample_rate, c.lower, c.upper);
      std::vector<double> got = to_doubles(y);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-15) << "element " << i;
      // Up to the Nyquist frequency every column has its peak of 1 somewhere.
      for (int64_t column = 0; column < c.mel_bins && 2 * c.upper <= static_cast<double>(c.sample_rate); ++column) {
        double peak = 0;
        for (int64_t row = 0; row < c.dft_length / 2 + 1; ++row) peak = std::max(peak, got[static_cast<size_t>(row * c.mel_bins + column)]);
        EXPECT_EQ(peak, 1.0) << "column " << column;
      }
    }
  }
  std::vector<Tensor> good = {Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(32), Tensor::scalar<int64_t>(8000),
                              Tensor::scalar<float>(0), Tensor::scalar<float>(4000)};
  EXPECT_EQ(run_op("MelWeightMatrix", good)[0].dtype(), DType::kFloat32);
  std::vector<Tensor> bad = good;
  bad[0] = Tensor::scalar<int64_t>(0);
  EXPECT_NE(error_of("MelWeightMatrix", bad).find("num_mel_bins must be at least 1, got 0"), std::string::npos);
  bad = good;
  bad[2] = Tensor::scalar<int64_t>(-1);
  EXPECT_NE(error_of("MelWeightMatrix", bad).find("sample_rate must be at least 1"), std::string::npos);
  bad = good;
  bad[3] = Tensor::scalar<float>(5000);
  EXPECT_NE(error_of("MelWeightMatrix", bad).find("needs 0 <= lower_edge_hertz <= upper_edge_hertz"), std::string::npos);
  bad = good;
  bad[4] = Tensor::scalar<float>(1e30f);
  EXPECT_NE(error_of("MelWeightMatrix", bad).find("lies too far past the spectrogram's bins"), std::string::npos);
  bad = good;
  bad[4] = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_NE(error_of("MelWeightMatrix", bad).find("upper_edge_hertz must be a scalar"), std::string::npos);
}

TEST(SignalInference, ConstantInputsGiveStaticShapes) {
  TensorType type;
  run_node("HannWindow", {Tensor::scalar<int32_t>(10)}, {}, true, &type);
  EXPECT_EQ(type, (TensorType{DType::kFloat32, Shape{10}}));
  run_node("HannWindow", {Tensor::scalar<int32_t>(10)}, {{"output_datatype", Attribute(int64_t{11})}}, false, &type);
  EXPECT_EQ(type.dtype, DType::kFloat64);
  EXPECT_TRUE(type.shape[0].is_symbolic());
  run_node("MelWeightMatrix", {Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(16), Tensor::scalar<int64_t>(8192),
                               Tensor::scalar<float>(0), Tensor::scalar<float>(4096)}, {}, true, &type);
  EXPECT_EQ(type.shape, (Shape{9, 8}));
  run_node("DFT", {Tensor(DType::kFloat32, {2, 10, 3, 1}), Tensor::scalar<int64_t>(9)}, {{"onesided", Attribute(int64_t{1})}}, true, &type);
  EXPECT_EQ(type, (TensorType{DType::kFloat32, Shape{2, 5, 3, 2}}));
  run_node("DFT", {Tensor(DType::kFloat64, {2, 10, 3, 2})}, {{"axis", Attribute(int64_t{2})}}, false, &type);
  EXPECT_EQ(type.shape, (Shape{2, 10, 3, 2}));
  run_node("STFT", {Tensor(DType::kFloat32, {1, 128, 1}), Tensor::scalar<int64_t>(8), Tensor(DType::kFloat32, {16})}, {}, true, &type);
  EXPECT_EQ(type.shape, (Shape{1, 15, 9, 2}));
  run_node("STFT", {Tensor(DType::kFloat32, {1, 128, 1}), Tensor::scalar<int64_t>(8), Tensor(), Tensor::scalar<int64_t>(16)},
           {{"onesided", Attribute(int64_t{0})}}, true, &type);
  EXPECT_EQ(type.shape, (Shape{1, 15, 16, 2}));
}

}  // namespace
}  // namespace weir
