// libFuzzer target: the parameter server's saved tables. The first byte
// picks the reader: even, a sparse table's shard ((byte / 2) % 8, so rows of
// another shard are refused too); odd, a dense table's slice. A weir::Error
// is the expected answer to bad input; anything else is a finding. A
// rejected file must leave the table as it was (checked on each rejection).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "distributed/ps/dense_table.h"
#include "distributed/ps/sparse_table.h"
#include "fuzz/fuzz_input_file.h"
#include "fuzz/fuzz_ps_tables.h"

namespace {

weir::ps::SparseTable& sparse() {
  static weir::ps::SparseTable table(weir::fuzz::fuzz_sparse_table());
  return table;
}

weir::ps::DenseTable& dense() {
  static weir::ps::DenseTable table(weir::fuzz::fuzz_dense_table(), 5);
  return table;
}

std::string fingerprint() {
  std::string all = dense().save();
  for (int s = 0; s < weir::fuzz::fuzz_sparse_table().shard_num; ++s) all += sparse().save_shard(s) + "|";
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::fuzz::prepare_fuzz_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string before = fingerprint();
  try {
    if (data[0] % 2 == 0) {
      sparse().load_shard((data[0] / 2) % weir::fuzz::fuzz_sparse_table().shard_num, bytes, "fuzz/shard");
    } else {
      dense().load(bytes, "fuzz/dense");
    }
  } catch (const weir::Error&) {
    if (fingerprint() != before) std::abort();  // a rejected file changed the table
  }
  return 0;
}
