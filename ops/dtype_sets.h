// The dtype lists that schemas and kernel registrations share.
//
//   schema.type_constraint("T", kNumericDTypes);
//   registry.add("Pad", DeviceType::kCpu, kAnyDTypes, factory);
#pragma once

#include <vector>

#include "core/dtype.h"

namespace weir {

inline const std::vector<DType> kAnyDTypes(std::begin(kAllDTypes), std::end(kAllDTypes));
// Index and position operands (ONNX's tensor(int32), tensor(int64)).
inline const std::vector<DType> kIndexDTypes = {DType::kInt32, DType::kInt64};
inline const std::vector<DType> kFloatDTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
// Every type with arithmetic: the floats and the integers, not bool.
inline const std::vector<DType> kNumericDTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                                  DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                                  DType::kInt64,   DType::kUInt16,  DType::kUInt32,  DType::kUInt64};

}  // namespace weir
