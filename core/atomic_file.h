// Writes a file so that readers see either the old file or the whole new one.
//
//   weir::write_file_atomically("model.weir", bytes);
//
// The bytes go to a temporary file in the same directory, which is flushed to
// disk and then renamed over the target. A crash or error part-way leaves the
// previous file untouched and removes the temporary. Throws weir::Error(kIo)
// naming the file.
#pragma once

#include <filesystem>
#include <string_view>

namespace weir {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Reads a whole regular file; throws weir::Error(kIo) naming it when it is
// missing, not a regular file, larger than `max_bytes`, or unreadable.
std::string read_file(const std::filesystem::path& path, size_t max_bytes);

}  // namespace weir
