// IDX, .npy and .npz readers and writers: round trips of every supported
// dtype, the real Fashion-MNIST files, and malformed files rejected with
// errors naming the file (never a crash).
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "frontend/data/idx.h"
#include "frontend/data/npy.h"
#include "tests/test_util.h"

namespace weir {
namespace {

Tensor sample(DType dtype, std::vector<int64_t> sizes, uint32_t seed) {
  Tensor t(dtype, sizes);
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  uint32_t state = seed;
  for (size_t i = 0; i < t.nbytes(); ++i) {
    state = state * 1664525u + 1013904223u;
    bytes[i] = static_cast<unsigned char>(state >> 24);
  }
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.num_elements(); ++i) bytes[i] &= 1;
  }
  return t;
}

TEST(Npy, RoundTripsEveryDType) {
  testing::ScratchDir dir;
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8, DType::kUInt8, DType::kInt16,
                      DType::kInt32, DType::kInt64, DType::kBool}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{}, {5}, {2, 3, 4}, {0, 3}}) {
      Tensor t = sample(dtype, sizes, seed++);
      auto path = dir.path() / "t.npy";
      write_npy(path, t);
      Tensor back = read_npy(path);
      EXPECT_TRUE(back.bitwise_equal(t)) << t.type_string();
      std::string bytes = read_file(path, 1 << 20);
      EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u) << "data not 64-byte aligned";
    }
  }
  EXPECT_THROW(write_npy(dir.path() / "bf.npy", Tensor(DType::kBFloat16, {2})), Error);
}

TEST(Npy, MalformedFilesAreRejectedNamingTheFile) {
  testing::ScratchDir dir;
  Tensor t = sample(DType::kFloat32, {3, 4}, 7);
  std::string good = npy_bytes(t);
  int rejected = 0;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    try {
      parse_npy(std::string_view(good).substr(0, cut), "cut.npy");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.npy"), std::string::npos);
      ++rejected;
    }
  }
  EXPECT_EQ(rejected, static_cast<int>(good.size())) << "every truncation is an error";
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THROW(parse_npy(fortran, "f.npy"), Error);
  std::string big_endian = good;
  big_endian[big_endian.find("<f4")] = '>';
  EXPECT_THROW(parse_npy(big_endian, "be.npy"), Error);
  EXPECT_THROW(read_npy(dir.path() / "missing.npy"), Error);
}

TEST(Npz, RoundTripsAndChecksCrc) {
  testing::ScratchDir dir;
  auto path = dir.path() / "a.npz";
  std::vector<std::pair<std::string, Tensor>> arrays = {{"w", sample(DType::kFloat32, {4, 3}, 1)},
                                                        {"layer/b", sample(DType::kInt64, {7}, 2)},
                                                        {"flag", sample(DType::kBool, {}, 3)}};
  write_npz(path, arrays);
  auto back = read_npz_ordered(path);
  ASSERT_EQ(back.size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(back[i].first, arrays[i].first);
    EXPECT_TRUE(back[i].second.bitwise_equal(arrays[i].second));
  }
  // Flip one data byte: the CRC catches it.
  std::string bytes = read_file(path, 1 << 20);
  bytes[100] ^= 0x5a;
  write_file_atomically(path, bytes);
  try {
    read_npz(path);
    FAIL() << "corrupt npz accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.npz"), std::string::npos) << e.what();
  }
  // Every truncation is rejected.
  std::string good = read_file(path, 1 << 20);
  good[100] ^= 0x5a;
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    write_file_atomically(path, good.substr(0, cut));
    EXPECT_THROW(read_npz(path), Error) << "cut at " << cut;
  }
}

// numpy.savez_compressed writes deflated members; build one with zlib.
TEST(Npz, ReadsDeflatedMembers) {
  testing::ScratchDir dir;
  Tensor t = sample(DType::kFloat64, {16, 5}, 9);
  std::string npy = npy_bytes(t);
  std::string deflated(compressBound(static_cast<uLong>(npy.size())) + 64, '\0');
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(npy.data());
  zs.avail_in = static_cast<uInt>(npy.size());
  zs.next_out = reinterpret_cast<Bytef*>(deflated.data());
  zs.avail_out = static_cast<uInt>(deflated.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  deflated.resize(zs.total_out);
  deflateEnd(&zs);
  // Write the stored archive, then patch in the deflated member.
  auto path = dir.path() / "c.npz";
  write_npz(path, {{"x", t}});
  std::string stored = read_file(path, 1 << 20);
  uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(npy.data()), static_cast<uInt>(npy.size()));
  auto put16 = [](std::string& s, size_t at, uint16_t v) {
    s[at] = static_cast<char>(v & 0xff);
    s[at + 1] = static_cast<char>(v >> 8);
  };
  auto put32 = [](std::string& s, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) s[at + static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  std::string name = "x.npy";
  std::string local(30, '\0');
  put32(local, 0, 0x04034b50);
  put16(local, 4, 20);
  put16(local, 8, 8);
  put32(local, 14, crc);
  put32(local, 18, static_cast<uint32_t>(deflated.size()));
  put32(local, 22, static_cast<uint32_t>(npy.size()));
  put16(local, 26, static_cast<uint16_t>(name.size()));
  std::string archive = local + name + deflated;
  std::string central(46, '\0');
  put32(central, 0, 0x02014b50);
  put16(central, 4, 20);
  put16(central, 6, 20);
  put16(central, 10, 8);
  put32(central, 16, crc);
  put32(central, 20, static_cast<uint32_t>(deflated.size()));
  put32(central, 24, static_cast<uint32_t>(npy.size()));
  put16(central, 28, static_cast<uint16_t>(name.size()));
  central += name;
  std::string end(22, '\0');
  put32(end, 0, 0x06054b50);
  put16(end, 8, 1);
  put16(end, 10, 1);
  put32(end, 12, static_cast<uint32_t>(central.size()));
  put32(end, 16, static_cast<uint32_t>(archive.size()));
  write_file_atomically(path, archive + central + end);
  auto arrays = read_npz(path);
  ASSERT_EQ(arrays.count("x"), 1u);
  EXPECT_TRUE(arrays.at("x").bitwise_equal(t));
  (void)stored;
}

TEST(Idx, ReadsFashionMnist) {
  if (!std::filesystem::exists(kFashionMnistDir)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  FashionMnist data = load_fashion_mnist();
  EXPECT_EQ(data.train_images.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(data.test_labels.sizes(), (std::vector<int64_t>{10000}));
  std::vector<int64_t> counts(10, 0);
  for (int64_t i = 0; i < 10000; ++i) {
    int64_t label = data.test_labels.data<int64_t>()[i];
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[static_cast<size_t>(label)];
  }
  for (int64_t c : counts) EXPECT_EQ(c, 1000);  // the test set is balanced
  float max = 0;
  for (int64_t i = 0; i < 784 * 10; ++i) max = std::max(max, data.train_images.data<float>()[i]);
  EXPECT_LE(max, 1.0f);
  EXPECT_GT(max, 0.5f);
}

TEST(Idx, TruncatedAndForeignFilesAreErrors) {
  testing::ScratchDir dir;
  // A big-endian i32 IDX file [2, 3], gzip'ed.
  std::string raw = {0, 0, 0x0C, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (int i = 0; i < 6; ++i) raw += std::string{0, 0, 0, static_cast<char>(i + 1)};
  auto write_gz = [&](const std::filesystem::path& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  };
  write_gz(dir.path() / "ok.gz", raw);
  Tensor t = read_idx(dir.path() / "ok.gz");
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.data<int32_t>()[5], 6);
  for (size_t cut : {size_t{0}, size_t{3}, size_t{9}, raw.size() - 1}) {
    write_gz(dir.path() / "cut.gz", raw.substr(0, cut));
    try {
      read_idx(dir.path() / "cut.gz");
      FAIL() << "cut at " << cut << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.gz"), std::string::npos) << e.what();
    }
  }
  write_gz(dir.path() / "extra.gz", raw + "x");
  EXPECT_THROW(read_idx(dir.path() / "extra.gz"), Error);
  write_gz(dir.path() / "magic.gz", "\x01\x02\x03\x04");
  EXPECT_THROW(read_idx(dir.path() / "magic.gz"), Error);
  EXPECT_THROW(read_idx(dir.path() / "missing.gz"), Error);
}

}  // namespace
}  // namespace weir
