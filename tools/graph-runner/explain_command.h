// `graph-runner explain (MODEL | --model NAME) [--world N] [--bandwidth GBPS]
// [--latency US] [--strategy FILE] [--batch B] [--gflops G]`: what one step
// costs each rank of a data-parallel world of N, and how long it should
// take, from one machine. Per step and rank: FLOPs, memory (parameters,
// optimizer state, and the memory planner's arena of activations and
// gradients), every collective with its group, bytes in and bytes sent,
// and the step time estimated by distributed/step_time_estimate.h (compute
// spread over the nodes by FLOPs, collectives by their α-β cost, overlap
// as the schedule allows), with the scaling efficiency against one rank.
//
// With --model the step is built here for N ranks (and for 1, whose step
// is run --measure-steps times to measure the compute time, unless --gflops
// gives a throughput instead). A MODEL file is a saved step (train
// --save-training-graph), taken as it is; its compute time comes from
// --gflops.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_explain_command(CLI::App& app);

}  // namespace weir::tools
