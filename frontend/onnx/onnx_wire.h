// A pre-pass over an ONNX ModelProto's wire bytes that lifts the main
// graph's initializer payloads (TensorProto.raw_data) out before parsing:
// protobuf would copy every byte of them into strings (100 MB for
// ResNet-50, most of the load time), while the importer can read them
// straight from the mapped file.
//
//   std::optional<WeightlessModel> split = split_initializer_data(file_bytes);
//   if (split) proto.ParseFromString(split->bytes);   // small: no weights
//   // initializer i's raw_data: split->raw_data[i] (nullopt when it had none)
//
// Only well-formed, unambiguous input is split; anything else (a raw_data
// field given twice, a group, a length past the end) returns nullopt, and
// the caller parses the original bytes, where protobuf reports the problem.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

struct WeightlessModel {
  std::string bytes;                                        // the ModelProto without the payloads
  std::vector<std::optional<std::string_view>> raw_data;    // per graph.initializer, in order; views of the input
};

std::optional<WeightlessModel> split_initializer_data(std::string_view model);

}  // namespace weir
