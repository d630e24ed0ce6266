#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "core/error.h"
#include "core/regular_file.h"

namespace weir {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what, int error_number) {
  return Error(ErrorKind::kIo, what + ": " + std::strerror(error_number)).with_file(path.string());
}

std::string temp_prefix(const std::filesystem::path& path) { return "." + path.filename().string() + ".tmp."; }

// Removes the temporary files that earlier writes of `path` left behind
// when their process died part-way. A writer holds an exclusive flock on its
// temporary file until it is renamed or removed, so a temporary whose lock
// can be taken belongs to nobody alive, and one being written now is left
// alone.
void remove_abandoned_temporaries(const std::filesystem::path& directory, const std::filesystem::path& path) {
  const std::string prefix = temp_prefix(path);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::unlink(entry.path().c_str());
    }
    ::close(fd);
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::path directory = path.parent_path().empty() ? "." : path.parent_path();
  std::string temp = (directory / (temp_prefix(path) + "XXXXXX")).string();
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) throw io_error(path, "cannot create a temporary file in '" + directory.string() + "'", errno);
  // Held until the descriptor is closed: marks the temporary as in use, so
  // that a later write's clean-up (remove_abandoned_temporaries) leaves it.
  ::flock(fd, LOCK_EX);

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
  // Renamed while still open, so the lock covers the temporary until it has
  // its final name; the bytes are on disk, so closing after cannot lose them.
  if (::rename(temp.c_str(), path.c_str()) != 0) throw abandon("cannot rename the temporary file into place");
  ::close(fd);
  remove_abandoned_temporaries(directory, path);
  // Make the rename itself durable; failure here loses nothing already written.
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::string read_file(const std::filesystem::path& path, size_t max_bytes) {
  RegularFile file = open_regular_file(path);
  if (!file) throw Error(ErrorKind::kIo, file.why).with_file(path.string());
  if (file.size > max_bytes) {
    throw Error(ErrorKind::kIo, "file is " + std::to_string(file.size) + " bytes; the limit is " +
                                    std::to_string(max_bytes)).with_file(path.string());
  }
  std::string bytes(static_cast<size_t>(file.size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(file.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(path, "cannot read", errno);
    if (n == 0) throw Error(ErrorKind::kIo, "file changed size while being read").with_file(path.string());
    done += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace weir
