// Conversion between the in-memory Graph and its protobuf message.
//
// Used by core/model_io (files) and by tools that embed graphs in other
// messages. Writing is deterministic: the same graph always gives the same
// message, so save -> load -> save is byte-identical. Reading validates every
// field and throws weir::Error naming the node or value at fault; it never
// trusts counts or sizes from the message.
//
//   weir::proto::Graph message;
//   weir::graph_to_proto(graph, &message, /*external=*/nullptr);   // all tensors inline
//   std::unique_ptr<weir::Graph> copy = weir::graph_from_proto(message, /*external=*/nullptr);
#pragma once

#include <memory>
#include <string>

#include "core/external_data.h"
#include "core/graph.h"
#include "core/proto/weir.pb.h"

namespace weir {

// `external` may be null: then every tensor is written inline.
void graph_to_proto(const Graph& graph, proto::Graph* message, ExternalDataWriter* external);
void tensor_to_proto(const Tensor& tensor, proto::Tensor* message, ExternalDataWriter* external);

// `external` may be null: then a tensor that refers to external data is an error.
std::unique_ptr<Graph> graph_from_proto(const proto::Graph& message, ExternalDataReader* external);
// `what` names the tensor in error messages ("constant 'w'").
Tensor tensor_from_proto(const proto::Tensor& message, ExternalDataReader* external,
                         const std::string& what);

}  // namespace weir
