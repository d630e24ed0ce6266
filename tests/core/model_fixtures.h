// A model that exercises every part of the format: every attribute type,
// sub-graphs (nested), control inputs, device/stream placement, absent
// optional inputs, persistent values of every role, symbolic and unknown
// shapes, every dtype, and tensors both below and above the external-data
// threshold (1 KiB by default).
#pragma once

#include <fstream>
#include <limits>

#include "core/model.h"
#include "core/proto/weir.pb.h"
#include "tests/test_util.h"

namespace weir::testing {

inline Tensor random_tensor(std::vector<int64_t> sizes, uint32_t seed) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return Tensor::from_vector(random_floats(static_cast<size_t>(count), seed), std::move(sizes));
}

inline std::shared_ptr<Graph> make_body(const std::string& name, uint32_t seed) {
  auto body = std::make_shared<Graph>(name);
  Value* in = body->add_input(name + "_in", {DType::kFloat32, Shape{Dim::symbol("N"), 4}});
  Value* big = body->add_constant(name + "_big", random_tensor({16, 32}, seed));  // 2 KiB: external
  Node* relu = body->add_node("Relu", {in}, 1, {}, name + "_relu");
  Node* use = body->add_node("UsesBig", {relu->output(0), big}, 1, {{"k", Attribute(static_cast<int64_t>(seed))}}, name + "_use");
  body->add_output(use->output(0));
  return body;
}

inline Model make_rich_model() {
  Model model;
  model.metadata = {{"author", "weir tests"}, {"purpose", "round trip"}};
  auto g = std::make_unique<Graph>("rich");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{Dim::symbol("N"), 4}});
  Value* mask = g->add_input("mask", {DType::kBool, Shape::unknown_rank()});
  g->add_input("ids", {DType::kInt64, Shape{Dim::symbol("batch"), Dim::symbol("seq")}});

  g->add_constant("small", random_tensor({3}, 1));
  Value* big = g->add_constant("big", random_tensor({64, 64}, 2));  // 16 KiB: external
  g->add_constant("i8", Tensor::from_vector<int8_t>({-128, 0, 127}, {3}));
  g->add_constant("u8", Tensor::from_vector<uint8_t>({0, 200, 255}, {3}));
  g->add_constant("i16", Tensor::from_vector<int16_t>({-30000, 7}, {2}));
  g->add_constant("i32", Tensor::from_vector<int32_t>({1 << 30, -5}, {2}));
  g->add_constant("f64", Tensor::from_vector<double>({3.141592653589793, -1e-300}, {2}));
  g->add_constant("f16", Tensor::from_vector<Float16>({Float16(0.5f), Float16(-65504.0f)}, {2}));
  g->add_constant("bf16", Tensor::from_vector<BFloat16>({BFloat16(1.25f), BFloat16(-3.0f)}, {1, 2}));
  g->add_constant("flags", Tensor::from_vector<bool>({true, false}, {2}));
  g->add_constant("scalar", Tensor::scalar<float>(2.5f));
  g->add_constant("empty", Tensor(DType::kFloat32, {0, 3}));

  Value* w = g->add_persistent("w", {DType::kFloat32, Shape{4, 3}}, PersistentRole::kParameter,
                               random_tensor({4, 3}, 3));
  g->add_persistent("w_big", {DType::kFloat32, Shape{256, 4}}, PersistentRole::kParameter,
                    random_tensor({256, 4}, 4));
  g->add_persistent("w_moment", {DType::kFloat32, Shape{4, 3}}, PersistentRole::kOptimizerState);
  g->add_persistent("step", {DType::kInt64, Shape{}}, PersistentRole::kBuffer, Tensor::scalar<int64_t>(7));

  Node* mm = g->add_node("MatMul", {x, w}, 1, {}, "mm");
  mm->set_device(Device::cpu(1));
  mm->set_stream("compute");
  Node* gemm = g->add_node("Gemm", {x, w, nullptr}, 1, {{"alpha", Attribute(0.5)}, {"transB", Attribute(0)}}, "gemm");
  std::map<std::string, Attribute> every;
  every.emplace("an_int", Attribute(int64_t{-9007199254740993}));
  every.emplace("a_float", Attribute(0.1));
  every.emplace("a_string", Attribute(std::string("bytes\xff\x00 and text", 16)));
  every.emplace("a_tensor", Attribute(random_tensor({2, 2}, 5)));
  every.emplace("a_big_tensor", Attribute(random_tensor({32, 32}, 6)));
  every.emplace("a_graph", Attribute(GraphPtr(make_body("body", 7))));
  every.emplace("ints", Attribute(std::vector<int64_t>{1, -2, std::numeric_limits<int64_t>::max()}));
  every.emplace("floats", Attribute(std::vector<double>{0.1, -0.0, 1e-310, 6.02214076e23,
                                                        std::numeric_limits<double>::infinity()}));
  every.emplace("strings", Attribute(std::vector<std::string>{"a", "", "ü"}));
  every.emplace("tensors", Attribute(std::vector<Tensor>{random_tensor({3}, 8), random_tensor({20, 20}, 9)}));
  every.emplace("graphs", Attribute(std::vector<GraphPtr>{make_body("then", 10), make_body("else", 11)}));
  Node* attrs = g->add_node("EveryAttribute", {mm->output(0), mask, big}, 2, std::move(every), "attrs");
  attrs->set_domain("test.weir");
  Node* allreduce = g->add_node("AllReduce", {gemm->output(0)}, 1, {{"op", Attribute("sum")}}, "allreduce");
  allreduce->set_device(Device::cuda(0));
  allreduce->set_stream("comm0");
  allreduce->add_control_input(attrs);
  allreduce->add_control_input(mm);
  mm->output(0)->set_type({DType::kFloat32, Shape{Dim::symbol("N"), 3}});
  g->add_output(attrs->output(1));
  g->add_output(allreduce->output(0));
  g->add_output(x);  // a graph input may also be an output
  model.graph = std::move(g);
  return model;
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline proto::Model read_model_proto(const std::filesystem::path& path) {
  proto::Model message;
  if (!message.ParseFromString(read_bytes(path))) throw std::runtime_error("unparsable test model");
  return message;
}

inline void write_model_proto(const std::filesystem::path& path, const proto::Model& message) {
  write_bytes(path, message.SerializeAsString());
}

// Names of the files in a directory, sorted.
inline std::vector<std::string> list_dir(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace weir::testing
