// One TCP connection attempt bounded by a deadline: resolves the host, tries
// each address with a non-blocking connect, and gives up at the deadline
// instead of after the kernel's minutes for an unroutable address.
//
//   std::string why;
//   int fd = weir::tcp_connect("10.0.0.1", 29500, deadline, why);   // -1: `why` says what failed
#pragma once

#include <chrono>
#include <string>

namespace weir {

// A connected, blocking, close-on-exec socket with TCP_NODELAY, or -1 with
// `error` set ("Connection refused", "cannot resolve the host: ...").
int tcp_connect(const std::string& host, int port, std::chrono::steady_clock::time_point deadline, std::string& error);

}  // namespace weir
