// The CUDA kernels of DgcEncode and DgcMomentum (ops/optimizer/dgc.h), f32,
// with the CPU kernels' semantics, arithmetic and selection
// (dgc_device.h): the pairs, u, v and the parameter equal the CPU's bit for
// bit for NaN-free values (with clip_norm, to the last bits of the
// clipping factor). The step decides the phase and k, so both kernels read
// it on the host: a copy back from the GPU, waited for, per node and step
// (the step is a fed input). lr is read on the device. DgcMomentum's dense
// phase is the CUDA Momentum update itself; an out-of-range gathered index
// fails the node once the device work is done, with nothing applied.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_dgc_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
