#include "core/error.h"

#include <utility>

namespace weir {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kInvalidGraph: return "invalid graph";
    case ErrorKind::kShape: return "shape error";
    case ErrorKind::kFormat: return "format error";
    case ErrorKind::kIo: return "I/O error";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kOutOfMemory: return "out of memory";
    case ErrorKind::kDevice: return "device error";
    case ErrorKind::kCommunication: return "communication error";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

Error::Error(ErrorKind kind, std::string message)
    : std::runtime_error(message), kind_(kind), message_(std::move(message)) {
  rebuild();
}

Error& Error::with_node(std::string node) {
  if (node_.empty()) node_ = std::move(node);
  rebuild();
  return *this;
}

Error& Error::with_file(std::string file) {
  if (file_.empty()) file_ = std::move(file);
  rebuild();
  return *this;
}

Error& Error::with_rank(int rank) {
  if (rank_ < 0) rank_ = rank;
  rebuild();
  return *this;
}

// what() reads "file 'm.weir': rank 1: node 'conv1': <message>", outermost
// location first, so the line says where before it says what.
void Error::rebuild() {
  full_.clear();
  if (!file_.empty()) full_ += "file '" + file_ + "': ";
  if (rank_ >= 0) full_ += "rank " + std::to_string(rank_) + ": ";
  if (!node_.empty()) full_ += "node '" + node_ + "': ";
  full_ += message_;
}

}  // namespace weir
