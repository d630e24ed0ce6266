#include "frontend/data/npy.h"

#include <zlib.h>

#include <cstring>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"

namespace weir {

namespace {

constexpr size_t kMaxFileBytes = size_t{1} << 34;  // 16 GiB

Error format_error(const std::string& where, const std::string& message) {
  return Error(ErrorKind::kFormat, message).with_file(where);
}

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "|b1";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    default: return nullptr;
  }
}

DType dtype_of_descr(const std::string& descr, const std::string& where) {
  for (DType d : kAllDTypes) {
    const char* known = descr_of(d);
    if (known == nullptr) continue;
    if (descr == known) return d;
    // One-byte types may be written with '<' or '=' too.
    if (known[0] == '|' && descr.size() == 3 && (descr[0] == '<' || descr[0] == '=') && descr.substr(1) == known + 1) {
      return d;
    }
  }
  if (!descr.empty() && descr[0] == '>') throw format_error(where, "big-endian arrays ('" + descr + "') are not supported");
  throw format_error(where, "unsupported array dtype '" + descr + "'");
}

// The value after `'key':` in the header dict.
std::string header_field(const std::string& header, const std::string& key, const std::string& where) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw format_error(where, "npy header has no '" + key + "'");
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) throw format_error(where, "npy header is malformed near '" + key + "'");
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) throw format_error(where, "npy header is malformed near '" + key + "'");
  size_t end;
  if (header[begin] == '\'') {
    end = header.find('\'', begin + 1);
    if (end == std::string::npos) throw format_error(where, "npy header has an unterminated string");
    return header.substr(begin + 1, end - begin - 1);
  }
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos) throw format_error(where, "npy header has an unterminated shape");
    return header.substr(begin, end - begin + 1);
  }
  end = header.find_first_of(",}", begin);
  if (end == std::string::npos) throw format_error(where, "npy header is malformed near '" + key + "'");
  return header.substr(begin, end - begin);
}

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string npy_bytes(const Tensor& tensor) {
  const char* descr = descr_of(tensor.dtype());
  if (descr == nullptr) {
    throw Error(ErrorKind::kUnsupported, "npy has no dtype for " + tensor.type_string());
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.sizes().size(); ++i) {
    shape += std::to_string(tensor.sizes()[i]) + (tensor.sizes().size() == 1 ? "," : (i + 1 < tensor.sizes().size() ? ", " : ""));
  }
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces and a newline so the data starts 64-byte aligned.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  put16(out, static_cast<uint16_t>(header.size()));
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return out;
}

Tensor parse_npy(std::string_view bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") throw format_error(where, "not an .npy file (bad magic)");
  auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  int major = p[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = le16(p + 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw format_error(where, "truncated .npy header");
    header_len = le32(p + 8);
    offset = 12;
  } else {
    throw format_error(where, "unsupported .npy version " + std::to_string(major));
  }
  if (offset + header_len > bytes.size()) throw format_error(where, "truncated .npy header");
  std::string header(bytes.substr(offset, header_len));
  DType dtype = dtype_of_descr(header_field(header, "descr", where), where);
  if (header_field(header, "fortran_order", where) != "False") {
    throw format_error(where, "Fortran-order arrays are not supported");
  }
  std::string shape = header_field(header, "shape", where);
  std::vector<int64_t> sizes;
  uint64_t count = 1;
  for (size_t i = 1; i + 1 < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    std::string token = shape.substr(i, j - i);
    token.erase(0, token.find_first_not_of(' '));
    if (!token.empty()) {
      char* end = nullptr;
      long long v = std::strtoll(token.c_str(), &end, 10);
      if (end == token.c_str() || v < 0) throw format_error(where, "bad dimension '" + token + "' in shape " + shape);
      sizes.push_back(v);
      if (v != 0 && count > kMaxFileBytes / static_cast<uint64_t>(v)) {
        throw format_error(where, "shape " + shape + " is too large");
      }
      count *= static_cast<uint64_t>(v);
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  size_t data_bytes = static_cast<size_t>(count) * dtype_size(dtype);
  size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != data_bytes) {
    throw format_error(where, "holds " + std::to_string(bytes.size() - data_offset) + " data bytes; shape " + shape +
                                  " of '" + std::string(dtype_name(dtype)) + "' needs " + std::to_string(data_bytes));
  }
  Tensor t = Tensor::uninitialized(dtype, sizes);
  if (data_bytes > 0) std::memcpy(t.raw_data(), bytes.data() + data_offset, data_bytes);
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (static_cast<unsigned char>(bytes[data_offset + static_cast<size_t>(i)]) > 1) {
        throw format_error(where, "bool array holds a byte other than 0 or 1");
      }
    }
  }
  return t;
}

Tensor read_npy(const std::filesystem::path& path) {
  std::string bytes = read_file(path, kMaxFileBytes);
  return parse_npy(bytes, path.string());
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor) { write_file_atomically(path, npy_bytes(tensor)); }

std::vector<std::pair<std::string, Tensor>> read_npz_ordered(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::string file = read_file(path, kMaxFileBytes);
  auto* p = reinterpret_cast<const unsigned char*>(file.data());
  const size_t n = file.size();
  // The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB.
  size_t eocd = std::string::npos;
  for (size_t i = n >= 22 ? n - 22 : 0; n >= 22; --i) {
    if (le32(p + i) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0 || n - i > 22 + 65535) break;
  }
  if (eocd == std::string::npos) throw format_error(where, "not an .npz (zip) file: no end-of-central-directory record");
  uint16_t entries = le16(p + eocd + 10);
  uint32_t cd_size = le32(p + eocd + 12);
  uint32_t cd_offset = le32(p + eocd + 16);
  if (uint64_t{cd_offset} + cd_size > eocd) throw format_error(where, "zip central directory lies outside the file");
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::set<std::string> seen;
  size_t at = cd_offset;
  for (uint16_t e = 0; e < entries; ++e) {
    if (at + 46 > eocd || le32(p + at) != 0x02014b50) throw format_error(where, "zip central directory is corrupt");
    uint16_t method = le16(p + at + 10);
    uint32_t crc = le32(p + at + 16);
    uint32_t compressed = le32(p + at + 20);
    uint32_t size = le32(p + at + 24);
    uint16_t name_len = le16(p + at + 28), extra_len = le16(p + at + 30), comment_len = le16(p + at + 32);
    uint32_t local = le32(p + at + 42);
    if (at + 46 + name_len > eocd) throw format_error(where, "zip central directory is corrupt");
    std::string name(file.data() + at + 46, name_len);
    at += 46 + size_t{name_len} + extra_len + comment_len;
    std::string member = where + ":" + name;
    if (uint64_t{local} + 30 > n || le32(p + local) != 0x04034b50) throw format_error(member, "zip member header is corrupt");
    size_t data = local + 30 + size_t{le16(p + local + 26)} + le16(p + local + 28);
    if (uint64_t{data} + compressed > n) throw format_error(member, "zip member runs past the end of the file");
    // Deflate expands at most about 1032:1; a larger claim is a lie, refused
    // before allocating for it.
    if (size > kMaxFileBytes || (method == 8 && uint64_t{size} > uint64_t{compressed} * 1032 + 1024)) {
      throw format_error(member, "zip member claims an implausible size");
    }
    std::string content;
    if (method == 0) {
      if (compressed != size) throw format_error(member, "stored zip member has different sizes");
      content.assign(file.data() + data, size);
    } else if (method == 8) {
      content.resize(size);
      z_stream zs{};
      if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw format_error(member, "cannot start inflate");
      zs.next_in = const_cast<Bytef*>(p + data);
      zs.avail_in = compressed;
      zs.next_out = reinterpret_cast<Bytef*>(content.data());
      zs.avail_out = size;
      int rc = inflate(&zs, Z_FINISH);
      size_t produced = zs.total_out;
      inflateEnd(&zs);
      if (rc != Z_STREAM_END || produced != size) throw format_error(member, "deflated data is corrupt");
    } else {
      throw format_error(member, "unsupported zip compression method " + std::to_string(method));
    }
    if (crc32(0L, reinterpret_cast<const Bytef*>(content.data()), static_cast<uInt>(content.size())) != crc) {
      throw format_error(member, "CRC-32 mismatch");
    }
    std::string key = name.size() > 4 && name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
    if (!seen.insert(key).second) throw format_error(member, "array '" + key + "' appears twice");
    arrays.emplace_back(key, parse_npy(content, member));
  }
  return arrays;
}

std::map<std::string, Tensor> read_npz(const std::filesystem::path& path) {
  std::map<std::string, Tensor> result;
  for (auto& [name, tensor] : read_npz_ordered(path)) result.emplace(name, std::move(tensor));
  return result;
}

void write_npz(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& arrays) {
  std::string out, central;
  std::set<std::string> seen;
  for (const auto& [key, tensor] : arrays) {
    if (key.empty() || key.size() > 60000 || !seen.insert(key).second) {
      throw Error(ErrorKind::kInvalidArgument, "npz array name '" + key + "' is empty, too long or repeated")
          .with_file(path.string());
    }
    std::string name = key + ".npy";
    std::string content = npy_bytes(tensor);
    if (content.size() >= 0xffffffffu || out.size() >= 0xffffffffu - content.size() - 1024) {
      throw Error(ErrorKind::kUnsupported, "npz over 4 GiB (zip64) is not supported").with_file(path.string());
    }
    uint32_t crc = crc32(0L, reinterpret_cast<const Bytef*>(content.data()), static_cast<uInt>(content.size()));
    uint32_t offset = static_cast<uint32_t>(out.size());
    auto common = [&](std::string& s) {
      put16(s, 20);  // version needed
      put16(s, 0);   // flags
      put16(s, 0);   // stored
      put16(s, 0);   // time
      put16(s, 0x21);  // date: 1980-01-01
      put32(s, crc);
      put32(s, static_cast<uint32_t>(content.size()));
      put32(s, static_cast<uint32_t>(content.size()));
      put16(s, static_cast<uint16_t>(name.size()));
      put16(s, 0);  // extra
    };
    put32(out, 0x04034b50);
    common(out);
    out += name;
    out += content;
    put32(central, 0x02014b50);
    put16(central, 20);  // version made by
    common(central);
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += name;
  }
  if (arrays.size() > 0xffff) throw Error(ErrorKind::kUnsupported, "npz with over 65535 arrays").with_file(path.string());
  uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint16_t>(arrays.size()));
  put16(out, static_cast<uint16_t>(arrays.size()));
  put32(out, static_cast<uint32_t>(central.size()));
  put32(out, cd_offset);
  put16(out, 0);
  write_file_atomically(path, out);
}

}  // namespace weir
