// make_nccl_world in a build without CUDA (no nvcc at configure time): the
// declaration is the same in every build, so callers need no #if.
#include "core/error.h"
#include "distributed/nccl/nccl_world.h"

namespace weir {

std::shared_ptr<World> make_nccl_world(const LaunchEnvironment& launch, const NcclWorldOptions&) {
  throw Error(ErrorKind::kUnsupported, "rank " + std::to_string(launch.rank) +
                                           ": an NCCL world needs a build with CUDA (nvcc was not found when Weir "
                                           "was configured; see docs/developing.md, CUDA)")
      .with_rank(launch.rank);
}

}  // namespace weir
