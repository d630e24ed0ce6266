#include "frontend/onnx/onnx_wire.h"

#include <cstdint>

namespace weir {

namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
// Field numbers (onnx.proto): ModelProto.graph, GraphProto.initializer, TensorProto.raw_data.
constexpr uint64_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }
  size_t pos() const { return pos_; }

  bool varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // One field: its number, wire type, and (length-delimited) payload; `whole`
  // is the field's bytes, tag included.
  bool field(uint64_t& number, uint32_t& type, std::string_view& payload, std::string_view& whole) {
    size_t start = pos_;
    uint64_t tag = 0;
    if (!varint(tag)) return false;
    number = tag >> 3;
    type = static_cast<uint32_t>(tag & 7);
    payload = {};
    switch (type) {
      case kVarint: {
        uint64_t ignored = 0;
        if (!varint(ignored)) return false;
        break;
      }
      case kFixed64:
        if (bytes_.size() - pos_ < 8) return false;
        pos_ += 8;
        break;
      case kFixed32:
        if (bytes_.size() - pos_ < 4) return false;
        pos_ += 4;
        break;
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!varint(length) || length > bytes_.size() - pos_) return false;
        payload = bytes_.substr(pos_, static_cast<size_t>(length));
        pos_ += static_cast<size_t>(length);
        break;
      }
      default: return false;  // groups (3, 4) and unknown types: let protobuf judge
    }
    whole = bytes_.substr(start, pos_ - start);
    return true;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_message(std::string& out, uint64_t number, const std::string& body) {
  put_varint(out, (number << 3) | kLengthDelimited);
  put_varint(out, body.size());
  out += body;
}

// A TensorProto without raw_data; `raw` gets the payload, if any.
bool strip_tensor(std::string_view tensor, std::string& out, std::optional<std::string_view>& raw) {
  Reader reader(tensor);
  while (!reader.done()) {
    uint64_t number = 0;
    uint32_t type = 0;
    std::string_view payload, whole;
    if (!reader.field(number, type, payload, whole)) return false;
    if (number == kTensorRawData) {
      if (type != kLengthDelimited || raw) return false;  // given twice: protobuf's merge rules decide
      raw = payload;
      continue;
    }
    out += whole;
  }
  return true;
}

bool strip_graph(std::string_view graph, std::string& out, std::vector<std::optional<std::string_view>>& raw_data) {
  Reader reader(graph);
  while (!reader.done()) {
    uint64_t number = 0;
    uint32_t type = 0;
    std::string_view payload, whole;
    if (!reader.field(number, type, payload, whole)) return false;
    if (number == kGraphInitializer && type == kLengthDelimited) {
      std::string tensor;
      std::optional<std::string_view> raw;
      if (!strip_tensor(payload, tensor, raw)) return false;
      raw_data.push_back(raw);
      put_message(out, number, tensor);
      continue;
    }
    out += whole;
  }
  return true;
}

}  // namespace

std::optional<WeightlessModel> split_initializer_data(std::string_view model) {
  WeightlessModel result;
  result.bytes.reserve(1 << 16);
  Reader reader(model);
  bool seen_graph = false;
  while (!reader.done()) {
    uint64_t number = 0;
    uint32_t type = 0;
    std::string_view payload, whole;
    if (!reader.field(number, type, payload, whole)) return std::nullopt;
    if (number == kModelGraph && type == kLengthDelimited) {
      if (seen_graph) return std::nullopt;  // two graph fields merge in protobuf: leave that to it
      seen_graph = true;
      std::string graph;
      if (!strip_graph(payload, graph, result.raw_data)) return std::nullopt;
      put_message(result.bytes, number, graph);
      continue;
    }
    result.bytes += whole;
  }
  return result;
}

}  // namespace weir
