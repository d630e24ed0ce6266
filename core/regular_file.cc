#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace weir {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

RegularFile::RegularFile(RegularFile&& other) noexcept
    : size(other.size), why(std::move(other.why)), fd_(std::exchange(other.fd_, -1)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size = other.size;
    why = std::move(other.why);
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::release() { return std::exchange(fd_, -1); }

RegularFile open_regular_file(const std::filesystem::path& path) {
  RegularFile file;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    file.why = errno == ENOENT ? std::string("no such file") : std::string("cannot open: ") + std::strerror(errno);
    return file;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    file.why = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return file;
  }
  if (!S_ISREG(info.st_mode)) {
    file.why = std::string("not a regular file (") + file_kind(info.st_mode) + ")";
    ::close(fd);
    return file;
  }
  // Regular files ignore O_NONBLOCK today; clear it so reads keep their
  // plain blocking meaning whatever the file system.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  file.fd_ = fd;
  file.size = static_cast<uint64_t>(info.st_size);
  return file;
}

}  // namespace weir
