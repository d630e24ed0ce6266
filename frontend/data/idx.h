// IDX files (the MNIST family's format), plain or gzip-compressed.
//
//   weir::Tensor images = weir::read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
//   // u8[60000,28,28]
//   weir::FashionMnist data = weir::load_fashion_mnist();   // train/test, images scaled to [0, 1]
//
// A truncated, corrupt or oversized file is a weir::Error(kFormat) naming it.
#pragma once

#include <filesystem>
#include <string>

#include "core/tensor.h"

namespace weir {

// The tensor in an IDX file: u8, i8, i16, i32, f32 or f64 by the file's type code.
Tensor read_idx(const std::filesystem::path& path);

struct FashionMnist {
  Tensor train_images;  // f32[60000,1,28,28] in [0, 1]
  Tensor train_labels;  // i64[60000]
  Tensor test_images;   // f32[10000,1,28,28]
  Tensor test_labels;   // i64[10000]
};

// Where Debian's dataset-fashion-mnist puts the files.
inline const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads the four files from `dir` (train-images-idx3-ubyte.gz, ...).
FashionMnist load_fashion_mnist(const std::filesystem::path& dir = kFashionMnistDir);

// u8 images [N, H, W] -> f32 [N, 1, H, W] / 255; u8 labels -> i64.
Tensor images_to_float(const Tensor& images);
Tensor labels_to_int64(const Tensor& labels);

}  // namespace weir
