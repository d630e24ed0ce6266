// NumPy's .npy (one array) and .npz (a zip of .npy files) formats.
//
//   weir::write_npy("x.npy", tensor);                 // atomic: temp file, then rename
//   weir::Tensor x = weir::read_npy("x.npy");
//   weir::write_npz("ckpt.npz", {{"w", w}, {"b", b}});
//   std::map<std::string, weir::Tensor> arrays = weir::read_npz("ckpt.npz");
//
// Little-endian C-order arrays of bool, int8/16/32/64, uint8, float16/32/64
// are read and written. The .npz reader takes stored and deflated members
// (what numpy.savez and savez_compressed write); the writer stores them
// uncompressed, with CRC-32s. A malformed file is a weir::Error(kFormat)
// naming the file (and member).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace weir {

std::string npy_bytes(const Tensor& tensor);
// `where` names the source in errors.
Tensor parse_npy(std::string_view bytes, const std::string& where);

Tensor read_npy(const std::filesystem::path& path);
void write_npy(const std::filesystem::path& path, const Tensor& tensor);

// Member names without the ".npy" suffix, in file order.
std::vector<std::pair<std::string, Tensor>> read_npz_ordered(const std::filesystem::path& path);
std::map<std::string, Tensor> read_npz(const std::filesystem::path& path);
void write_npz(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& arrays);

}  // namespace weir
