#include "core/attribute.h"

#include "core/error.h"
#include "core/graph.h"

namespace weir {

std::string_view attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kTensor: return "tensor";
    case AttrType::kGraph: return "graph";
    case AttrType::kInts: return "ints";
    case AttrType::kFloats: return "floats";
    case AttrType::kStrings: return "strings";
    case AttrType::kTensors: return "tensors";
    case AttrType::kGraphs: return "graphs";
  }
  return "unknown";
}

void Attribute::throw_wrong_type(AttrType expected) const {
  throw Error(ErrorKind::kInvalidArgument, "attribute holds " + std::string(attr_type_name(type())) +
                                               ", not " + std::string(attr_type_name(expected)));
}

Attribute Attribute::deep_copy() const {
  if (type() == AttrType::kGraph) {
    return Attribute(g() ? GraphPtr(g()->clone()) : GraphPtr());
  }
  if (type() == AttrType::kGraphs) {
    std::vector<GraphPtr> copies;
    copies.reserve(graphs().size());
    for (const GraphPtr& graph : graphs()) copies.push_back(graph ? GraphPtr(graph->clone()) : nullptr);
    return Attribute(std::move(copies));
  }
  return *this;
}

}  // namespace weir
