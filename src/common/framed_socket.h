// Bulk transfers over a TCP socket: a small JSON header in a length-prefixed frame, then
// raw bytes moved with as few system calls as the kernel allows (recv straight into the
// destination, sendfile from a file). What the memory stores' data path speaks
// (memstore/data_server.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::net {

// Every byte, or an error (the peer gone, the socket's timeout passed).
Status send_all(int fd, const void* data, size_t size);
Status recv_all(int fd, void* data, size_t size);
// `size` bytes of an open file from `offset`, with sendfile(): no copy through user space.
Status send_file(int fd, int file_fd, uint64_t offset, uint64_t size);

// A frame: a 4-byte little-endian length, then that many bytes of JSON. A frame longer
// than max_bytes, or not a JSON object, is an error.
Status send_frame(int fd, const json& header);
Result<json> recv_frame(int fd, size_t max_bytes = 64 * 1024);

// A TCP connection to address:port with send and receive timeouts (0: none) and Nagle off.
Result<int> connect_tcp(const std::string& address, int port, double timeout_seconds);
// Timeouts on an open socket.
void set_timeouts(int fd, double timeout_seconds);

}  // namespace endure::net
