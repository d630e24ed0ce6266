// Opening a file that a loader will read: only regular files, and never a
// call that can block. open(2) of a FIFO waits for a writer and a device
// file may do anything, so a model, data or plan path that names one must
// be refused before it is opened for real.
//
//   weir::RegularFile file = weir::open_regular_file("model.weirplan");
//   if (!file) throw weir::Error(weir::ErrorKind::kIo, file.why).with_file(path);
//   ::pread(file.fd(), buffer, file.size, 0);
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace weir {

// An open read-only descriptor of a regular file, closed on destruction.
class RegularFile {
 public:
  RegularFile() = default;
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  explicit operator bool() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Hands the descriptor over to the caller, who closes it.
  int release();

  uint64_t size = 0;  // at the time of opening
  std::string why;    // when opening failed: "not a regular file (a FIFO)", strerror's text, ...

 private:
  friend RegularFile open_regular_file(const std::filesystem::path& path);
  int fd_ = -1;
};

// Opens `path` read-only with O_NONBLOCK (so a FIFO cannot block the open),
// then keeps it only if fstat says it is a regular file; the descriptor is
// switched back to blocking reads. Returns an empty RegularFile with `why`
// set on failure; it does not throw.
RegularFile open_regular_file(const std::filesystem::path& path);

}  // namespace weir
