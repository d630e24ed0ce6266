#include "frontend/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace weir {

namespace {

// IDX data above this is refused before anything is allocated.
constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 32;

struct GzFileCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

Error format_error(const std::filesystem::path& path, const std::string& message) {
  return Error(ErrorKind::kFormat, message).with_file(path.string());
}

void read_exact(gzFile file, const std::filesystem::path& path, void* data, size_t bytes, const char* what) {
  char* out = static_cast<char*>(data);
  while (bytes > 0) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
    int got = gzread(file, out, chunk);
    if (got <= 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      throw format_error(path, std::string("truncated or corrupt while reading the ") + what +
                                   (code != Z_OK && code != Z_STREAM_END ? std::string(" (") + message + ")" : ""));
    }
    out += got;
    bytes -= static_cast<size_t>(got);
  }
}

}  // namespace

Tensor read_idx(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::kIo, "no such file (an IDX dataset file was expected)").with_file(path.string());
  }
  std::unique_ptr<gzFile_s, GzFileCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw Error(ErrorKind::kIo, "cannot open").with_file(path.string());
  unsigned char magic[4];
  read_exact(file.get(), path, magic, 4, "header");
  if (magic[0] != 0 || magic[1] != 0) throw format_error(path, "not an IDX file (the magic number must start with two zero bytes)");
  DType dtype;
  switch (magic[2]) {
    case 0x08: dtype = DType::kUInt8; break;
    case 0x09: dtype = DType::kInt8; break;
    case 0x0B: dtype = DType::kInt16; break;
    case 0x0C: dtype = DType::kInt32; break;
    case 0x0D: dtype = DType::kFloat32; break;
    case 0x0E: dtype = DType::kFloat64; break;
    default: throw format_error(path, "unknown IDX type code " + std::to_string(magic[2]));
  }
  int rank = magic[3];
  if (rank == 0 || rank > 8) throw format_error(path, "IDX rank " + std::to_string(rank) + " is not in 1..8");
  std::vector<int64_t> sizes;
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    unsigned char b[4];
    read_exact(file.get(), path, b, 4, "dimensions");
    uint32_t dim = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    sizes.push_back(dim);
    if (dim != 0 && count > kMaxIdxBytes / dtype_size(dtype) / dim) throw format_error(path, "IDX data larger than 4 GiB");
    count *= dim;
  }
  Tensor t = Tensor::uninitialized(dtype, sizes);
  read_exact(file.get(), path, t.raw_data(), t.nbytes(), "data");
  // IDX stores multi-byte elements big-endian.
  size_t width = dtype_size(dtype);
  if (width > 1) {
    auto* p = static_cast<unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.nbytes(); i += width) std::reverse(p + i, p + i + width);
  }
  char extra;
  if (gzread(file.get(), &extra, 1) > 0) throw format_error(path, "has bytes after the IDX data");
  return t;
}

Tensor images_to_float(const Tensor& images) {
  if (images.dtype() != DType::kUInt8 || images.rank() != 3) {
    throw Error(ErrorKind::kInvalidArgument, "images must be u8[N,H,W], got " + images.type_string());
  }
  const auto& s = images.sizes();
  Tensor out = Tensor::uninitialized(DType::kFloat32, {s[0], 1, s[1], s[2]});
  const uint8_t* in = images.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < images.num_elements(); ++i) o[i] = static_cast<float>(in[i]) / 255.0f;
  return out;
}

Tensor labels_to_int64(const Tensor& labels) {
  if (labels.dtype() != DType::kUInt8 || labels.rank() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "labels must be u8[N], got " + labels.type_string());
  }
  Tensor out = Tensor::uninitialized(DType::kInt64, labels.sizes());
  for (int64_t i = 0; i < labels.num_elements(); ++i) out.data<int64_t>()[i] = labels.data<uint8_t>()[i];
  return out;
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir) {
  auto load = [&](const char* name) { return read_idx(dir / name); };
  FashionMnist data;
  data.train_images = images_to_float(load("train-images-idx3-ubyte.gz"));
  data.train_labels = labels_to_int64(load("train-labels-idx1-ubyte.gz"));
  data.test_images = images_to_float(load("t10k-images-idx3-ubyte.gz"));
  data.test_labels = labels_to_int64(load("t10k-labels-idx1-ubyte.gz"));
  if (data.train_images.sizes()[0] != data.train_labels.sizes()[0] ||
      data.test_images.sizes()[0] != data.test_labels.sizes()[0]) {
    throw Error(ErrorKind::kFormat, "image and label counts differ").with_file(dir.string());
  }
  return data;
}

}  // namespace weir
