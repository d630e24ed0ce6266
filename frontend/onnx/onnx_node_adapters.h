// Where an ONNX node and the Weir op of the same name differ, these adapters
// rewrite the node so that Weir's schema describes it: arguments that ONNX
// moved between attributes and inputs across opset versions, ops Weir spells
// differently (CastLike), and old opsets whose semantics Weir does not
// implement (refused with the reason).
//
//   OnnxNodeDraft draft{...};                      // as read from the NodeProto
//   std::string why = adapt_onnx_node(draft, graph);
//   if (!why.empty()) report_unsupported(draft, why);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/attribute.h"
#include "core/graph.h"

namespace weir {

struct OnnxNodeDraft {
  std::string name;             // the ONNX name, or "<op>_<index>" when it had none
  std::string op_type;
  std::string domain;           // "" for ONNX's default domain
  int64_t opset = 0;            // the model's opset version for `domain`
  std::vector<Value*> inputs;   // nullptr for an absent optional input
  std::map<std::string, Attribute> attributes;
  // Set by an adapter whose rewrite needs nodes after the op (a Reshape back
  // to the input's shape, a Cast back to the input's type). Called with the
  // op's node once its output types are inferred; adds those nodes (with
  // their types) and returns the values that stand for the ONNX node's
  // outputs, one per output of the op.
  std::function<std::vector<Value*>(Node& op, Graph& graph)> epilogue;
};

// Rewrites `draft` in place (possibly adding constants to `graph`). Returns
// "" on success, else the reason Weir cannot run this node.
std::string adapt_onnx_node(OnnxNodeDraft& draft, Graph& graph);

}  // namespace weir
