#include "tools/graph-runner/model_inputs.h"

#include <filesystem>
#include <optional>
#include <random>

#include "core/allocation_limits.h"
#include "core/error.h"
#include "frontend/data/npy.h"
#include "frontend/onnx/onnx_tensor.h"

namespace weir::tools {

namespace {

// Symbolic dims become 1.
Tensor random_input(const Value& input, uint64_t seed) {
  if (!input.type().is_tensor()) {
    throw Error(ErrorKind::kUnsupported, "--random-inputs makes tensors only; input '" + input.name() + "' is " +
                                             input.type().to_string());
  }
  std::vector<int64_t> sizes;
  for (const Dim& d : input.shape().dims()) sizes.push_back(d.is_static() ? d.size() : 1);
  // The dims come from the model file: the size is checked for overflow and
  // against the per-tensor cap before anything is allocated.
  const std::string what = "--random-inputs input '" + input.name() + "' " + input.type().to_string();
  std::optional<int64_t> count = checked_num_elements(sizes);
  uint64_t bytes = 0;
  if (!count || __builtin_mul_overflow(static_cast<uint64_t>(*count), dtype_size(input.dtype()), &bytes)) {
    throw Error(ErrorKind::kShape, what + " has more elements than fit in 64 bits");
  }
  charge_allocation(bytes, what);
  Tensor t(input.dtype(), sizes);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    switch (input.dtype()) {
      case DType::kFloat32: t.data<float>()[i] = static_cast<float>(u); break;
      case DType::kFloat64: t.data<double>()[i] = u; break;
      case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(u * 10); break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(u * 10); break;
      case DType::kBool: t.data<bool>()[i] = u < 0.5; break;
      default:
        throw Error(ErrorKind::kUnsupported, "--random-inputs cannot make input '" + input.name() + "' of type " +
                                                 input.type().to_string());
    }
  }
  return t;
}

}  // namespace

std::map<std::string, Tensor> model_inputs(const Graph& graph, const std::string& model_file,
                                           const std::vector<std::string>& specs, bool random_rest) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::kInvalidArgument, "-i '" + spec + "': expected NAME=FILE.npy");
    }
    std::string name = spec.substr(0, eq);
    const Value* input = graph.find_value(name);
    if (input == nullptr || input->kind() != ValueKind::kInput) {
      std::string names;
      for (const Value* v : graph.inputs()) names += (names.empty() ? "" : ", ") + v->name() + ": " + v->type().to_string();
      throw Error(ErrorKind::kInvalidArgument, "-i '" + spec + "': the model has no input '" + name + "' (inputs: " + names + ")")
          .with_file(model_file);
    }
    // .pb: a serialized ONNX TensorProto (as in ONNX test data); else .npy.
    std::filesystem::path file = spec.substr(eq + 1);
    // A .pb for a sequence or optional input is a SequenceProto or OptionalProto.
    feeds[name] = file.extension() == ".pb" ? read_onnx_value_file(file.string(), input->type())
                                             : read_npy(file);
  }
  uint64_t seed = 1;
  for (const Value* input : graph.inputs()) {
    if (feeds.count(input->name())) continue;
    if (!random_rest) {
      throw Error(ErrorKind::kInvalidArgument, "input '" + input->name() + "' (" + input->type().to_string() +
                                                   ") is not given; pass -i " + input->name() +
                                                   "=FILE.npy or --random-inputs")
          .with_file(model_file);
    }
    try {
      feeds[input->name()] = random_input(*input, seed++);
    } catch (Error& error) {
      throw error.with_file(model_file);
    }
  }
  return feeds;
}

}  // namespace weir::tools
