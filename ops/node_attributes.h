// Attribute reads with the schema's default, for kernels built from a node
// whose optional attributes may be absent (a node carries only what its
// writer set; schema defaults are not filled in).
#pragma once

#include "core/graph.h"

namespace weir {

inline double float_attr(const Node& node, const char* name, double fallback) {
  return node.has_attr(name) ? node.attr(name).f() : fallback;
}

inline int64_t int_attr(const Node& node, const char* name, int64_t fallback) {
  return node.has_attr(name) ? node.attr(name).i() : fallback;
}

}  // namespace weir
