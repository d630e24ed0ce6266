// A check of a shared library's ELF structure before dlopen maps it.
//
// dlopen maps each loadable segment of the file; a segment that claims
// bytes past the end of a truncated file maps pages with nothing behind
// them, and the first touch kills the process with SIGBUS instead of
// returning an error. So the headers are read first, and every range they
// name must lie inside the file.
//
//   if (std::string why = elf_library_problem(path); !why.empty()) fail(why);
#pragma once

#include <filesystem>
#include <string>

namespace weir {

// "" when `path` is a regular file holding a shared object for this
// machine whose program headers, loadable segments and section headers
// all lie within the file; otherwise what is wrong, in words.
std::string elf_library_problem(const std::filesystem::path& path);

}  // namespace weir
