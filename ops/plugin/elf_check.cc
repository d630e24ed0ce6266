#include "ops/plugin/elf_check.h"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/regular_file.h"

namespace weir {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
#error "elf_check.cc: add this architecture's ELF machine code"
#endif

bool read_at(int fd, void* out, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd, static_cast<char*>(out) + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Whether [offset, offset + count * size) lies within a file of `file_size` bytes.
bool fits(uint64_t offset, uint64_t count, uint64_t size, uint64_t file_size) {
  uint64_t bytes = 0;
  return !__builtin_mul_overflow(count, size, &bytes) && offset <= file_size && bytes <= file_size - offset;
}

}  // namespace

std::string elf_library_problem(const std::filesystem::path& path) {
  RegularFile file = open_regular_file(path);
  if (!file) return file.why;
  Elf64_Ehdr header{};
  if (file.size < sizeof(header) || !read_at(file.fd(), &header, sizeof(header), 0)) {
    return "not a shared library: " + std::to_string(file.size) + " bytes is too short for an ELF header";
  }
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return "not a shared library: no ELF magic";
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return "not a 64-bit little-endian ELF file";
  }
  if (header.e_machine != kHostMachine) {
    return "built for ELF machine " + std::to_string(header.e_machine) + ", not this one (" +
           std::to_string(kHostMachine) + ")";
  }
  if (header.e_type != ET_DYN) return "not a shared library (ELF type " + std::to_string(header.e_type) + ")";
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
      !fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), file.size)) {
    return "truncated or corrupt: the program headers do not lie within the file's " + std::to_string(file.size) +
           " bytes";
  }
  if (header.e_shnum > 0 &&
      (header.e_shentsize != sizeof(Elf64_Shdr) || !fits(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), file.size))) {
    return "truncated or corrupt: the section headers do not lie within the file's " + std::to_string(file.size) +
           " bytes";
  }
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!read_at(file.fd(), segments.data(), segments.size() * sizeof(Elf64_Phdr), header.e_phoff)) {
    return "cannot read the program headers";
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& segment = segments[i];
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC) continue;
    if (!fits(segment.p_offset, 1, segment.p_filesz, file.size)) {
      return "truncated or corrupt: segment " + std::to_string(i) + " needs bytes up to " +
             std::to_string(segment.p_offset + segment.p_filesz) + " of a file of " + std::to_string(file.size);
    }
  }
  return "";
}

}  // namespace weir
