// communication_overlap (runtime/communication_overlap.h) on hand-made
// traces whose answer is known: communication alone, fully and partly
// beside computation, computation on another device, overlapping compute
// events counted once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/communication_overlap.h"

namespace weir {
namespace {

ProfileEvent event(const std::string& stream, int64_t start, int64_t duration, const std::string& device = "cpu:0") {
  return ProfileEvent{.name = stream + std::to_string(start), .op_type = stream == "compute" ? "MatMul" : "AllReduce",
                      .device = device, .stream = stream, .track = stream, .start_ns = start,
                      .duration_ns = duration, .bytes = 0};
}

TEST(CommunicationOverlap, CountsCommunicationBesideComputationOfTheSameDevice) {
  EXPECT_EQ(communication_overlap({}).fraction(), 0.0);

  const CommunicationOverlap alone = communication_overlap({event("compute", 0, 100), event("comm", 100, 50)});
  EXPECT_EQ(alone.communication_ns, 50);
  EXPECT_EQ(alone.overlapped_ns, 0);
  EXPECT_EQ(alone.events, 1);

  // [20, 80) of communication: [20, 50) beside one compute event, [40, 60)
  // beside another that overlaps it (counted once), [70, 80) beside a third.
  const CommunicationOverlap partly = communication_overlap({event("compute", 0, 50), event("compute", 40, 20),
                                                             event("comm", 20, 60), event("compute", 70, 100)});
  EXPECT_EQ(partly.communication_ns, 60);
  EXPECT_EQ(partly.overlapped_ns, 30 + 10 + 10);
  EXPECT_DOUBLE_EQ(partly.fraction(), 50.0 / 60.0);

  // A second communication stream counts too; another device's computation does not.
  const CommunicationOverlap streams = communication_overlap(
      {event("compute", 0, 100), event("comm:1", 10, 10), event("comm", 200, 10), event("compute", 200, 10, "cpu:1")});
  EXPECT_EQ(streams.events, 2);
  EXPECT_EQ(streams.communication_ns, 20);
  EXPECT_EQ(streams.overlapped_ns, 10);
}

}  // namespace
}  // namespace weir
