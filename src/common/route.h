// Which of this machine's addresses another machine sees it by: the source address the
// kernel picks for a connection to that machine (what SSH_CONNECTION shows it there).
#pragma once

#include <string>

#include "common/result.h"

namespace endure::net {

// address: an IP address or a DNS name. No packet is sent: a UDP socket is connected and
// its local address read.
Result<std::string> source_address_toward(const std::string& address);

}  // namespace endure::net
