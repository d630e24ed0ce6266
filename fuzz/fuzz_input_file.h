// The fuzz input as a file: Weir's loaders read paths (they map files and
// resolve external data beside them), so each input is written to one
// scratch file per process and loaded from there.
//
//   static weir::fuzz::FuzzInputFile file("model.onnx");
//   weir::import_onnx_model(file.write(data, size).string());
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "core/allocation_limits.h"
#include "core/logging.h"

namespace weir::fuzz {

class FuzzInputFile {
 public:
  explicit FuzzInputFile(const std::string& name) {
    const char* root = std::getenv("TMPDIR");
    directory_ = std::filesystem::path(root != nullptr ? root : "/tmp") /
                 ("weir-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
    path_ = directory_ / name;
  }
  ~FuzzInputFile() {
    std::error_code ec;
    std::filesystem::remove_all(directory_, ec);
  }

  const std::filesystem::path& write(const uint8_t* data, size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path_;
  }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
  std::filesystem::path path_;
};

// What every target's LLVMFuzzerInitialize does.
//
// Caps well below libFuzzer's -malloc_limit_mb (fuzz/run.sh passes 512): a
// loader that allocates before checking what it declares against these caps
// trips libFuzzer's malloc limit and is a finding.
//
// Logs off: protobuf's parser reports every string field that is not UTF-8
// and Weir warns about unknown opsets, a line per input (tens of MB per
// 30-minute run); findings are crashes and sanitizer reports, not logs.
inline void prepare_fuzz_process() {
  set_allocation_limits({uint64_t{64} << 20, uint64_t{256} << 20});
  google::protobuf::SetLogHandler(nullptr);
  set_log_level(spdlog::level::err);
}

}  // namespace weir::fuzz
