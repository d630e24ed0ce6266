// ONNX import: reads an ONNX model (.onnx, a serialized ModelProto) into a
// Weir Model whose graph uses Weir's own ops.
//
//   weir::Model model = weir::import_onnx_model("resnet50.onnx");
//   std::vector<weir::Tensor> y = weir::evaluate_graph(*model.graph, {{"data", x}});
//
// Each ONNX node maps onto the Weir op of the same name through Weir's op
// schemas; onnx_node_adapters.h rewrites the nodes whose inputs or
// attributes moved between ONNX opset versions. Initializers and Constant
// nodes become graph constants; dim_param dims become symbolic dims.
// Sub-graphs (If, Loop, Scan) are imported recursively; an outer-scope
// value a sub-graph reads becomes an explicit last input of the sub-graph
// and of its node (ops/control/control_flow.h).
//
// Errors:
//  - unreadable or malformed files: weir::Error(kIo / kFormat) naming the file
//    and what is wrong (a node input nobody produces, an initializer whose
//    data does not fit its type, ...);
//  - a valid model Weir cannot run: ONE weir::Error(kUnsupported) listing every
//    unsupported op type with its opset and node names, and every value of an
//    unsupported type;
//  - inputs that contradict an op's schema: weir::Error(kShape) naming the node.
#pragma once

#include <string>

#include "core/model.h"
#include "core/op_schema.h"

namespace weir {

struct OnnxImportOptions {
  const OpRegistry* registry = nullptr;  // nullptr: default_op_registry()
};

// External data is resolved against the model file's directory and may not
// leave it.
Model import_onnx_model(const std::string& path, const OnnxImportOptions& options = {});

// Imports a ModelProto held in memory; `source` names it in errors. Tensors
// with external data are refused (there is no directory to resolve them in).
Model import_onnx_model_from_bytes(const std::string& bytes, const std::string& source,
                                   const OnnxImportOptions& options = {});

}  // namespace weir
