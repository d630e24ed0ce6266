// Placement: which device runs each node, and the copies between devices.
//
//   weir::place_graph(graph, {weir::Device::cpu(0), weir::Device::cpu(1)}, weir::Device::cpu(0));
//
// A node keeps its device annotation (which must be one of `devices`); a
// node without one runs on `default_device`. Wherever a node's output is read
// by a node on another device, one DeviceCopy node per destination device is
// inserted (on that device) and the readers there read the copy. Graph
// inputs, constants and persistent values are host tensors that every CPU
// device reads directly. Back from a GPU to the host the copy runs on the
// GPU, into host memory (DeviceCopy with to_host=1); a graph input,
// constant or parameter read both on a GPU and on the host lives on the GPU
// and its host readers read such a copy (runtime/host_fallback.h).
#pragma once

#include <vector>

#include "core/device.h"
#include "core/graph.h"

namespace weir {

// Returns the number of DeviceCopy nodes inserted.
int place_graph(Graph& graph, const std::vector<Device>& devices, const Device& default_device);

}  // namespace weir
