#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "core/error.h"

namespace weir {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what, int error_number) {
  return Error(ErrorKind::kIo, what + ": " + std::strerror(error_number)).with_file(path.string());
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::path directory = path.parent_path().empty() ? "." : path.parent_path();
  std::string temp = (directory / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0) throw io_error(path, "cannot create a temporary file in '" + directory.string() + "'", errno);

  auto abandon = [&](const std::string& what) {
    int saved = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return io_error(path, what, saved);
  };
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw abandon("cannot write");
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; a saved model should have the usual 0644 less umask.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0) throw abandon("cannot flush to disk");
  if (::close(fd) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    throw io_error(path, "cannot close", saved);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    throw io_error(path, "cannot rename the temporary file into place", saved);
  }
  // Make the rename itself durable; failure here loses nothing already written.
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::string read_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorKind::kIo, "no such file").with_file(path.string());
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw Error(ErrorKind::kIo, "not a regular file").with_file(path.string());
  }
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot read its size: " + ec.message()).with_file(path.string());
  if (size > max_bytes) {
    throw Error(ErrorKind::kIo, "file is " + std::to_string(size) + " bytes; the limit is " +
                                    std::to_string(max_bytes)).with_file(path.string());
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw io_error(path, "cannot open", errno);
  std::string bytes(static_cast<size_t>(size), '\0');
  stream.read(bytes.data(), static_cast<std::streamsize>(size));
  if (stream.gcount() != static_cast<std::streamsize>(size)) {
    throw Error(ErrorKind::kIo, "file changed size while being read").with_file(path.string());
  }
  return bytes;
}

}  // namespace weir
