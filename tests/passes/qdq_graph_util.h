// Building QDQ test graphs: activations fake-quantized (QuantizeLinear then
// DequantizeLinear), s8 weights dequantized per tensor or per channel, and
// random f32 inputs; and the distance of two results in quantization steps. Shared by the qdq_fusion and qdq_residual_fusion tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "tests/test_util.h"

namespace weir::testing {

// A one-element zero point of `dtype` (i8 or u8).
inline Tensor zero_point(DType dtype, int value) {
  Tensor t = Tensor::uninitialized(dtype, {});
  if (dtype == DType::kInt8) {
    t.data<int8_t>()[0] = static_cast<int8_t>(value);
  } else {
    t.data<uint8_t>()[0] = static_cast<uint8_t>(value);
  }
  return t;
}

// Uniform i8 values in [-127, 127] or u8 in [0, 255].
inline Tensor int8_tensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& engine) {
  Tensor t = Tensor::uninitialized(dtype, sizes);
  std::uniform_int_distribution<int> distribution(dtype == DType::kInt8 ? -127 : 0, dtype == DType::kInt8 ? 127 : 255);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (dtype == DType::kInt8) {
      t.data<int8_t>()[i] = static_cast<int8_t>(distribution(engine));
    } else {
      t.data<uint8_t>()[i] = static_cast<uint8_t>(distribution(engine));
    }
  }
  return t;
}

// An activation's quantization: scale and zero point for values in about [-range, range].
struct ActivationQuant {
  DType dtype;
  float scale;
  int zero;
};

// u8: zero point 128; i8: 3, so that ties differ by the zero point's parity.
inline ActivationQuant activation_quant(DType dtype, float range) {
  if (dtype == DType::kUInt8) return {dtype, 2 * range / 255, 128};
  return {dtype, range / 127, 3};
}

// Q then DQ of `v` (an activation's fake quantization); `quantized` gets the Q's output.
inline Value* fake_quantize(Graph& g, Value* v, const ActivationQuant& q, const std::string& name,
                            Value** quantized = nullptr) {
  Value* scale = g.add_constant(name + "_scale", Tensor::scalar<float>(q.scale));
  Value* zero = g.add_constant(name + "_zero", zero_point(q.dtype, q.zero));
  Value* vq = g.add_node("QuantizeLinear", {v, scale, zero}, 1, {}, name + "_q")->output(0);
  if (quantized != nullptr) *quantized = vq;
  return g.add_node("DequantizeLinear", {vq, scale, zero}, 1, {}, name + "_dq")->output(0);
}

// DQ of a constant s8 weight with per-tensor or per-`axis` scales drawn from
// [scale_low, scale_high] and zero points 0.
inline Value* quantized_weight(Graph& g, const std::vector<int64_t>& sizes, int64_t axis, bool per_channel,
                               std::mt19937& engine, const std::string& name, float scale_low = 0.004f,
                               float scale_high = 0.012f) {
  Value* wq = g.add_constant(name + "_q", int8_tensor(DType::kInt8, sizes, engine));
  int64_t channels = per_channel ? sizes[static_cast<size_t>(axis)] : 1;
  std::uniform_real_distribution<float> distribution(scale_low, scale_high);
  std::vector<float> scales(static_cast<size_t>(channels));
  for (float& s : scales) s = distribution(engine);
  const std::vector<int64_t> shape = per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
  Value* scale = g.add_constant(name + "_scale", Tensor::from_vector<float>(scales, shape));
  Value* zero = g.add_constant(name + "_zero", Tensor(DType::kInt8, shape));  // zero-filled
  return g.add_node("DequantizeLinear", {wq, scale, zero}, 1, {{"axis", Attribute(axis)}}, name + "_dq")->output(0);
}

// Uniform f32 values in [-1, 1].
inline Tensor random_input(const std::vector<int64_t>& sizes, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return Tensor::from_vector(random_floats(static_cast<size_t>(n), seed, -1.0f, 1.0f), sizes);
}

// How far apart two f32 results are, in steps of `step` (an output
// quantization step): the largest gap, and how many elements differ at all.
struct Steps {
  double largest = 0;
  int64_t apart = 0, total = 0;
};

inline Steps steps_apart(const Tensor& a, const Tensor& b, float step) {
  EXPECT_EQ(a.sizes(), b.sizes());
  Steps s;
  for (int64_t i = 0; i < a.num_elements() && a.sizes() == b.sizes(); ++i) {
    double gap = std::abs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]) / step;
    s.largest = std::max(s.largest, gap);
    s.apart += gap > 1e-3;
  }
  s.total = a.num_elements();
  return s;
}

}  // namespace weir::testing
