// +, -, * and / that round every operation on its own, for device code that
// must compute what the CPU computes bit for bit. nvcc contracts a * b + c
// into one fused multiply-add by default, which rounds once where the CPU
// (x86-64 baseline, no FMA) rounds twice; the _rn intrinsics are never
// contracted.
//
// Two spellings: mul_rn, add_rn and sub_rn are overloaded on float and
// double, for templates over the compute type; dadd, fmul and the like name
// their precision, for code that computes in f64 (or f32) whatever type its
// arguments have.
#pragma once

#include <cuda_runtime.h>

namespace weir::cuda {

__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }

__device__ inline double dadd(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double dsub(double a, double b) { return __dsub_rn(a, b); }
__device__ inline double dmul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline double ddiv(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float fsub(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float fdiv(float a, float b) { return __fdiv_rn(a, b); }

}  // namespace weir::cuda
