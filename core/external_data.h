// External tensor data: tensors at or above a size threshold are stored in a
// data file beside the model instead of inside it.
//
// Writing: ExternalDataWriter collects tensor bytes (each at a 64-byte
// aligned offset, so a later mmap can use them in place) and, once the file
// name is known, stamps it into every reference it handed out.
//
// Reading: ExternalDataReader resolves a reference against the model's
// directory and refuses any location that is absolute, contains "..", or
// resolves (through symlinks) outside that directory, and any byte range
// past the end of its file.
//
//   weir::ExternalDataReader reader("/models/net.weir");
//   reader.check(tensor_proto.external(), expected_bytes, "constant 'w'");  // before allocating
//   reader.read(tensor_proto.external(), dst, expected_bytes, "constant 'w'");
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/proto/weir.pb.h"
#include "core/tensor.h"

namespace weir {

class ExternalDataWriter {
 public:
  explicit ExternalDataWriter(size_t threshold_bytes) : threshold_(threshold_bytes) {}

  // Appends the tensor's bytes and fills `reference` when the tensor is at
  // least the threshold; returns whether it did.
  bool append(const Tensor& tensor, proto::ExternalData* reference);
  bool empty() const { return bytes_.empty(); }
  const std::string& bytes() const { return bytes_; }
  // Sets the location of every reference append() filled.
  void set_location(const std::string& location);

 private:
  size_t threshold_;
  std::string bytes_;
  std::vector<proto::ExternalData*> references_;
};

class ExternalDataReader {
 public:
  explicit ExternalDataReader(const std::filesystem::path& model_path);
  ~ExternalDataReader();
  ExternalDataReader(const ExternalDataReader&) = delete;
  ExternalDataReader& operator=(const ExternalDataReader&) = delete;

  // Checks that the reference names a regular file inside the model's
  // directory and that its range holds exactly `expected_bytes` bytes, all
  // within the file. Loaders call it before they allocate the tensor, so a
  // missing file or a short range costs nothing. `what` names the tensor
  // for error messages ("constant 'w'").
  void check(const proto::ExternalData& reference, size_t expected_bytes, const std::string& what);
  // check(), then copies exactly `expected_bytes` bytes of the range into `dst`.
  void read(const proto::ExternalData& reference, void* dst, size_t expected_bytes,
            const std::string& what);

 private:
  struct OpenFile {
    int fd = -1;
    uint64_t size = 0;
  };
  const OpenFile& open(const std::string& location, const std::string& what);

  std::filesystem::path model_directory_;  // canonical
  std::map<std::string, OpenFile> files_;
};

// A fast 64-bit hash of the bytes, used to name data files by their content.
uint64_t content_hash(std::string_view bytes);

}  // namespace weir
