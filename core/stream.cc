#include "core/stream.h"

#include <charconv>

#include "core/error.h"

namespace weir {

const char* stream_kind_name(StreamKind kind) {
  switch (kind) {
    case StreamKind::kCompute: return "compute";
    case StreamKind::kCommunication: return "comm";
    case StreamKind::kCopy: return "copy";
  }
  return "?";
}

std::string StreamId::to_string() const {
  std::string name = stream_kind_name(kind);
  return index == 0 ? name : name + ":" + std::to_string(index);
}

StreamId StreamId::parse(std::string_view text) {
  auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument, "stream '" + std::string(text) +
                                                  "': expected compute, comm or copy, optionally with ':N' (N >= 0)");
  };
  std::string_view name = text;
  int index = 0;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    std::string_view number = text.substr(colon + 1);
    auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), index);
    if (number.empty() || error != std::errc() || end != number.data() + number.size() || index < 0) throw bad();
  }
  for (StreamKind kind : {StreamKind::kCompute, StreamKind::kCommunication, StreamKind::kCopy}) {
    if (name == stream_kind_name(kind)) return {kind, index};
  }
  throw bad();
}

namespace {

class CompletedEvent final : public Event {
 public:
  explicit CompletedEvent(std::exception_ptr error) : error_(std::move(error)) {}
  bool query() const override { return true; }
  void synchronize(std::chrono::milliseconds, const std::string&) const override {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
};

}  // namespace

std::shared_ptr<Event> completed_event(std::exception_ptr error) {
  if (!error) {
    // Every host step returns this. An aliasing pointer with no owner has no
    // control block, so copying and dropping it costs no atomic operations
    // shared by all executor threads.
    static CompletedEvent done(nullptr);
    return std::shared_ptr<Event>(std::shared_ptr<Event>(), &done);
  }
  return std::make_shared<CompletedEvent>(std::move(error));
}

}  // namespace weir
