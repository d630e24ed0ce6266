// DType metadata, Shape with symbolic dims and overflow checks, Device parsing.
#include <gtest/gtest.h>

#include <limits>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/tensor_type.h"

namespace weir {
namespace {

TEST(DType, SizesAndNamesRoundTripThroughParse) {
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
    EXPECT_TRUE(is_valid_dtype(static_cast<int32_t>(dtype)));
  }
  EXPECT_EQ(dtype_size(DType::kFloat64), 8u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(parse_dtype("float16"), DType::kFloat16);
  EXPECT_TRUE(is_floating(DType::kBFloat16));
  EXPECT_TRUE(is_integer(DType::kUInt8));
  EXPECT_FALSE(is_signed(DType::kUInt8));
  EXPECT_FALSE(is_integer(DType::kBool));
  EXPECT_TRUE(is_valid_dtype(4));    // ONNX uint16
  EXPECT_EQ(dtype_size(DType::kUInt16), 2u);
  EXPECT_EQ(dtype_size(DType::kUInt32), 4u);
  EXPECT_EQ(dtype_size(DType::kUInt64), 8u);
  EXPECT_EQ(parse_dtype("uint32"), DType::kUInt32);
  EXPECT_EQ(parse_dtype(dtype_name(DType::kUInt64)), DType::kUInt64);
  EXPECT_TRUE(is_integer(DType::kUInt64));
  EXPECT_FALSE(is_signed(DType::kUInt16));
  EXPECT_FALSE(is_valid_dtype(8));   // ONNX string: not a Weir dtype
  EXPECT_FALSE(is_valid_dtype(0));
}

TEST(DType, ParseRejectsUnknownNamesWithTheChoices) {
  try {
    parse_dtype("f31");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'f31'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos);
  }
}

TEST(Shape, StaticSymbolicAndUnknownRank) {
  Shape image{Dim::symbol("batch"), 3, 224, 224};
  EXPECT_EQ(image.rank(), 4);
  EXPECT_FALSE(image.is_static());
  EXPECT_EQ(image.to_string(), "[batch,3,224,224]");
  EXPECT_THROW(image.num_elements(), Error);

  Shape matrix{2, 3};
  EXPECT_TRUE(matrix.is_static());
  EXPECT_EQ(matrix.num_elements(), 6);
  EXPECT_EQ(Shape().num_elements(), 1);  // scalar
  EXPECT_EQ((Shape{0, 5}).num_elements(), 0);

  Shape unknown = Shape::unknown_rank();
  EXPECT_FALSE(unknown.has_rank());
  EXPECT_THROW(unknown.rank(), Error);
  EXPECT_EQ(unknown.to_string(), "[?]");
  EXPECT_EQ((TensorType{DType::kInt64, matrix}).to_string(), "i64[2,3]");
}

TEST(Shape, RejectsNegativeDimsAndOverflowingCounts) {
  EXPECT_THROW(Dim(-1), Error);
  EXPECT_THROW(Dim::symbol(""), Error);
  Shape huge{int64_t{1} << 40, int64_t{1} << 40};
  try {
    huge.num_elements();
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_NE(std::string(e.what()).find("64 bits"), std::string::npos);
  }
  EXPECT_FALSE(checked_num_elements({std::numeric_limits<int64_t>::max(), 2}).has_value());
  EXPECT_FALSE(checked_num_elements({3, -1}).has_value());
  EXPECT_EQ(checked_num_elements({std::numeric_limits<int64_t>::max(), 1}).value(),
            std::numeric_limits<int64_t>::max());
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu(0));
  EXPECT_EQ(Device::parse("cpu:3"), Device::cpu(3));
  EXPECT_EQ(Device::parse("cuda:1"), Device::cuda(1));
  EXPECT_EQ(Device::cuda(2).to_string(), "cuda:2");
  for (const char* bad : {"gpu:0", "cpu:", "cpu:-1", "cuda:1x", "", ":0", "cpu:99999999999"}) {
    EXPECT_THROW(Device::parse(bad), Error) << bad;
  }
}

TEST(ErrorModel, WhatNamesFileRankAndNode) {
  Error error(ErrorKind::kInvalidGraph, "input 1 is undefined");
  error.with_node("conv1").with_file("net.weir").with_rank(2);
  EXPECT_STREQ(error.what(), "file 'net.weir': rank 2: node 'conv1': input 1 is undefined");
  error.with_node("outer");  // the innermost location wins
  EXPECT_EQ(error.node(), "conv1");
  EXPECT_EQ(error.message(), "input 1 is undefined");
}

}  // namespace
}  // namespace weir
