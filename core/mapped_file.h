// A read-only memory mapping of a whole file, unmapped with its last user:
// loaders parse straight from it, and tensors may be views of it (kept alive
// through Tensor::wrap's keep_alive).
//
//   std::shared_ptr<weir::MappedFile> file = weir::map_file("model.weirplan");
//   parse(static_cast<const char*>(file->data), file->size);
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>

namespace weir {

struct MappedFile {
  void* data = nullptr;  // nullptr for an empty file
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
};

// How the pages come in: all of them at once (a loader that reads the whole
// file: one pass of the kernel instead of a fault per page), or as they are
// first touched (a plan file, whose kernels read only some of its weights).
enum class MapPages { kPopulate, kOnTouch };

// Throws weir::Error(kIo) naming the file when it is missing, not a regular
// file, larger than `max_bytes`, or cannot be mapped.
std::shared_ptr<MappedFile> map_file(const std::filesystem::path& path, size_t max_bytes = SIZE_MAX,
                                     MapPages pages = MapPages::kPopulate);

}  // namespace weir
