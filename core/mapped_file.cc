#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/regular_file.h"

namespace weir {

MappedFile::~MappedFile() {
  if (data != nullptr) ::munmap(data, size);
}

std::shared_ptr<MappedFile> map_file(const std::filesystem::path& path, size_t max_bytes, MapPages pages) {
  RegularFile opened = open_regular_file(path);
  if (!opened) throw Error(ErrorKind::kIo, opened.why).with_file(path.string());
  auto file = std::make_shared<MappedFile>();
  file->size = static_cast<size_t>(opened.size);
  if (file->size > max_bytes) {
    throw Error(ErrorKind::kIo, "the file is " + std::to_string(file->size) + " bytes, over the limit of " +
                                    std::to_string(max_bytes))
        .with_file(path.string());
  }
  if (file->size > 0) {
    // MAP_POPULATE: the pages are read in one go rather than faulted in one
    // by one as the loader walks the file.
    const int populate = pages == MapPages::kPopulate ? MAP_POPULATE : 0;
    void* data = ::mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE | populate, opened.fd(), 0);
    if (data == MAP_FAILED) {
      int error = errno;
      throw Error(ErrorKind::kIo, std::string("cannot map: ") + std::strerror(error)).with_file(path.string());
    }
    file->data = data;
    if (pages == MapPages::kPopulate) ::madvise(data, file->size, MADV_SEQUENTIAL);  // loaders read front to back
  }
  return file;
}

}  // namespace weir
