// endure-fsx's FUSE operations: every call passes through to a backing folder.
//
// Each node mounts its own endure-fsx on /fsx over the cluster's shared backing folder, so
// that stopping that one process hangs /fsx on that one node, the way a hung FSx or NFS
// server does, while the other nodes go on.
#pragma once

#define FUSE_USE_VERSION 35
#include <fuse.h>

#include <string>

#include "common/result.h"

namespace endure::fsx {

// What the operations share: the backing root, opened once before the mount.
struct Backing {
  int root_fd = -1;  // O_PATH|O_DIRECTORY; every path is resolved beneath it
  // Set when the daemon runs as root: entries it creates are given to the caller
  // (fuse_get_context()'s uid and gid), as a file server would do.
  bool give_to_caller = false;
};

// Opens dir as a backing root. Fails with code "InvalidArgument" when it is not a folder.
Result<Backing> open_backing(const std::string& dir);

// The operations, for fuse_new(). REQUIRES: fuse_new()'s private_data is a Backing that
// outlives the session. Every operation returns 0 (or a byte count) or -errno, and never
// resolves a path outside the root: no "..", no symlink followed out of it.
//
// init() sets the kernel-facing policy: no attribute cache (each stat reaches the backing
// folder, so another node's writes show at once and a stopped daemon hangs every call),
// page cache dropped at each open (close-to-open, like NFS), writes up to 1 MiB. An open
// file whose name is unlinked still reads, writes and fsyncs; only fstat(2) of it fails
// (ESTALE), as libfuse's high-level API has it without .fuse_hidden files.
const fuse_operations& passthrough_operations();

}  // namespace endure::fsx
