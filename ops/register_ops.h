// The one place every op family's schemas and kernels are registered.
//
//   const weir::OpRegistry& registry = weir::default_op_registry();
//   const weir::OpSchema* add = registry.find("Add");
//
//   weir::OpRegistry custom;            // or build a registry of your own
//   weir::register_all_ops(custom);
//   custom.add(my_schema);
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// Calls each family's register_*_schemas(); a new family adds one line here.
void register_all_ops(OpRegistry& registry);

// A registry with every built-in op, built on first use and immutable after.
const OpRegistry& default_op_registry();

// Every kernel of this build: the CPU kernels, and in a build with the CUDA
// backend the CUDA kernels too (ops/cuda/register_cuda_kernels.h).
void register_all_kernels(KernelRegistry& registry);
// The CPU kernels only: calls each family's register_*_cpu_kernels(); a new
// kernel family adds one line here.
void register_cpu_kernels(KernelRegistry& registry);

// Every built-in kernel, built on first use and immutable after.
const KernelRegistry& default_kernel_registry();

}  // namespace weir
