// ONNX models built as ModelProto messages for the importer's tests, so each
// test states exactly what it feeds the importer.
//
//   ModelBuilder m(13);
//   m.input("x", {2, 3}).output("y");
//   add_ints(m.node("Squeeze", {"x"}, {"y"}, "squeeze"), "axes", {0});
//   Model model = m.import();
#pragma once

#include <string>
#include <vector>

#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"

namespace weir::testing {

// A model with the default opset `opset` and graph inputs/outputs of f32.
struct ModelBuilder {
  onnx::ModelProto model;
  onnx::GraphProto* graph;

  explicit ModelBuilder(int64_t opset) {
    model.set_ir_version(8);
    model.set_producer_name("weir-test");
    onnx::OperatorSetIdProto* id = model.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    graph = model.mutable_graph();
    graph->set_name("g");
  }
  void value_info(onnx::ValueInfoProto* info, const std::string& name, const std::vector<int64_t>& dims,
                  int32_t type = onnx::TensorProto::FLOAT) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : dims) {
      if (d >= 0) tensor->mutable_shape()->add_dim()->set_dim_value(d);
      else tensor->mutable_shape()->add_dim()->set_dim_param("batch");
    }
  }
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims, int32_t type = onnx::TensorProto::FLOAT) {
    value_info(graph->add_input(), name, dims, type);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    graph->add_output()->set_name(name);
    graph->mutable_output(graph->output_size() - 1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return *this;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    return n;
  }
  onnx::TensorProto* initializer(const Tensor& tensor, const std::string& name) {
    *graph->add_initializer() = tensor_to_onnx(tensor, name);
    return graph->mutable_initializer(graph->initializer_size() - 1);
  }
  std::string bytes() const { return model.SerializeAsString(); }
  Model import() const { return import_onnx_model_from_bytes(bytes(), "test.onnx"); }
};

inline void add_ints(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

inline void add_float(onnx::NodeProto* node, const std::string& name, float value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

inline void add_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

inline void add_string(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

inline void add_floats(onnx::NodeProto* node, const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

}  // namespace weir::testing
