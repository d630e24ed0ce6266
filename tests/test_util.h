// Helpers shared by Weir's tests: scratch directories and seeded random data.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor.h"

namespace weir::testing {

// The message of the weir::Error `fn` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The same, expecting the error to be of `kind`.
inline std::string error_of(const std::function<void()>& fn, ErrorKind kind) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  return "(no error)";
}

// A fresh directory, removed with everything in it when the object dies.
// Lives under $WEIR_TEST_TMPDIR (set by CTest to the build tree) or /tmp.
class ScratchDir {
 public:
  ScratchDir() {
    const char* root = std::getenv("WEIR_TEST_TMPDIR");
    std::filesystem::path base = root != nullptr ? root : std::filesystem::temp_directory_path().string();
    std::filesystem::create_directories(base);
    std::string pattern = (base / "weir-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A FIFO at `path`, for checking that loaders refuse it instead of blocking
// in open(2). So that a loader that does block fails its test rather than
// hanging it, a watchdog opens the FIFO's write end after `limit`, which
// releases any reader stuck in open; blocked() then says it had to.
class FifoWithWatchdog {
 public:
  explicit FifoWithWatchdog(std::filesystem::path path, std::chrono::milliseconds limit = std::chrono::seconds(3))
      : path_(std::move(path)) {
    if (::mkfifo(path_.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    watchdog_ = std::thread([this, limit] {
      auto deadline = std::chrono::steady_clock::now() + limit;
      while (!done_ && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (done_) return;
      // Succeeds only while a reader is blocked in open(2) on the FIFO.
      int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        blocked_ = true;
        ::close(fd);
      }
    });
  }
  ~FifoWithWatchdog() {
    done_ = true;
    watchdog_.join();
  }
  FifoWithWatchdog(const FifoWithWatchdog&) = delete;
  FifoWithWatchdog& operator=(const FifoWithWatchdog&) = delete;

  const std::filesystem::path& path() const { return path_; }
  bool blocked() const { return blocked_; }

 private:
  std::filesystem::path path_;
  std::atomic<bool> done_{false};
  std::atomic<bool> blocked_{false};
  std::thread watchdog_;
};

// Uniform floats in [low, high) from a fixed seed, so failures reproduce.
inline std::vector<float> random_floats(size_t count, uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(engine);
  return values;
}

// An f64 tensor of uniform values in [-scale, scale) from a fixed seed.
inline Tensor random_f64_tensor(const std::vector<int64_t>& sizes, uint32_t seed, double scale = 1.0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<float> f = random_floats(static_cast<size_t>(n), seed, -1.0f, 1.0f);
  Tensor t(DType::kFloat64, sizes);
  for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = scale * f[static_cast<size_t>(i)];
  return t;
}

// ||a - b|| / ||a|| over two f32 tensors of the same size.
inline double relative_l2(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < std::min(a.num_elements(), b.num_elements()); ++i) {
    double x = a.data<float>()[i], y = b.data<float>()[i];
    diff += (x - y) * (x - y);
    norm += x * x;
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace weir::testing
