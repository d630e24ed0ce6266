// weir::Error — the one error type Weir throws.
//
// Everything inside Weir reports failure by throwing weir::Error; the edges
// (the CLI, the plugin ABI, tests) catch it. An error carries a kind, a
// message saying what was expected, and where it happened: the node, file and
// rank it concerns, when known. what() joins them into one line.
//
//   try {
//     auto model = weir::load_model("net.weir");
//   } catch (const weir::Error& e) {
//     if (e.kind() == weir::ErrorKind::kFormat) { ... }
//     fmt::print(stderr, "error: {}\n", e.what());
//   }
//
//   throw weir::Error(weir::ErrorKind::kInvalidGraph, "input 1 is undefined")
//       .with_node("conv1");
#pragma once

#include <string>
#include <stdexcept>

namespace weir {

enum class ErrorKind {
  kInvalidArgument,  // a caller passed a value outside the contract
  kInvalidGraph,     // a graph breaks an IR invariant (cycle, dangling input, ...)
  kShape,            // shapes or dtypes do not agree with an op's schema
  kFormat,           // a file is not a well-formed Weir/ONNX model
  kIo,               // a file could not be opened, read, written or renamed
  kUnsupported,      // valid input that this build does not handle (unknown op, newer IR)
  kOutOfMemory,      // an allocator could not satisfy a request
  kDevice,           // a device (CUDA, ...) reported a failure
  kCommunication,    // a collective failed: a peer died, aborted or called a different collective
  kInternal,         // a Weir bug: an invariant Weir itself should have kept
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message);

  ErrorKind kind() const { return kind_; }
  // The bare message, without the location prefix that what() adds.
  const std::string& message() const { return message_; }
  const std::string& node() const { return node_; }
  const std::string& file() const { return file_; }
  int rank() const { return rank_; }  // -1 when the error concerns no rank

  // Location setters return *this so a throw site reads as one expression.
  // Setting a location that is already set keeps the innermost (first) one.
  Error& with_node(std::string node);
  Error& with_file(std::string file);
  Error& with_rank(int rank);

  const char* what() const noexcept override { return full_.c_str(); }

 private:
  void rebuild();

  ErrorKind kind_;
  std::string message_;
  std::string node_;
  std::string file_;
  int rank_ = -1;
  std::string full_;
};

}  // namespace weir
